"""The ingest bench's bookkeeping: which messages a memory stands for after smart ingest,
scoring, and a clean skip when the data is absent."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.ingest import data, run  # noqa: E402

WHEN = datetime(2024, 3, 1, tzinfo=timezone.utc)


def _chat() -> data.Chat:
    items = [{"id": f"m{i}", "content": f"message {i}", "created_at": WHEN} for i in range(5)]
    return data.Chat("beam", 1, items, [data.Question("a", "q", ("m1",))])


def test_folded_messages_are_held_by_the_memory_they_went_into() -> None:
    written = {"folded": {"m1": ("m0", "reinforce"), "m2": ("m0", "update"),
                          "m4": ("m3", "merge")},
               "merged": {"m3": "m0"}}  # m3 was later folded into m0 by a merge
    strict = run.holders(_chat(), written, strict=True)
    lenient = run.holders(_chat(), written, strict=False)
    # A reinforced message's text is not stored: only the lenient reading counts it.
    assert strict == {"m0": ["m0", "m2", "m3", "m4"]}
    assert lenient == {"m0": ["m0", "m1", "m2", "m3", "m4"]}


def test_score_reads_the_evidence() -> None:
    row = run.score(["m3", "m1", "m0"], ("m1", "m9"))
    assert (row["hit@1"], row["hit@5"], row["recall@10"], row["mrr"]) == (0.0, 1.0, 0.5, 0.5)


def test_absent_data_gives_no_chats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMORYD_BEAM_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("MEMORYD_REALTALK_DIR", str(tmp_path / "none"))
    assert data.load("beam") == [] and data.load("realtalk") == []
    with pytest.raises(ValueError, match="unknown data set"):
        data.load("other")


def test_questions_without_evidence_in_the_chat_are_left_out() -> None:
    from bench.recall.data import Conversation, Message, Question

    messages = [Message(id=i, role="user", content=text, session=1, position=i, anchor=None,
                        timestamp=WHEN) for i, text in enumerate(["hello there", "  "])]
    questions = [Question("x", 0, "asks about 0", [0]), Question("x", 1, "asks about 1", [1]),
                 Question("x", 2, "no evidence", [])]
    chat = data.to_chat("realtalk", Conversation(3, REPO, "c", None, messages, questions))
    assert [i["id"] for i in chat.items] == ["r3-0"]
    assert [q.text for q in chat.questions] == ["asks about 0"]
