"""The dashboard's server side on a real server: the page and its files (public, only what
ships, a strict Content-Security-Policy, no inline code, vendored files as recorded), and
the live change feed over a real WebSocket (the key's bindings apply, a bad or revoked key is
refused, a reconnect with a cursor misses nothing)."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from importlib import resources
from typing import Iterator

import httpx
import pytest
from api_fixtures import LiveServer, module_server
from ws_client import Closed, WsClient

from memoryd.dashboard.assets import content_security_policy

STATIC = resources.files("memoryd.dashboard") / "static"
LIVE = "/api/v1/changes/live"


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


def _files(root=STATIC, prefix=""):  # type: ignore[no-untyped-def]
    for item in root.iterdir():
        if item.is_dir():
            yield from _files(item, f"{prefix}{item.name}/")
        else:
            yield f"{prefix}{item.name}", item


# --- the page and its files -------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/dashboard", "/dashboard/", "/dashboard/memories",
                                  "/dashboard/memory/some-id", "/dashboard/graph?src=user"])
def test_every_view_address_serves_the_page_without_a_key(live_server: LiveServer,
                                                          path: str) -> None:
    response = httpx.get(live_server.url + path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/dashboard/static/js/app.js">' in response.text
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"


def test_every_shipped_file_is_served_with_its_type_and_policy(live_server: LiveServer) -> None:
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
             ".json": "application/json"}
    with httpx.Client(base_url=live_server.url) as http:
        for name, item in _files():
            if name == "index.html":
                continue
            response = http.get(f"/dashboard/static/{name}")
            assert response.status_code == 200, name
            assert response.content == item.read_bytes(), name
            suffix = "." + name.rpartition(".")[2]
            if suffix in types:
                assert response.headers["content-type"].startswith(types[suffix]), name
            assert response.headers["content-security-policy"] == content_security_policy()
            again = http.get(f"/dashboard/static/{name}",
                             headers={"If-None-Match": response.headers["etag"]})
            assert again.status_code == 304


@pytest.mark.parametrize("path", [
    "/dashboard/static/%2e%2e/assets.py", "/dashboard/static/..%2fpages.py",
    "/dashboard/static/nothing.js", "/dashboard/static/index.html", "/dashboard/static/",
    "/dashboard/static/js", "/dashboard/static/vendor/force-graph/%2e%2e/%2e%2e/%2e%2e/live.py",
    "/dashboard/static/%2fetc%2fpasswd",
])
def test_only_files_that_ship_are_served(live_server: LiveServer, path: str) -> None:
    response = httpx.get(live_server.url + path)
    assert response.status_code == 404
    assert "import" not in response.text and "root:" not in response.text


def test_a_foreign_host_or_origin_is_refused(live_server: LiveServer) -> None:
    assert httpx.get(f"{live_server.url}/dashboard",
                     headers={"Host": "evil.example"}).status_code == 421
    assert httpx.get(f"{live_server.url}/dashboard/static/app.css",
                     headers={"Origin": "http://evil.example"}).status_code == 403


def test_every_module_and_asset_the_page_names_exists() -> None:
    names = {name for name, _ in _files()}
    html = (STATIC / "index.html").read_text()
    for ref in re.findall(r'(?:src|href)="/dashboard/static/([^"]+)"', html):
        assert ref in names, ref
    for name, item in _files():
        if not name.endswith(".js") or name.startswith("vendor/"):
            continue
        for ref in re.findall(r'from "(\.[^"]+)"|import\("(\.[^"]+)"\)', item.read_text()):
            target = ref[0] or ref[1]
            resolved = "/".join(_resolve(name.rsplit("/", 1)[0] if "/" in name else "", target))
            assert resolved in names, f"{name} imports {target}"
        for ref in re.findall(r'"/dashboard/static/([^"]+)"', item.read_text()):
            assert ref in names, f"{name} loads {ref}"


def _resolve(base: str, target: str) -> list[str]:
    parts = [p for p in base.split("/") if p]
    for piece in target.split("/"):
        if piece == "..":
            parts.pop()
        elif piece not in (".", ""):
            parts.append(piece)
    return parts


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        names = {k for k, _ in attrs}
        if "style" in names or any(k.startswith("on") for k in names):
            self.problems.append(f"<{tag}> has an inline style or handler")
        if tag == "style":
            self.problems.append("<style> element")
        if tag == "script":
            if "src" not in names:
                self.problems.append("inline <script>")
            self.in_script = True

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        self.in_script = False if tag == "script" else self.in_script

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        if self.in_script and data.strip():
            self.problems.append("script with a body")


def test_the_page_and_its_scripts_hold_no_inline_code_or_eval() -> None:
    markup = _Markup()
    markup.feed((STATIC / "index.html").read_text())
    assert not markup.problems
    banned = re.compile(r"\binnerHTML\b|\bouterHTML\b|\beval\(|new Function\(|"
                        r"setAttribute\(\"style\"|insertAdjacentHTML|document\.write")
    for name, item in _files():
        if name.endswith(".js") and not name.startswith("vendor/"):
            assert not banned.search(item.read_text()), name


def test_vendored_files_match_their_manifest_and_carry_licences() -> None:
    manifest = json.loads((STATIC / "vendor" / "vendor.json").read_text())
    assert {p["name"] for p in manifest["packages"]} == {"force-graph", "diff"}
    hashes = []
    for package in manifest["packages"]:
        folder = STATIC / "vendor" / package["name"]
        assert "LICENSE" in package["files"]
        for name, digest in package["files"].items():
            assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
        assert package["tarball"].startswith("https://registry.npmjs.org/")
        assert re.fullmatch(r"\d+\.\d+\.\d+", package["version"])
        hashes += package["style_hashes"]
    policy = content_security_policy()
    assert hashes and all(f"'{h}'" in policy for h in hashes)


# --- the live feed ---------------------------------------------------------------------------
def _connect(server: LiveServer, key: str | None, **first: object) -> WsClient:
    client = WsClient(server.port, LIVE)
    assert client.accepted
    client.send({"key": server.keys.get(key, key), **first} if key else first)
    return client


def _changes(client: WsClient, *, timeout: float = 15.0) -> list[dict]:
    frame = client.receive(timeout)
    assert not isinstance(frame, Closed), frame
    assert "changes" in frame, frame
    return frame["changes"]


def test_a_bad_key_is_refused_without_repeating_it(live_server: LiveServer) -> None:
    secret = "mk_" + "x" * 40
    with _connect(live_server, secret) as ws:
        error = ws.receive()
        closed = ws.receive()
    assert error["type"] == "error" and secret not in json.dumps(error)
    assert isinstance(closed, Closed) and closed.code == 4401
    with WsClient(live_server.port, LIVE) as ws:
        ws.send("not an object")
        assert ws.receive().code == 4400


def test_a_foreign_origin_cannot_open_the_feed(live_server: LiveServer) -> None:
    with WsClient(live_server.port, LIVE, origin="http://evil.example") as ws:
        frame = ws.receive()
    assert isinstance(frame, Closed)


def test_changes_arrive_as_they_happen_and_a_cursor_resumes(live_server: LiveServer) -> None:
    with _connect(live_server, "writer") as ws:
        hello = ws.receive()
        assert hello["type"] == "hello" and hello["caller"]["key_label"] == "writer"
        with live_server.client("writer") as http:
            made = http.post("/api/v1/memories", json={"content": "The build cache lives in /var/cache/ci"})
        assert made.status_code == 201
        changes = _changes(ws)
    assert [(c["operation"], c["memory_id"]) for c in changes] == [("create", made.json()["id"])]
    assert changes[0]["memory"]["snippet"].startswith("The build cache")
    cursor = changes[0]["seq"]
    with live_server.client("writer") as http:  # while no one listens
        http.patch(f"/api/v1/memories/{made.json()['id']}", json={"tags": ["ci"]})
    with _connect(live_server, "writer", since=cursor) as ws:
        assert ws.receive()["type"] == "hello"
        resumed = _changes(ws)
    assert [c["operation"] for c in resumed] == ["update"]


def test_a_key_bound_to_an_agent_hears_only_its_own_memories(live_server: LiveServer) -> None:
    with _connect(live_server, "bot") as ws:
        assert ws.receive()["caller"]["agent_id"] == "bot-1"
        with live_server.client("writer", agent="other-agent") as http:
            foreign = http.post("/api/v1/memories", json={"content": "Other agent's secret plan"})
        with live_server.client("bot") as http:
            own = http.post("/api/v1/memories", json={"content": "Bot one's own note"})
        seen = []
        while own.json()["id"] not in {c["memory_id"] for c in seen}:
            seen += _changes(ws)
    assert foreign.json()["id"] not in {c["memory_id"] for c in seen}
    assert all(c["memory"]["agent_id"] == "bot-1" for c in seen)


def test_a_key_revoked_while_listening_is_cut_off(live_server: LiveServer) -> None:
    with live_server.client("admin") as admin:
        made = admin.post("/api/v1/keys", json={"label": "short-lived"}).json()
    with _connect(live_server, made["secret"]) as ws:
        assert ws.receive()["type"] == "hello"
        with live_server.client("admin") as admin:
            assert admin.delete(f"/api/v1/keys/{made['key']['id']}").status_code == 200
            admin.post("/api/v1/memories", json={"content": "A change after the revocation"})
        frames = [ws.receive(), ws.receive()]
    assert frames[0]["type"] == "error" and "revoked" in frames[0]["message"]
    assert isinstance(frames[1], Closed) and frames[1].code == 4401


# --- packaging --------------------------------------------------------------------------------
def test_the_wheel_carries_every_dashboard_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The page works offline from an installed package: every file under static/ is in the
    wheel (package data), not only in a source checkout."""
    import shutil
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    tree = tmp_path / "tree"
    shutil.copytree(root / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, tree / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "-q", "-w", str(tmp_path / "dist"), str(tree)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = zipfile.ZipFile(next((tmp_path / "dist").glob("memoryd-*.whl")))
    names = set(wheel.namelist())
    missing = [n for n, _ in _files() if f"memoryd/dashboard/static/{n}" not in names]
    assert not missing, missing


# --- changes made elsewhere -------------------------------------------------------------------
def test_a_change_made_by_another_process_reaches_the_feed(live_server: LiveServer) -> None:
    """The feed follows the store's change sequence, not this server's own writes: the CLI,
    another process on the same SQLite file, is heard too."""
    import os
    import subprocess

    from conftest import MEMORYD_BIN

    store = f"sqlite:///{live_server.settings.home / 'memoryd.db'}"
    with _connect(live_server, "writer") as ws:
        assert ws.receive()["type"] == "hello"
        added = subprocess.run([str(MEMORYD_BIN), "--store", store, "add",
                                "Written by the command line while the page listens"],
                               capture_output=True, text=True, timeout=120,
                               env={**os.environ, "MEMORYD_HOME": str(live_server.settings.home)})
        assert added.returncode == 0, added.stderr
        changes = _changes(ws, timeout=30)
    assert changes[0]["memory"]["snippet"].startswith("Written by the command line")


def test_the_feed_works_on_postgresql_across_servers(shared_embedder, tmp_path,
                                                    pg_database) -> None:  # type: ignore[no-untyped-def]
    """Two servers on one PostgreSQL database: a write through one reaches the page that
    listens on the other."""
    from api_fixtures import start_server

    url = pg_database()
    one = start_server(tmp_path / "one", shared_embedder, store_url=url,
                       key_specs={"writer": {"scopes": ["read", "write"]}})
    try:
        two = start_server(tmp_path / "two", shared_embedder, store_url=url)
        two.keys = one.keys
        try:
            with _connect(two, "writer") as ws:
                assert ws.receive()["type"] == "hello"
                with one.client("writer") as http:
                    made = http.post("/api/v1/memories", json={"content": "Written on server one"})
                assert made.status_code == 201, made.text
                changes = _changes(ws, timeout=30)
            assert [c["memory_id"] for c in changes] == [made.json()["id"]]
        finally:
            two.stop()
    finally:
        one.stop()
