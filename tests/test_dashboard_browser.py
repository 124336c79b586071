"""The dashboard in a real browser: headless Chromium, driven by Playwright, against a real
``memoryd serve`` child process over a real store.

Covered: a bad key is refused; log in, search, open a memory, edit it and review the diff,
delete with confirmation; a memory written by another client appears live, and the page
reconnects after the server restarts; a project graph: link two nodes by dragging (the edge
reaches .knowledge/graph.json, and a hand edit of that file reaches the page), move the "as of"
slider and see a superseded node come back; accept a domain proposal; cancel a wait; a key
bound to one agent sees nothing of another's; keyboard navigation, labels and a narrow
screen. Every request the page makes goes to 127.0.0.1 (checked after each test), and no
Content-Security-Policy violation or script error happens.

Skips, saying why, when Playwright or Chromium is missing (``scripts/test`` installs both).
With MEMORYD_DASHBOARD_SCREENSHOTS=<dir> each view is also saved there as a PNG.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlparse

import pytest
from dashboard_world import CHROMIUM_ARGS, FOREIGN_MARKER, World, build_world, chromium_or_skip

SHOTS = os.environ.get("MEMORYD_DASHBOARD_SCREENSHOTS")
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def world(shared_embedder, tmp_path_factory) -> Iterator[World]:
    chromium_or_skip()
    built = build_world(tmp_path_factory.mktemp("dash"), shared_embedder).start()
    try:
        yield built
    finally:
        built.stop()


@pytest.fixture(scope="module")
def browser(world: World) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_or_skip(), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Watch:
    """What one page did: every URL it asked for and every console error."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.errors: list[str] = []
        self.allowed: tuple[str, ...] = ("status of 401", "status of 404")

    def console(self, message: Any) -> None:
        if message.type == "error" and not any(a in message.text for a in self.allowed):
            self.errors.append(message.text)

    def check(self) -> None:
        foreign = [u for u in self.urls if urlparse(u).hostname != "127.0.0.1"]
        assert not foreign, f"requests that left 127.0.0.1: {foreign}"
        assert not self.errors, self.errors


@pytest.fixture
def page(browser: Any, world: World) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watch = Watch()
    context.on("request", lambda r: watch.urls.append(r.url))
    tab = context.new_page()
    tab.on("websocket", lambda ws: watch.urls.append(ws.url))
    tab.on("console", watch.console)
    tab.on("pageerror", lambda e: watch.errors.append(f"script error: {e}"))
    tab.set_default_timeout(20_000)
    tab.watch = watch
    yield tab
    context.close()
    assert watch.urls, "the page made no request at all"
    watch.check()


def login(page: Any, world: World, key: str = "admin", path: str = "/dashboard") -> None:
    page.goto(world.url + path)
    page.get_by_label("API key").fill(world.keys[key])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#live.on")


def shot(page: Any, name: str) -> None:
    """With MEMORYD_DASHBOARD_SCREENSHOTS set, save the view as a small (palette) PNG."""
    if not SHOTS:
        return
    from PIL import Image

    path = Path(SHOTS) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(600)
    page.screenshot(path=str(path))
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=96)
    small.save(path, optimize=True)


def poll(page: Any, expression: str, timeout: float = 15.0) -> Any:
    """Evaluate ``expression`` until it is truthy (wait_for_function would need eval, which
    the page's policy forbids)."""
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value or time.monotonic() > deadline:
            return value
        page.wait_for_timeout(100)


def wait_graph(page: Any, since: str | None = None) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        stamp = page.evaluate("document.body.dataset.graphLoaded || null")
        if stamp and stamp != since:
            return stamp
        page.wait_for_timeout(100)
    raise AssertionError("the graph did not load")


# --- logging in -------------------------------------------------------------------------------
def test_a_bad_key_is_refused_and_nothing_is_kept(page: Any, world: World) -> None:
    page.goto(world.url + "/dashboard/memories")
    shot(page, "login")
    page.get_by_label("API key").fill("mk_" + "0" * 40)
    page.get_by_role("button", name="Log in").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "not accepted" in alert.inner_text()
    assert "0000000000" not in page.content().replace('value=""', "")
    assert page.evaluate("sessionStorage.length") == 0
    assert page.locator("#top").is_hidden()


