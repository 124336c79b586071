"""Recall of one embedding model on BEAM through memoryd's own search pipeline.

Per conversation a fresh SQLite store (``memoryd.open``); every message is one memory, added
with ``Engine.add_many`` through an embedder that answers from the model's precomputed vectors
(model id ``bench:<model>``, so nothing else is embedded); every question with evidence is
asked with ``Engine.search(..., query_vector=<the model's query vector>)`` in keyword, vector
and hybrid mode as shipped, and hybrid with ``cognitive=False, associations=False``.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from bench.recall import data as beam
from bench.recall import metrics as M
from memoryd.embed.base import Embedder
from memoryd.errors import EmbeddingError

LIMIT = 10
MAX_CONTENT_BYTES = 1 << 20  # one BEAM message is 341 KiB; memoryd's default limit is 64 KiB
PLAN: dict[str, tuple[str, dict[str, Any]]] = {
    "keyword": ("keyword", {}),
    "vector": ("vector", {}),
    "hybrid": ("hybrid", {}),
    "hybrid:fusion": ("hybrid", {"cognitive": False, "associations": False}),
}
MODES = tuple(PLAN)
METRICS = (*M.METRICS, "mrr@10")

Log = Callable[[str], None]


class TableEmbedder(Embedder):
    """An Embedder that answers from precomputed vectors; an unknown text is an error."""

    def __init__(self, model_id: str, table: Mapping[str, np.ndarray]) -> None:
        dims = len(next(iter(table.values())))
        super().__init__(model_id=model_id, dims=dims, batch_size=4096)
        self.table = table

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.table]
        if missing:
            raise EmbeddingError(f"{len(missing)} texts have no precomputed vector")
        return np.stack([self.table[t] for t in texts])


@dataclass
class Question:
    """One question with evidence and the top 10 of every search mode."""

    conv: int
    ability: str
    index: int
    text: str
    evidence: list[str]
    ranked: dict[str, list[str]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.conv}:{self.ability}:{self.index}"


def question_metrics(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """hit@1/5/10, recall@5/10 and the reciprocal rank of the first evidence in the top 10."""
    out = M.question_metrics(ranked, evidence)
    first = M.first_rank(list(ranked)[:LIMIT], evidence)
    out["mrr@10"] = 1.0 / first if first else 0.0
    return out


def aggregate(questions: Sequence[Question], mode: str) -> dict[str, dict[str, float]]:
    """Metrics per ability and overall (micro average) for one mode."""
    groups: dict[str, list[dict[str, float]]] = {}
    rows = [(q.ability, question_metrics(q.ranked[mode], q.evidence)) for q in questions]
    for ability, m in rows:
        groups.setdefault(ability, []).append(m)
    mean = lambda ms: {k: round(sum(m[k] for m in ms) / len(ms), 4) for k in METRICS}  # noqa: E731
    out = {"overall": mean([m for _, m in rows])} if rows else {}
    out.update({a: mean(ms) for a, ms in sorted(groups.items())})
    return out


def paired(base: Sequence[Question], other: Sequence[Question], mode: str, metric: str,
           base_mode: str | None = None) -> dict[str, Any]:
    """Wins/losses of ``other`` against ``base`` per question, and the sign test."""
    b = {q.key: question_metrics(q.ranked[base_mode or mode], q.evidence)[metric] for q in base}
    wins = losses = 0
    for q in other:
        v = question_metrics(q.ranked[mode], q.evidence)[metric]
        wins += v > b[q.key]
        losses += v < b[q.key]
    return {"wins": wins, "losses": losses, "p_sign": round(M.sign_test(wins, losses), 4)}


def _items(c: beam.Conversation) -> list[dict[str, Any]]:
    return [
        {"id": str(m.id), "content": m.content, "node_type": "message",
         "session_id": str(m.session), "created_at": m.created_at,
         "metadata": {"message_id": m.id, "role": m.role}}
        for m in c.messages if m.content.strip()
    ]


def run_conversation(c: beam.Conversation, embedder: TableEmbedder, queries: Mapping[str, np.ndarray],
                     workdir: Path, extra_depth: int = 0) -> list[Question]:
    """Index one conversation and ask its questions in every mode of ``PLAN``.

    With ``extra_depth`` the shipped hybrid list is also kept ``extra_depth`` deep (mode
    ``hybrid@N``) for re-ranking experiments.
    """
    import memoryd

    engine = memoryd.open(f"sqlite://{(workdir / f'c{c.number}.db').resolve()}",
                          embedder=embedder, max_content_bytes=MAX_CONTENT_BYTES)
    try:
        engine.add_many(_items(c), allow_secrets=True)  # coding chats hold example passwords
        out = []
        for q in c.questions:
            if not q.evidence or not q.question.strip():
                continue
            rec = Question(c.number, q.ability, q.index, q.question, [str(i) for i in q.evidence])
            qvec = queries[q.question]
            plan = dict(PLAN)
            if extra_depth:
                plan[f"hybrid@{extra_depth}"] = ("hybrid", {})
            for label, (mode, kwargs) in plan.items():
                limit = extra_depth if label.startswith("hybrid@") else LIMIT
                hits = engine.search(q.question, limit=limit, mode=mode, query_vector=qvec,
                                     record_access=False, **kwargs)
                rec.ranked[label] = [str(h.memory.metadata["message_id"]) for h in hits]
            out.append(rec)
        return out
    finally:
        engine.close()


def evaluate(model: str, convs: Sequence[beam.Conversation], docs: Mapping[str, np.ndarray],
             queries: Mapping[str, np.ndarray], log: Log, extra_depth: int = 0) -> dict[str, Any]:
    """Every question of every conversation for one model; metrics per mode and ability."""
    embedder = TableEmbedder(f"bench:{model}", docs)
    questions: list[Question] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"embedmodels-{model}-") as tmp:
        for c in convs:
            questions.extend(run_conversation(c, embedder, queries, Path(tmp), extra_depth))
    log(f"  {model}: {len(questions)} questions in {time.perf_counter() - t0:.0f}s")
    return {
        "questions": questions,
        "by_mode": {mode: aggregate(questions, mode) for mode in MODES},
        "seconds": round(time.perf_counter() - t0, 1),
    }
