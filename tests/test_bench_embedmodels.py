"""bench/embedmodels: metric arithmetic, model selection, budget projections, the worker
process, and one small conversation through memoryd's pipeline with real vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.embedmodels import recall, rerank, run, speed
from bench.recall import data as beam
from memoryd.embed import LocalEmbedder
from memoryd.errors import EmbeddingError

REPO = Path(__file__).resolve().parents[1]
WORKER = REPO / "bench" / "embedmodels" / "worker.py"


def _q(ranked: dict[str, list[str]], evidence: list[str], ability: str = "a", index: int = 0) -> recall.Question:
    return recall.Question(1, ability, index, "q", evidence, ranked)


def test_question_metrics_include_reciprocal_rank() -> None:
    m = recall.question_metrics(["x", "y", "e"], ["e", "f"])
    assert m["hit@1"] == 0.0 and m["hit@5"] == 1.0
    assert m["recall@5"] == 0.5
    assert m["mrr@10"] == pytest.approx(1 / 3)
    assert recall.question_metrics(["x"] * 10 + ["e"], ["e"])["mrr@10"] == 0.0  # past the top 10


def test_aggregate_and_paired_sign_test() -> None:
    base = [_q({"vector": ["e"]}, ["e"], index=0), _q({"vector": ["x"]}, ["e"], index=1),
            _q({"vector": ["x"]}, ["e"], "b", index=2)]
    other = [_q({"vector": ["x"]}, ["e"], index=0), _q({"vector": ["e"]}, ["e"], index=1),
             _q({"vector": ["e"]}, ["e"], "b", index=2)]
    agg = recall.aggregate(other, "vector")
    assert agg["overall"]["hit@1"] == pytest.approx(2 / 3, abs=1e-4)
    assert agg["b"]["hit@1"] == 1.0
    assert recall.paired(base, other, "vector", "hit@1") == {"wins": 2, "losses": 1, "p_sign": 1.0}


def test_reranked_orders_the_top_n_by_score() -> None:
    q = _q({"hybrid@50": ["a", "b", "c", "d"]}, ["c"])
    out = rerank.reranked([q], 3, [[0.1, 0.2, 0.9]], "hybrid@50")[0]
    assert out.ranked["rerank@3"] == ["c", "b", "a"]  # "d" is beyond the re-ranked depth
    assert q.ranked.keys() == {"hybrid@50"}  # the original is left alone


def test_table_embedder_refuses_texts_it_has_no_vector_for() -> None:
    emb = recall.TableEmbedder("bench:x", {"known": np.ones(4, np.float32)})
    assert emb.embed(["known"]).shape == (1, 4)
    with pytest.raises(EmbeddingError, match="no precomputed vector"):
        emb.embed(["unknown"])


def test_same_model_by_hash_or_by_probe_vectors() -> None:
    a = {"weights_sha256": {"m": "h1"}, "probe": {"dims": 384, "cos_paraphrase": 0.5, "cos_unrelated": 0.1}}
    b = {"weights_sha256": {"n": "h1"}, "probe": {}}
    c = {"weights_sha256": {"n": "h2"}, "probe": a["probe"]}
    d = {"probe": dict(a["probe"])}
    assert run.same_model(b, a) and not run.same_model(c, a)  # hashes decide when both exist
    assert run.same_model(d, a)  # otherwise identical probe vectors do


def test_select_skips_twins_and_models_that_do_not_load() -> None:
    probe = {"dims": 384, "cos_paraphrase": 0.5, "cos_unrelated": 0.1}
    packages = {
        "minilm-torch": {"kind": "embedder", "loads_offline": True, "weights_sha256": {"w": "h"}, "probe": probe},
        "copy": {"kind": "embedder", "loads_offline": True, "weights_sha256": {"w": "h"}, "probe": probe},
        "other": {"kind": "embedder", "loads_offline": True, "probe": {**probe, "cos_unrelated": 0.2}},
        "broken": {"kind": "embedder", "loads_offline": False},
        "ranker": {"kind": "reranker", "loads_offline": True},
    }
    embedders, rerankers, skipped = run.select(packages, set())
    assert embedders == ["minilm-torch", "other"] and rerankers == ["ranker"]
    assert skipped == {"copy": "same model as minilm-torch", "broken": "does not load offline"}


def test_budget_projections_swap_the_model_runtime() -> None:
    ref = speed._store_numbers()  # memoryd's own committed 100k results
    speeds = {
        "minilm-torch": {"query_p50_ms": 90.0, "query_cpu_p50_ms": 10.0, "docs_per_s_batch64": 20.0,
                         "docs_per_cpu_s_batch64": 150.0, "model_rss_mb": 300.0, "load_s": 30.0,
                         "load_cpu_s": 6.0, "first_query_cpu_ms": 50.0},
        "fast": {"query_p50_ms": 9.0, "query_cpu_p50_ms": 2.0, "docs_per_s_batch64": 300.0,
                 "docs_per_cpu_s_batch64": 3000.0, "model_rss_mb": 100.0, "load_s": 3.0,
                 "load_cpu_s": 0.4, "first_query_cpu_ms": 20.0},
    }
    out = speed.projections(speeds, "minilm-torch")
    fast = out["fast"]
    # CPU times, not the load-stretched wall times, feed the projections
    assert fast["search_p50_ms"] == pytest.approx(ref["search_p50_ms_no_embedding"] + 2.0, abs=0.05)
    assert fast["rss_mb"] == pytest.approx(ref["rss_100k_with_minilm_mb"] - 200.0, abs=0.05)
    expected_rate = 1 / (1 / ref["store_add_many_per_s"] + 1 / 3000.0)
    assert fast["import_per_s"] == pytest.approx(expected_rate, abs=0.1)
    assert fast["first_query_cpu_s"] == pytest.approx(0.42)
    assert fast["first_query_ok"] and not out["minilm-torch"]["first_query_ok"]


def _worker(*args: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, str(WORKER), *args], capture_output=True, text=True,
                          timeout=600)
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1])


def test_worker_probes_the_packaged_onnx_model_in_its_own_process() -> None:
    code, out = _worker("probe", "minilm-int8-onnx")
    assert code == 0 and out["ok"] and out["dims"] == 384 and out["paraphrase_first"]


def test_worker_reports_failure_as_data() -> None:
    code, out = _worker("probe", "no-such-model")
    assert code == 1 and out["ok"] is False and "KeyError" in out["error"]


def test_one_conversation_through_memoryds_pipeline(tmp_path: Path, shared_embedder: LocalEmbedder) -> None:
    contents = ["We deploy every Tuesday after the standup.", "I adopted a grey cat named Miso.",
                "The API gateway times out after 30 seconds.", "Lunch was a bowl of ramen."]
    messages = [beam.Message(id=i + 1, role="user", content=t, session=1, position=i, anchor="March-15-2024")
                for i, t in enumerate(contents)]
    questions = [beam.Question("information_extraction", 0, "What is the name of my cat?", [2]),
                 beam.Question("information_extraction", 1, "When do releases ship?", [1]),
                 beam.Question("information_extraction", 2, "no evidence", [])]
    conv = beam.Conversation(7, tmp_path, "chat.json", None, messages, questions)
    docs = dict(zip(contents, shared_embedder.embed(contents)))
    qs = {q.question: v for q, v in zip(questions, shared_embedder.embed([q.question for q in questions]))}
    out = recall.run_conversation(conv, recall.TableEmbedder("bench:t", docs), qs, tmp_path, extra_depth=4)
    assert [q.key for q in out] == ["7:information_extraction:0", "7:information_extraction:1"]
    assert set(out[0].ranked) == {*recall.MODES, "hybrid@4"}
    assert out[0].ranked["vector"][0] == "2" and out[1].ranked["vector"][0] == "1"
    assert out[0].ranked["keyword"][0] == "2"  # "cat" matches