# --- memories ---------------------------------------------------------------------------------
def test_search_open_edit_with_a_diff_and_go_back(page: Any, world: World) -> None:
    login(page, world)
    shot(page, "memories")
    page.get_by_label("Search", exact=True).fill("staging database port")
    page.get_by_role("button", name="Search").click()
    row = page.locator(f"tr[data-id='{world.ids['new_port']}']")
    row.wait_for()
    assert "%" in row.inner_text() and ("keyword" in row.inner_text() or "semantic" in row.inner_text())
    search_url = page.url
    row.get_by_role("link").click()
    page.wait_for_selector("#memory-content")
    assert page.url.endswith(f"/dashboard/memory/{world.ids['new_port']}")
    versions = page.locator("section[aria-label=Versions]")
    assert versions.locator("li").count() == 2  # it and the memory it superseded
    assert versions.locator(f"a[href$='{world.ids['old_port']}']").count() == 1
    assert page.locator("section[aria-label=Retention] svg path").count() == 2
    shot(page, "memory")
    page.get_by_role("button", name="Edit").click()
    page.get_by_label("Content").fill("The staging database now listens on port 6543")
    page.get_by_role("button", name="Review changes").click()
    diff = page.locator("#content-diff")
    diff.wait_for()
    assert diff.locator("del").inner_text() == "5433" and diff.locator("ins").inner_text() == "6543"
    shot(page, "memory-diff")
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("#memory-content:has-text('6543')")
    with world.client() as http:
        assert http.get(f"/api/v1/memories/{world.ids['new_port']}").json()["content"].endswith("6543")
    page.go_back()
    page.locator(f"tr[data-id='{world.ids['new_port']}']").wait_for()
    assert page.url == search_url
    assert page.get_by_label("Search", exact=True).input_value() == "staging database port"


def test_delete_asks_first_and_cancel_keeps_the_memory(page: Any, world: World) -> None:
    doomed = world.ids["doomed"]
    login(page, world, path="/dashboard/memories?q=VPN%20endpoint&mode=keyword")
    page.get_by_label(f"Select memory {doomed}").check()
    page.get_by_role("button", name="Delete…").click()
    dialog = page.locator("dialog[open]")
    assert "Delete 1 memory?" in dialog.inner_text()
    dialog.get_by_role("button", name="Cancel").click()
    with world.client() as http:
        assert http.get(f"/api/v1/memories/{doomed}").status_code == 200
    page.get_by_role("button", name="Delete…").click()
    page.locator("dialog[open]").get_by_role("button", name="Delete").click()
    page.locator(f"tr[data-id='{doomed}']").wait_for(state="detached")
    with world.client() as http:
        assert http.get(f"/api/v1/memories/{doomed}").status_code == 404


