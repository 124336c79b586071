"""The dashboard in a real browser: how fast the memories view of a 10,000-memory store
paints and becomes usable, and how smoothly the graph draws 500 and 2,000 memories.

    .venv/bin/python -m bench.dashboard                 # 10k memories, 7 loads, graphs of 500 and 2000
    .venv/bin/python -m bench.dashboard --memories 2000 --loads 3   # a quick run

A store of synthetic agent memories (bench/latency's corpus generator, real embeddings) with
about 1.5 typed edges per memory among the newest 2,000 is served by ``memoryd serve`` and
opened in headless Chromium (Debian's, driven by Playwright; software rendering, no GPU).

* Memories view, each load in a fresh browser context (nothing cached): first contentful
  paint, DOMContentLoaded, and time to interactive = when the view's first page of
  memories is drawn, focus is placed and its controls answer (the page marks it
  ``memoryd:view-ready``); also the list request's own time.
* Graph: frames drawn per second (force-graph's own render hook) while the layout runs
  (the first 5 s), and while the view pans and zooms (animated, 10 moves in 5 s) after the
  layout settled; median and 95th-percentile frame time. The browser draws at most 60
  frames a second.

Results: bench/results/dashboard.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import machine_info, md_table, percentile, write_results
from bench.latency.corpus import generate_corpus

CHROMIUM = os.environ.get("MEMORYD_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
EDGE_TYPES = ["related", "caused_by", "part_of", "follows", "similar", "derived_from"]


def build_store(home: Path, n: int, graph_nodes: int) -> tuple[str, float]:
    """A store of ``n`` corpus memories with edges among the newest; returns (admin key, s)."""
    import memoryd
    from memoryd.config import Settings

    started = time.perf_counter()
    corpus = generate_corpus(n)
    settings = Settings(home=home, domains_auto=False)
    with memoryd.open(f"sqlite:///{home / 'memoryd.db'}", settings=settings) as mem:
        key = mem.admin.create_key("bench", scopes=["read", "write", "admin"]).secret
        order = sorted(range(n), key=lambda i: corpus.created_at[i])
        for start in range(0, n, 500):
            mem.add_many([{"content": corpus.texts[i], "node_type": corpus.node_types[i],
                           "tags": corpus.tags[i], "created_at": corpus.created_at[i],
                           "metadata": {"bench": True}} for i in order[start:start + 500]])
        newest = [m.id for offset in range(0, graph_nodes, 1000)
                  for m in mem.list(limit=min(1000, graph_nodes - offset), offset=offset)]
        rng = random.Random(7)
        for _ in range(int(len(newest) * 1.5)):
            a, b = rng.sample(newest, 2)
            mem.link(a, b, rng.choice(EDGE_TYPES), round(rng.uniform(0.2, 1.0), 2))
    return key, time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update({"MEMORYD_HOME": str(home), "MEMORYD_DOMAINS_AUTO": "false",
                "XDG_CONFIG_HOME": str(home / "config")})
    binary = shutil.which("memoryd", path=str(Path(sys.executable).parent)) or "memoryd"
    proc = subprocess.Popen([binary, "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("memoryd serve did not start")


def _context(browser: Any, key: str) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(f"sessionStorage.setItem('memoryd.key', {json.dumps(key)})")
    return context


PAGE_TIMES = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const ready = performance.getEntriesByName('memoryd:view-ready')[0];
  const list = performance.getEntriesByType('resource').find((r) => r.name.includes('/api/v1/memories?'));
  return {fcp: paint ? paint.startTime : null, dcl: nav.domContentLoadedEventEnd,
          tti: ready ? ready.startTime : null, list: list ? list.duration : null};
}"""


def memories_view(browser: Any, url: str, key: str, loads: int) -> dict[str, Any]:
    samples = []
    for _ in range(loads):
        context = _context(browser, key)
        page = context.new_page()
        page.goto(f"{url}/dashboard/memories")
        page.wait_for_selector("#result-summary")
        page.wait_for_timeout(200)
        samples.append(page.evaluate(PAGE_TIMES))
        rows = page.locator("tbody tr").count()
        context.close()
    out = {"loads": loads, "rows_drawn": rows, "samples": samples}
    for name in ("fcp", "dcl", "tti", "list"):
        values = [s[name] for s in samples if s[name] is not None]
        out[f"{name}_ms"] = {"p50": round(percentile(values, 50), 1),
                             "max": round(max(values), 1)} if values else None
    return out


