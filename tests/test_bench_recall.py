"""Smoke tests of the BEAM recall benchmark (bench/recall): metric arithmetic and the loader.

The data-dependent test runs only when the BEAM development data is present
(``$MEMORYD_BEAM_DIR`` or ``<repo>/../shared/data/beam``) and never loads the model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.recall import data as beam  # noqa: E402
from bench.recall import metrics as M  # noqa: E402
from bench.recall.fusion import effective_pool, rrf  # noqa: E402


# --------------------------------------------------------------------------- arithmetic


def test_metrics_on_a_hand_made_ranking() -> None:
    ranked = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
    evidence = ["c", "j", "z"]  # rank 3, rank 10, absent
    m = M.question_metrics(ranked, evidence)
    assert m == {"hit@1": 0.0, "hit@5": 1.0, "hit@10": 1.0, "recall@5": pytest.approx(1 / 3),
                 "recall@10": pytest.approx(2 / 3)}
    assert M.question_metrics(ranked, ["a"])["hit@1"] == 1.0
    assert M.question_metrics(ranked, ["k"])["hit@10"] == 0.0  # rank 11 is outside the top 10
    assert M.recall_at(ranked, ["c", "c", "j"], 5) == 0.5  # duplicates count once
    assert M.first_rank(ranked, evidence) == 3
    assert M.first_rank(ranked, ["z"]) is None
    with pytest.raises(ValueError):
        M.recall_at(ranked, [], 5)


def test_aggregation_is_a_micro_average_per_ability() -> None:
    rows = [
        {"ability": "x", "metrics": M.question_metrics(["a"], ["a"])},
        {"ability": "x", "metrics": M.question_metrics(["b"], ["a"])},
        {"ability": "y", "metrics": M.question_metrics(["a", "b"], ["b", "c"])},
    ]
    agg = M.aggregate(rows)
    assert agg["x"]["hit@1"] == 0.5
    assert agg["y"]["recall@5"] == 0.5
    assert agg["overall"]["hit@1"] == pytest.approx(1 / 3)
    assert agg["overall"]["recall@10"] == pytest.approx((1 + 0 + 0.5) / 3)


def test_knowledge_update_order_and_sign_test() -> None:
    assert M.update_order(["u", "o"], ["o"], ["u"]) == "updated_first"
    assert M.update_order(["o", "x", "u"], ["o"], ["u"]) == "original_first"
    assert M.update_order(["u"], ["o"], ["u"]) == "updated_first"
    assert M.update_order(["o"], ["o"], ["u"]) == "original_first"
    assert M.update_order(["x"], ["o"], ["u"]) == "neither"
    assert M.sign_test(0, 0) == 1.0
    assert M.sign_test(5, 0) == pytest.approx(2 / 32)
    assert M.median_rank([1, 3, None]) == 3
    assert M.median_rank([1, None, None]) is None


def test_flatten_source_chat_ids() -> None:
    assert beam.flatten_ids(None) == []
    assert beam.flatten_ids([8, 12, [136, 138]]) == [8, 12, 136, 138]
    assert beam.flatten_ids({"original_info": [86], "updated_info": [114]}) == [86, 114]
    assert beam.flatten_ids({"first": [58], "second": [58]}) == [58, 58]


def test_rrf_copy_matches_memoryd_fusion() -> None:
    from memoryd.retrieval.fusion import reciprocal_rank_fusion
    from memoryd.store.base import KeywordHit, VectorHit

    kw = ["a", "b", "c", "d"]
    vec = ["c", "e", "a", "f"]
    for k, wk, wv in ((60, 1.0, 1.0), (10, 2.0, 1.0), (20, 1.0, 1.5)):
        ours = rrf(kw, vec, k=k, keyword_weight=wk, vector_weight=wv, pool=50, limit=10)
        theirs = reciprocal_rank_fusion(
            [KeywordHit(m, 1.0) for m in kw], [VectorHit(m, 0.5) for m in vec],
            k=k, keyword_weight=wk, vector_weight=wv,
        )
        assert ours == [f.memory_id for f in theirs]
    assert effective_pool(20) == 30 and effective_pool(50) == 50


# --------------------------------------------------------------------------- data


def _first_conversation() -> Path:
    dirs = beam.conversation_dirs()
    if not dirs:
        pytest.skip(f"BEAM development data not found at {beam.beam_dir()}")
    return dirs[0]


def test_loader_and_metrics_on_one_conversation(tmp_path: Path) -> None:
    conv = beam.load_conversation(_first_conversation())
    ids = [m.id for m in conv.messages]
    assert ids and len(ids) == len(set(ids))
    assert {m.role for m in conv.messages} <= {"user", "assistant"}
    assert conv.chat_file in ("chat.json", "chat_trunecated.json")
    # the anchor of a session's first message carries forward through the session
    for msgs in conv.sessions.values():
        if msgs[0].anchor:
            assert all(m.created_at is not None for m in msgs)
    with_evidence = [q for q in conv.questions if q.evidence]
    assert with_evidence and all(set(q.evidence) <= set(ids) for q in with_evidence)
    assert all(not q.evidence for q in conv.questions if q.ability == "abstention")
    ku = [q for q in conv.questions if q.ability == "knowledge_update"]
    assert all("updated_info" in q.evidence_groups for q in ku)

    # an oracle ranking scores perfectly; a ranking without evidence scores zero
    rows = []
    for q in with_evidence:
        oracle = [str(i) for i in q.evidence] + [str(i) for i in ids if i not in q.evidence]
        rows.append({"ability": q.ability, "metrics": M.question_metrics(oracle, [str(i) for i in q.evidence])})
        none = [str(i) for i in ids if i not in q.evidence]
        assert M.question_metrics(none, [str(i) for i in q.evidence])["hit@10"] == 0.0
    agg = M.aggregate(rows)
    assert agg["overall"]["hit@1"] == 1.0
    expected_r10 = np.mean([min(1.0, 10 / len(q.evidence)) for q in with_evidence])
    assert agg["overall"]["recall@10"] == pytest.approx(expected_r10)

    # keyword search through a real store finds evidence for a good share of questions
    import memoryd
    from memoryd.embed import Embedder

    class Constant(Embedder):
        def __init__(self) -> None:
            super().__init__(model_id="test/constant", dims=8)

        def _embed_batch(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 8), dtype=np.float32)

    db = tmp_path / "c.db"
    with memoryd.open(f"sqlite://{db}", embedder=Constant(), max_content_bytes=1 << 20) as engine:
        items = [{"id": str(m.id), "content": m.content, "node_type": "message",
                  "session_id": str(m.session), "created_at": m.created_at,
                  "metadata": {"message_id": m.id, "role": m.role}}
                 for m in conv.messages if m.content.strip()]
        try:
            engine.add_many(items, allow_secrets=True)
        except TypeError:  # older engines without secret screening
            engine.add_many(items)
        hits10 = []
        for q in with_evidence:
            kwargs = {"record_access": False, "cognitive": False, "associations": False}
            try:
                hits = engine.search(q.question, limit=10, mode="keyword", **kwargs)
            except TypeError:
                hits = engine.search(q.question, limit=10, mode="keyword")
            ranked = [str(h.memory.metadata["message_id"]) for h in hits]
            hits10.append(M.hit_at(ranked, [str(i) for i in q.evidence], 10))
    assert np.mean(hits10) > 0.3


# --------------------------------------------------------------------------- REALTALK loader


def test_realtalk_loader_maps_dia_ids_times_and_categories(tmp_path: Path) -> None:
    from bench.recall import realtalk

    chat = {
        "name": {"speaker_1": "Ana", "speaker_2": "Ben"},
        "session_2": [{"clean_text": "later", "speaker": "Ben", "date_time": "02.01.2024, 09:00:00",
                       "dia_id": "D2:1"}],
        "session_1": [
            {"clean_text": "Hi!", "speaker": "Ana", "date_time": "30.12.2023, 00:32:20", "dia_id": "D1:1"},
            {"clean_text": "", "speaker": "Ben", "date_time": "30.12.2023, 00:33:00", "dia_id": "D1:2"},
            {"clean_text": "I work at UCLA", "speaker": "Ben", "date_time": "30.12.2023, 00:34:00",
             "dia_id": "D1:3"},
        ],
        "qa": [{"question": "Where does Ben work?", "answer": "UCLA", "evidence": ["D1:3", "D1:2"],
                "category": 2}],
    }
    import json
    (tmp_path / "Chat_7_Ana_Ben.json").write_text(json.dumps(chat), encoding="utf-8")
    [conv] = realtalk.load_realtalk(tmp_path)
    assert conv.number == 7
    assert [m.content for m in conv.messages] == ["Ana: Hi!", "Ben: I work at UCLA", "Ben: later"]
    assert [m.session for m in conv.messages] == [1, 1, 2]
    assert conv.messages[1].created_at.isoformat() == "2023-12-30T00:34:00+00:00"
    [q] = conv.questions
    assert (q.ability, q.evidence) == ("category_2", [1])  # the empty message is no evidence
    assert realtalk.load_realtalk(tmp_path / "absent") == []


@pytest.mark.skipif(not __import__("bench.recall.realtalk", fromlist=["x"]).chat_files(),
                    reason="REALTALK development data not present")
def test_realtalk_data_loads_every_chat() -> None:
    from bench.recall import realtalk

    convs = realtalk.load_realtalk()
    assert len(convs) == 6
    assert sum(len(c.questions) for c in convs) == 430
    assert all(m.created_at is not None for c in convs for m in c.messages)
