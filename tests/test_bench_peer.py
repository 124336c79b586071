"""bench/peer's pure parts (the memories both systems get, medians and ratios, the page) and
memoryd's worker process; the timed comparison itself runs only as `python -m bench.peer`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.peer import install, memories, report

REPO = Path(__file__).resolve().parents[1]


def test_memories_are_distinct_deterministic_and_a_prefix_of_larger_sets() -> None:
    small, large = memories.agent_memories(200), memories.agent_memories(1000)
    assert len(small) == 200 and len(large) == 1000
    assert small == large[:200] == memories.agent_memories(200)
    assert len({m["content"] for m in large}) == 1000
    assert set(small[0]) == {"content", "type", "tags"}
    assert {m["type"] for m in large} >= {"fact", "preference", "decision", "event"}
    assert all(isinstance(m["tags"], list) and len(m["tags"]) <= 3 for m in large)


def test_queries_mix_short_questions_and_long_requests() -> None:
    qs = memories.queries(30)
    assert len(qs) == 30 and qs == memories.queries(30)
    short, question, long = qs[0::3], qs[1::3], qs[2::3]
    assert all(len(q.split()) <= 3 for q in short)
    assert all(q.endswith("?") for q in question)
    assert all(len(q.split()) >= 15 for q in long)


def _run(per_s: float, peak: float, search: dict[str, list[float]]) -> dict:
    return {"stored": 1000, "ingest_s": 1000 / per_s, "load_s": 1.0, "rss_loaded_mb": 200.0,
            "rss_ingested_mb": 250.0, "search_ms": search, "peak_rss_mb": peak}


def _cold(first: float, meaning: float) -> dict:
    return {"first_result_s": first, "first_by_meaning_s": meaning, "answer_s": meaning,
            "wall_s": meaning + 0.5, "hits": 10, "by_meaning": first == meaning}


def _round(scale: float) -> dict[str, dict[str, float]]:
    ours = report.round_figures(
        _run(300 * scale, 400, {"hybrid": [10.0, 12.0, 30.0], "vector": [8.0, 9.0, 20.0]}),
        _cold(0.5, 1.5))
    theirs = report.round_figures(
        _run(100 * scale, 800, {"semantic": [40.0, 50.0, 60.0], "hybrid": [20.0, 22.0, 90.0]}),
        _cold(2.0, 2.0))
    return {"memoryd": ours, "peer": theirs}


def test_round_figures_medians_and_ratios() -> None:
    fig = _round(1.0)["memoryd"]
    assert fig["ingest_per_s"] == 300 and fig["ingest_growth_mb"] == 50
    assert fig["cold_first_s"] == 1.0 and fig["cold_meaning_s"] == 2.0  # 0.5 s to start Python
    assert fig["search hybrid p50_ms"] == 12.0
    summary = report.summarize([_round(0.5), _round(1.0), _round(2.0)])
    assert summary["medians"]["memoryd"]["ingest_per_s"] == 300  # the middle round
    rows = {r["measure"]: r for r in summary["ratios"]}
    ingest = rows["batch ingest, memories/s"]
    assert ingest["memoryd_over_peer"] == 3.0 and ingest["memoryd_advantage"] == 3.0
    default = rows["search p50 ms, each system's default (memoryd hybrid, peer semantic)"]
    assert default["memoryd"] == 12.0 and default["peer"] == 50.0
    assert default["memoryd_advantage"] == round(50 / 12, 2)
    assert rows["peak RSS MB (model + ingest + searches)"]["memoryd_over_peer"] == 0.5


def test_the_page_shows_every_measure_and_the_conditions() -> None:
    result = {"started": "2026-01-01T00:00:00+00:00", "command": "python -m bench.peer",
              "machine": {"cpus": 2, "cpu_model": "x", "python": "3.11", "memoryd": "0.1"},
              "load_average_1m": [3.5, 6.25], "rounds": 3,
              "peer": {"version": "12.4.0", "python": "Python 3.11.2", "offline": "unshare -n"},
              "vectors": {"n": 250, "min": 0.99999, "median": 1.0},
              "sizes": {"5000": report.summarize([_round(1.0)] * 3)}, "method": ["how it ran"]}
    page = report.render(result)
    assert "## 5,000 memories" in page and "load average 3.5-6.2" in page
    assert "| batch ingest, memories/s | 300 | 100 | 3 | x3.0 |" in page
    assert "cosine min 0.99999" in page and "- how it ran" in page


def test_workers_run_without_proxies_or_memoryd_settings(monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("MEMORYD_EMBEDDER", "local")
    env = install.offline_env(Path("/tmp/h"))
    assert env["HOME"] == "/tmp/h" and env["HF_HUB_OFFLINE"] == "1"
    assert env["MCP_MEMORY_ONNX_ALLOW_DOWNLOAD"] == "0"
    assert not any("proxy" in k.lower() or k.startswith("MEMORYD_") for k in env)


def test_memoryds_worker_embeds_like_the_library(tmp_path: Path) -> None:
    texts = ["Deploys go out on Tuesdays", "The staging DB listens on port 5433"]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    job = memories.write_job(tmp_path / "job.json", kind="vectors", texts=str(tmp_path / "texts.json"),
                             out=str(tmp_path / "v.npy"), db=str(tmp_path / "m.db"))
    out = subprocess.run([sys.executable, str(REPO / "bench" / "peer" / "memoryd_side.py"), str(job)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == {"saved": str(tmp_path / "v.npy")}
    from memoryd.embed.onnx import OnnxEmbedder

    expected = OnnxEmbedder.preset("minilm-int8").embed(texts)
    assert np.abs(np.load(tmp_path / "v.npy") - expected).max() < 1e-5
