"""The public API: ``memoryd.__all__``, lazy heavy imports, memoryd.open, and refusing
paths that are not memoryd stores."""

from __future__ import annotations

import hashlib
import importlib
import json
import sqlite3
import subprocess
import sys

import pytest

import memoryd
from memoryd.errors import (
    ContentTooLarge,
    EmptyContent,
    ImportFormatError,
    InvalidFilter,
    InvalidInput,
    MemorydError,
    MemoryNotFound,
    ModelMismatch,
    NotAMemorydStore,
    SchemaTooNew,
    StoreError,
)
from memoryd.store.sqlite.schema import LATEST_VERSION

HEAVY = ("torch", "sentence_transformers", "transformers")


def run_python(code: str, env=None) -> dict:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_all_is_sorted_and_importable() -> None:
    names = memoryd.__all__
    assert names == sorted(names)
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(memoryd, name) is not None, name
    fresh = importlib.import_module("memoryd")
    namespace: dict = {}
    exec("from memoryd import *", namespace)
    assert set(names) <= set(namespace)
    assert isinstance(memoryd.__version__, str)
    for expected in ("open", "Engine", "Memory", "SearchHit", "SearchFilters", "Settings",
                     "MemorydError", "InvalidInput", "EmptyContent", "ContentTooLarge",
                     "InvalidFilter", "ImportFormatError", "NotAMemorydStore", "ModelMismatch",
                     "MemoryNotFound", "StoreError"):
        assert expected in names, expected
    assert fresh.open is memoryd.open


def test_error_hierarchy() -> None:
    for cls in (EmptyContent, ContentTooLarge, InvalidFilter, ImportFormatError):
        assert issubclass(cls, InvalidInput) and issubclass(cls, ValueError)
    for cls in (NotAMemorydStore, SchemaTooNew, ModelMismatch):
        assert issubclass(cls, StoreError)
    assert issubclass(MemoryNotFound, LookupError)
    for cls in (InvalidInput, MemoryNotFound, StoreError):
        assert issubclass(cls, MemorydError)
    assert ImportFormatError("bad", 7).line_number == 7
    assert str(ImportFormatError("bad", 7)) == "line 7: bad"


def test_import_memoryd_does_not_load_torch() -> None:
    loaded = run_python(
        "import sys, json, memoryd\n"
        "import memoryd.engine, memoryd.engine.admin.transfer, memoryd.embed\n"
        f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    )
    assert loaded == {m: False for m in HEAVY}


def test_cli_help_does_not_load_torch() -> None:
    """`memoryd --help` through the console script's entry point, in a fresh process."""
    loaded = run_python(
        "import sys, json, io, contextlib\n"
        "sys.argv = ['memoryd', '--help']\n"
        "from memoryd.cli.app import main\n"
        "out = io.StringIO()\n"
        "code = None\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        code = exc.code\n"
        "report = {m: m in sys.modules for m in " + repr(HEAVY) + "}\n"
        "report['exit'] = code\n"
        "report['mentions_search'] = 'search' in out.getvalue()\n"
        "print(json.dumps(report))"
    )
    assert loaded.pop("exit") in (0, None)
    assert loaded.pop("mentions_search") is True
    assert loaded == {m: False for m in HEAVY}


def test_console_script_help(run_cli) -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    for command in ("add", "search", "list", "get", "delete", "import", "export", "backup",
                    "restore", "stats", "config", "reembed"):
        assert command in result.stdout, command


def test_open_as_context_manager(store_url, shared_embedder) -> None:
    with memoryd.open(store_url, embedder=shared_embedder) as mem:
        assert isinstance(mem, memoryd.Engine)
        memory = mem.add("context managers close their store", tags=["api"])
        hits = mem.search("closing stores", limit=1)
        assert isinstance(hits[0], memoryd.SearchHit)
        assert hits[0].memory.id == memory.id
        assert isinstance(hits[0].memory, memoryd.Memory)
        assert hits[0].memory.content == memory.content
        assert hits[0].memory.metadata == {}
        assert isinstance(hits[0].score, float)
    assert mem.store.db.open_connections == 0


def test_open_defaults_to_memoryd_home(monkeypatch, tmp_path, shared_embedder) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    with memoryd.open(embedder=shared_embedder) as mem:
        mem.add("stored under MEMORYD_HOME")
    assert (tmp_path / "home" / "memoryd.db").exists()
    # overrides are Settings fields
    with memoryd.open(embedder=shared_embedder, max_content_bytes=123, rrf_k=7) as mem:
        assert (mem.settings.max_content_bytes, mem.settings.rrf_k) == (123, 7)
        assert mem.store.count() == 1


def test_open_with_create_false_refuses_missing(tmp_path, shared_embedder) -> None:
    with pytest.raises(NotAMemorydStore):
        memoryd.open(f"sqlite:///{tmp_path}/absent.db", embedder=shared_embedder, create=False)
    assert not (tmp_path / "absent.db").exists()


@pytest.mark.parametrize("kind", ["text", "binary", "foreign_sqlite", "directory"])
def test_paths_that_are_not_memoryd_stores(tmp_path, shared_embedder, kind: str) -> None:
    path = tmp_path / "thing.db"
    if kind == "text":
        path.write_text("hello, I am a text file\n" * 20)
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 40)
    elif kind == "foreign_sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
        conn.commit()
        conn.close()
    else:
        path.mkdir()
    with pytest.raises(NotAMemorydStore) as info:
        memoryd.open(f"sqlite:///{path}", embedder=shared_embedder)
    assert str(path) in str(info.value)
    if kind == "foreign_sqlite":
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT name FROM customers").fetchall() == [("Ada",)]
        conn.close()


def test_refused_foreign_sqlite_file_is_left_untouched(tmp_path, shared_embedder) -> None:
    path = tmp_path / "customers.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(NotAMemorydStore):
        memoryd.open(f"sqlite:///{path}", embedder=shared_embedder)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["customers.db"]


def test_schema_too_new_is_refused(store_url, store_path, shared_embedder) -> None:
    memoryd.open(store_url, embedder=shared_embedder).close()
    conn = sqlite3.connect(store_path)
    conn.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)",
                 (LATEST_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNew, match="Upgrade memoryd"):
        memoryd.open(store_url, embedder=shared_embedder)


def test_every_type_the_engine_takes_or_returns_is_exported() -> None:
    import inspect
    import typing

    def classes(hint: object) -> set[type]:
        found = {hint} if isinstance(hint, type) else set()
        for arg in typing.get_args(hint):
            found |= classes(arg)
        return found

    # The Engine and its capabilities but the knowledge graphs (engine.kg's types live in
    # memoryd.models.knowledge).
    owners = [memoryd.Engine] + [
        typing.get_type_hints(getattr(memoryd.Engine, name).fget)["return"]
        for name in ("domains", "tasks", "waits", "codebase", "views", "admin")]
    missing = set()
    for owner in owners:
        for name, method in inspect.getmembers(owner, inspect.isfunction):
            if name.startswith("_"):
                continue
            for hint in typing.get_type_hints(method).values():
                for cls in classes(hint):
                    exported = cls.__name__ in memoryd.__all__
                    if cls.__module__.startswith("memoryd.") and not exported:
                        missing.add(f"{cls.__name__} ({owner.__name__}.{name})")
    assert not missing, sorted(missing)
