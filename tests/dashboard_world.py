"""A store for the dashboard's browser tests, and ``memoryd serve`` over it as a child process.

The store holds plain memories (a fact that was superseded, another agent's memory with a
marker no other text contains), domains with open proposals (the hand-written domain corpus,
clustered on two topics, then grown by two more), a project graph with a superseded node,
and keys: an admin key, a writer and a key bound to the agent ``bot-1``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

import memoryd
from api_fixtures import free_port
from conftest import MEMORYD_BIN
from memoryd.config import Settings
from memoryd.embed import Embedder
from test_domains_engine import ROWS, SINGLE, items

FOREIGN_MARKER = "cobalt release train zqa4417"
CHROMIUM = os.environ.get("MEMORYD_TEST_CHROMIUM")  # default: Debian's /usr/bin/chromium
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@dataclass
class World:
    """The prepared store, the keys, the project root and the running server."""

    home: Path
    project: Path
    keys: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
        env.update({"MEMORYD_HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / "config"),
                    "XDG_DATA_HOME": str(self.home / "data"), "MEMORYD_DOMAINS_AUTO": "false"})
        return env

    def client(self, key: str = "admin", agent: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[key]}"}
        if agent:
            headers["X-Agent-Id"] = agent
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    @property
    def log(self) -> Path:
        """The server's output (a file: a pipe nobody reads would stall the server once full)."""
        return self.home / "serve.log"

    def start(self) -> World:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen([str(MEMORYD_BIN), "serve", "--port", str(self.port)],
                                         env=self.env(), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memoryd serve exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("memoryd serve did not become ready")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


def build_world(base: Path, embedder: Embedder) -> World:
    """Write the store (in this process), then leave it to the server."""
    world = World(home=base / "home", project=base / "shop")
    world.project.mkdir(parents=True)
    settings = Settings(home=world.home, domains_auto=False)
    with memoryd.open(f"sqlite:///{world.home / 'memoryd.db'}", settings=settings,
                      embedder=embedder) as mem:
        world.keys["admin"] = mem.admin.create_key(
            "admin", scopes=["read", "write", "admin"]).secret
        world.keys["writer"] = mem.admin.create_key("writer").secret
        world.keys["bot"] = mem.admin.create_key("bot", agent_id="bot-1").secret
        _memories(mem, world)
        _domains(mem)
        _graph(mem, world)
    return world


def _memories(mem, world: World) -> None:  # type: ignore[no-untyped-def]
    world.ids["old_port"] = mem.add("The staging database listens on port 5432",
                                    tags=["db"]).id
    time.sleep(1.1)
    world.ids["new_port"] = mem.ingest("The staging database now listens on port 5433").memory_id
    world.ids["deploys"] = mem.add("Deploys go out on Tuesdays after the standup",
                                   tags=["ops"]).id
    world.ids["doomed"] = mem.add("The old VPN endpoint is vpn1.example.com", tags=["net"]).id
    world.ids["foreign"] = mem.labelled("agent-x").add(
        f"The staging deploy uses the {FOREIGN_MARKER} on Thursdays").id
    bot = mem.acting_as(memoryd.Actor("key:bot", agent_id="bot-1"), memoryd.Access(agent_id="bot-1"))
    world.ids["bot"] = bot.add("Bot one keeps its notes in the blue notebook").id


def _domains(mem) -> None:  # type: ignore[no-untyped-def]
    first = [r for r in SINGLE if r["topics"][0] in ("network", "cooking")]
    mem.add_many(items(first))
    assert mem.domains.discover(force=True).action == "discovered"
    mem.add_many(items([r for r in ROWS if r not in first]))
    proposals = mem.domains.recluster()
    assert any(p.kind == "new" for p in proposals), proposals


def _graph(mem, world: World) -> None:  # type: ignore[no-untyped-def]
    project = str(world.project)
    mem.kg.write(project, nodes=[
        {"id": "old-cache", "name": "Sessions cached in Redis", "type": "decision"},
        {"id": "wal-busy", "name": "SQLite busy timeout", "type": "gotcha",
         "body": "Set busy_timeout before WAL writes.", "touches": ["src/db.py"]},
        {"id": "lock-storm", "name": "Lock storms under eight writers", "type": "insight"},
        {"id": "pool-size", "name": "Connection pool sizing", "type": "convention"}],
        edges=[{"source": "wal-busy", "target": "lock-storm", "type": "caused_by"}])
    time.sleep(1.2)
    mem.kg.write(project, nodes=[
        {"id": "old-cache", "valid_until": mem.context.clock().isoformat()},
        {"id": "new-cache", "name": "Sessions cached in memcached", "type": "decision"}],
        edges=[{"source": "new-cache", "target": "old-cache", "type": "supersedes"}])


def chromium_or_skip() -> str:
    """The Chromium to drive; skips (saying why) when it or Playwright is missing."""
    import pytest

    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed: pip install -e '.[test]' "
                    "(scripts/test installs it)")
    if CHROMIUM is not None:
        found = CHROMIUM if Path(CHROMIUM).is_file() else None
    else:
        found = "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    if found is None:
        pytest.skip(f"no Chromium at {CHROMIUM or '/usr/bin/chromium'}: apt-get install chromium "
                    "(scripts/test installs it) or set MEMORYD_TEST_CHROMIUM to a Chromium binary")
    return found