def test_a_memory_written_by_another_client_appears_live(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/memories")
    with world.client("writer") as http:
        made = http.post("/api/v1/memories", json={"content": "Release notes go to #announce"})
    row = page.locator(f"tr[data-id='{made.json()['id']}']")
    row.wait_for(timeout=15_000)
    assert "fresh" in (row.get_attribute("class") or "")


# --- graphs -----------------------------------------------------------------------------------
def _settled(page: Any, node: str, timeout: float = 15) -> None:
    """Wait until the force layout stops moving ``node`` (on a busy machine it runs long)."""
    deadline = time.monotonic() + timeout
    last = page.evaluate(f"window.memorydGraph.screen('{node}')")
    while time.monotonic() < deadline:
        page.wait_for_timeout(300)
        now = page.evaluate(f"window.memorydGraph.screen('{node}')")
        if abs(now["x"] - last["x"]) < 0.5 and abs(now["y"] - last["y"]) < 0.5:
            return
        last = now


def _link_by_drag(page: Any, source: str, target: str) -> Any:
    """Drag ``source`` onto ``target`` until the link dialog opens (a node the layout still
    nudged between reading its place and pressing on it is dragged again); the dialog."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    dialog = page.locator("dialog[open]")
    for _ in range(3):
        _drag(page, source, target)
        try:
            dialog.wait_for(timeout=5_000)
            return dialog
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"dragging {source} onto {target} never opened the link dialog")


def _drag(page: Any, source: str, target: str) -> None:
    _settled(page, source)
    a = page.evaluate(f"window.memorydGraph.screen('{source}')")
    b = page.evaluate(f"window.memorydGraph.screen('{target}')")
    page.mouse.move(a["x"], a["y"])
    page.mouse.down()
    page.mouse.move((a["x"] + b["x"]) / 2, (a["y"] + b["y"]) / 2, steps=8)
    b = page.evaluate(f"window.memorydGraph.screen('{target}')")
    page.mouse.move(b["x"], b["y"], steps=8)
    page.mouse.up()


def test_link_two_project_nodes_by_dragging_and_the_file_follows(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/graph?src=project:shop")
    stamp = wait_graph(page)
    ids = {n["id"] for n in page.evaluate("window.memorydGraph.nodes()")}
    assert ids == {"new-cache", "wal-busy", "lock-storm", "pool-size"}
    dialog = _link_by_drag(page, "pool-size", "lock-storm")
    dialog.get_by_label("Edge type").select_option("depends_on")
    dialog.get_by_role("button", name="Link").click()
    stamp = wait_graph(page, stamp)
    assert {"source": "pool-size", "target": "lock-storm", "type": "depends_on"} in page.evaluate(
        "window.memorydGraph.edges()")
    shot(page, "graph")
    file = world.project / ".knowledge" / "graph.json"
    edges = json.loads(file.read_text())["edges"]
    assert any(e["source"] == "pool-size" and e["target"] == "lock-storm"
               and e["type"] == "depends_on" for e in edges)
    data = json.loads(file.read_text())
    data["nodes"].append({"id": "by-hand", "name": "Added in the file by hand", "type": "fact",
                          "created": "2026-01-02T00:00:00Z", "updated": "2026-01-02T00:00:00Z"})
    file.write_text(json.dumps(data, indent=2))
    page.reload()
    wait_graph(page)
    assert "by-hand" in {n["id"] for n in page.evaluate("window.memorydGraph.nodes()")}


def test_the_as_of_slider_brings_back_a_superseded_node(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/graph?src=project:shop")
    stamp = wait_graph(page)
    assert "old-cache" not in {n["id"] for n in page.evaluate("window.memorydGraph.nodes()")}
    slider = page.get_by_label("As of")
    slider.focus()
    slider.press("Home")  # the graph's first recorded moment, then step forward through changes
    for _ in range(10):
        stamp = wait_graph(page, stamp)
        nodes = {n["id"] for n in page.evaluate("window.memorydGraph.nodes()")}
        if "old-cache" in nodes:
            break
        slider.press("ArrowRight")
    assert "old-cache" in nodes and "new-cache" not in nodes
    assert "asof=" in page.url and "after" in page.locator("#asof-value").inner_text()
    shot(page, "graph-as-of")
    page.get_by_role("button", name="Now").click()
    wait_graph(page, stamp)
    assert "old-cache" not in {n["id"] for n in page.evaluate("window.memorydGraph.nodes()")}


def test_a_node_is_edited_in_place_and_archived(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/graph?src=project:shop")
    stamp = wait_graph(page)
    page.locator("[data-node='wal-busy']").click()
    page.locator("#node-panel").get_by_role("button", name="Edit").click()
    page.get_by_label("Body").fill("Set busy_timeout to 5 s before WAL writes.")
    page.get_by_role("button", name="Save").click()
    stamp = wait_graph(page, stamp)
    page.locator("#node-panel").get_by_role("button", name="Archive").click()
    wait_graph(page, stamp)
    node = next(n for n in json.loads((world.project / ".knowledge/graph.json").read_text())["nodes"]
                if n["id"] == "wal-busy")
    assert node["body"] == "Set busy_timeout to 5 s before WAL writes." and node.get("archived")
    assert page.locator("[data-node='wal-busy']").inner_text().endswith("(archived)")
    page.locator("#node-panel").get_by_role("button", name="Recall").click()
    page.locator("[data-node='wal-busy']:not(:has-text('archived'))").wait_for()


def test_the_memory_graph_draws_edges_and_expands(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/graph")
    wait_graph(page)
    nodes = page.evaluate("window.memorydGraph.nodes()")
    assert world.ids["new_port"] in {n["id"] for n in nodes}
    shot(page, "graph-memories")


# --- domains, tasks, timeline, health ---------------------------------------------------------
def test_accept_a_domain_proposal(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/domains")
    badge = page.locator(".badge").get_by_text("new", exact=True)
    proposal = page.locator("#proposals article").filter(has=badge).first
    proposal.wait_for()
    shot(page, "domains")
    pid = proposal.get_attribute("data-proposal")
    proposal.get_by_role("button", name="Accept", exact=True).click()
    page.locator(f"article[data-proposal='{pid}']").wait_for(state="detached")
    with world.client() as http:
        decided = http.get("/api/v1/domains/proposals", params={"status": "accepted"}).json()
    assert pid in {p["id"] for p in decided["proposals"]}


def test_a_wait_is_cancelled_after_confirmation(page: Any, world: World) -> None:
    with world.client("writer") as http:
        wait = http.post("/api/v1/waits", json={"target": f"pid:{os.getpid()}", "criteria": "exit",
                                                "timeout_s": 600}).json()
    login(page, world, path="/dashboard/tasks")
    row = page.locator(f"tr[data-wait='{wait['id']}']")
    row.wait_for()
    shot(page, "tasks")
    row.get_by_role("button", name="Cancel…").click()
    page.locator("dialog[open]").get_by_role("button", name="Cancel wait").click()
    page.locator(f"tr[data-wait='{wait['id']}']:has-text('cancelled')").wait_for()


def test_timeline_and_health_show_the_store(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/timeline")
    page.get_by_role("link", name=time.strftime("%Y-%m-%d", time.gmtime())).first.click()
    page.locator("#day-title").wait_for()
    assert "learned" in page.locator("section[aria-label^='Changes on']").inner_text()
    shot(page, "timeline")
    page.locator("[data-nav=health]").click()
    page.get_by_role("button", name="Verify the ledger").click()
    assert page.locator("#ledger-result").inner_text().startswith("Intact")
    assert page.locator("tr[data-op=memory_list]").count() == 1
    shot(page, "health")


# --- who sees what ----------------------------------------------------------------------------
def test_a_key_bound_to_one_agent_sees_nothing_of_anothers(page: Any, world: World) -> None:
    login(page, world, key="bot", path="/dashboard/memories")
    page.locator(f"tr[data-id='{world.ids['bot']}']").wait_for()
    assert page.locator("tbody tr").count() == 1
    views = ["/dashboard/memories?superseded=1", "/dashboard/graph",
             f"/dashboard/timeline?day={time.strftime('%Y-%m-%d', time.gmtime())}",
             "/dashboard/health", f"/dashboard/memory/{world.ids['foreign']}"]
    for view in views:
        page.goto(world.url + view)
        page.wait_for_selector("main h1")
        page.wait_for_timeout(800)
        text = page.locator("main").inner_text()
        assert FOREIGN_MARKER not in text and world.ids["foreign"] not in text.replace(
            f"/dashboard/memory/{world.ids['foreign']}", ""), view
    assert "not found" in page.locator("main h1").inner_text().lower()
    page.goto(world.url + "/dashboard/memories")
    page.locator(f"tr[data-id='{world.ids['bot']}']").wait_for()
    with world.client("writer", agent="agent-x") as http:
        foreign = http.post("/api/v1/memories", json={"content": f"More of the {FOREIGN_MARKER}"}).json()
    with world.client("bot") as http:
        own = http.post("/api/v1/memories", json={"content": "Bot one's second note"}).json()
    page.locator(f"tr[data-id='{own['id']}']").wait_for()
    assert page.locator(f"tr[data-id='{foreign['id']}']").count() == 0


# --- accessibility and layout -----------------------------------------------------------------
UNLABELLED = """() => [...document.querySelectorAll('main input, main select, main textarea')]
  .filter((el) => el.type !== 'hidden' && !el.labels?.length && !el.getAttribute('aria-label'))
  .map((el) => el.name || el.id || el.outerHTML.slice(0, 60))"""


def test_keyboard_labels_and_a_narrow_screen(page: Any, world: World) -> None:
    login(page, world)
    assert poll(page, "document.activeElement.tagName === 'H1'")  # focus follows the view
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('main') !== null")
    skip = page.get_by_role("link", name="Skip to content")
    skip.focus()
    assert skip.is_visible()
    page.keyboard.press("Enter")
    assert poll(page, "document.activeElement.id === 'main'")
    for view in ("memories", "graph", "timeline", "domains", "tasks", "health"):
        page.locator(f"[data-nav={view}]").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/dashboard/{view}*")
        page.wait_for_selector("main h1")
        assert poll(page, "document.activeElement.tagName === 'H1'"), view
        assert page.evaluate(UNLABELLED) == [], view
    page.set_viewport_size({"width": 390, "height": 844})
    for view in ("memories", "graph", "health"):
        page.goto(f"{world.url}/dashboard/{view}")
        page.wait_for_selector("main h1")
        page.wait_for_timeout(500)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), view
        if view == "memories":
            shot(page, "narrow-memories")


def test_the_page_reconnects_after_the_server_restarts(page: Any, world: World) -> None:
    login(page, world, path="/dashboard/memories")
    page.watch.allowed += ("ERR_CONNECTION_REFUSED", "WebSocket connection")
    world.stop()
    page.wait_for_selector("#live:has-text('reconnecting')", timeout=15_000)
    world.start()
    page.wait_for_selector("#live.on", timeout=30_000)
    with world.client("writer") as http:
        made = http.post("/api/v1/memories", json={"content": "Written after the restart"}).json()
    page.locator(f"tr[data-id='{made['id']}']").wait_for(timeout=15_000)