def _frame_stats(frames: list[float]) -> dict[str, float]:
    gaps = [b - a for a, b in zip(frames, frames[1:])]
    span = (frames[-1] - frames[0]) / 1000 if len(frames) > 1 else float("nan")
    return {"frames": len(frames), "fps": round((len(frames) - 1) / span, 1) if span else 0.0,
            "frame_ms_p50": round(percentile(gaps, 50), 1) if gaps else None,
            "frame_ms_p95": round(percentile(gaps, 95), 1) if gaps else None}


def _frames_during(page: Any, seconds: float, action: Any = None) -> dict[str, float]:
    start = page.evaluate("performance.now()")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if action is not None:
            action()
        else:
            page.wait_for_timeout(100)
    frames = [t for t in page.evaluate("window.memorydGraph.frames()") if t >= start]
    return _frame_stats(frames)


# Pan and zoom as a person would (force-graph's own animated transitions), for 5 s, inside the
# page: driving the mouse from here would measure how fast events arrive, not frames drawn.
PAN_AND_ZOOM = """async () => {
  const fg = window.memorydGraph.fg;
  const centre = fg.centerAt();
  for (let i = 0; i < 10; i += 1) {
    fg.centerAt(centre.x + (i % 2 ? 80 : -80) / fg.zoom(), centre.y + 40 / fg.zoom(), 450);
    fg.zoom(fg.zoom() * (i % 4 < 2 ? 1.3 : 1 / 1.3), 450);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}"""


def graph_view(browser: Any, url: str, key: str, size: int) -> dict[str, Any]:
    context = _context(browser, key)
    page = context.new_page()
    page.goto(f"{url}/dashboard/graph?limit={size}")
    started = time.perf_counter()
    page.wait_for_selector("body[data-graph-loaded]", state="attached", timeout=120_000)
    loaded_s = time.perf_counter() - started
    nodes = len(page.evaluate("window.memorydGraph.nodes()"))
    edges = len(page.evaluate("window.memorydGraph.edges()"))
    layout = _frames_during(page, 5.0)
    page.wait_for_timeout(12_000)  # let the layout settle (cooldown 15 s from load)
    start = page.evaluate("performance.now()")
    page.evaluate(PAN_AND_ZOOM)
    interaction = _frame_stats([t for t in page.evaluate("window.memorydGraph.frames()")
                                if t >= start])
    context.close()
    return {"nodes": nodes, "edges": edges, "load_s": round(loaded_s, 2), "layout": layout,
            "pan_zoom": interaction}


def render(data: dict[str, Any]) -> str:
    m = data["memories_view"]
    lines = [
        "# Dashboard in a browser",
        "",
        f"Headless Chromium {data['browser']} (software rendering, `--disable-gpu`), "
        f"`memoryd serve` over a SQLite store of {data['memories']:,} memories, on this "
        "2-core machine shared with other jobs; medians. Method: `bench/dashboard/run.py`.",
        "",
        f"## Memories view ({m['loads']} cold loads, {m['rows_drawn']} rows drawn)",
        "",
        md_table(["", "median ms", "max ms"], [
            ["first contentful paint", m["fcp_ms"]["p50"], m["fcp_ms"]["max"]],
            ["DOMContentLoaded", m["dcl_ms"]["p50"], m["dcl_ms"]["max"]],
            ["time to interactive (first page drawn, controls live)", m["tti_ms"]["p50"],
             m["tti_ms"]["max"]],
            ["of which the list request", m["list_ms"]["p50"], m["list_ms"]["max"]],
        ]),
        "",
        "## Graph frame rate",
        "",
        md_table(["visible nodes", "edges", "load s", "layout fps", "layout frame ms p50/p95",
                  "pan+zoom fps", "pan+zoom frame ms p50/p95"],
                 [[g["nodes"], g["edges"], g["load_s"], g["layout"]["fps"],
                   f"{g['layout']['frame_ms_p50']} / {g['layout']['frame_ms_p95']}",
                   g["pan_zoom"]["fps"],
                   f"{g['pan_zoom']['frame_ms_p50']} / {g['pan_zoom']['frame_ms_p95']}"]
                  for g in data["graphs"]]),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument("--sizes", default="500,2000")
    parser.add_argument("--name", default="dashboard")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="memoryd-dash-bench-") as tmp:
        home = Path(tmp)
        print(f"building a store of {args.memories} memories ...", flush=True)
        key, build_s = build_store(home, args.memories, max(sizes))
        port = free_port()
        proc = serve(home, port)
        url = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                graphs = [graph_view(browser, url, key, size) for size in sizes]
                data = {"memories": args.memories, "build_s": round(build_s, 1),
                        "browser": browser.version,
                        "memories_view": memories_view(browser, url, key, args.loads),
                        "graphs": graphs, "machine": machine_info()}
                browser.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    paths = write_results(args.name, data, render(data))
    print(render(data))
    print("wrote", *paths)
