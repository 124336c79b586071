"""BEAM as the ranking bench sees it: per conversation, the messages' terms and vectors.

Everything here is computed once per run and cached: stemmed term counts from
:mod:`memoryd.retrieval.tokens` (what a store would keep per memory), and MiniLM vectors of
the message alone and of the message with its previous and/or next turn of the same
session (embedded through the recall bench's :class:`VectorTable`, cached under
``bench/.cache/recall``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

import numpy as np

from bench.recall import data as beam
from bench.recall.embedding import (
    WINDOW_TOKENS,
    VectorCache,
    VectorTable,
    context_text,
    neighbours,
    token_counts,
    tokenizer,
)
from memoryd.retrieval.tokens import term_counts

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / "bench" / ".cache" / "recall"
#: Vector-text variants embedded as text: the message alone, or with a little of its
#: neighbours (same session). Slow (one more model pass per message and variant).
CONTEXTS = ("plain", "prev", "next", "prev_next")
#: Neighbour-aware vectors without another model pass: the message's vector plus ``weight``
#: times its previous and/or next turn's vector (same session), renormalised.
MIXES = {"mix prev 0.5": (0.5, 0.0), "mix next 0.5": (0.0, 0.5),
         "mix both 0.3": (0.3, 0.3), "mix both 0.6": (0.6, 0.6)}


@dataclass
class Corpus:
    """One conversation indexed as memoryd would: one memory per non-empty message."""

    number: int
    ids: list[str]
    texts: list[str]
    roles: list[str]
    sessions: list[int]
    created: list[datetime | None]
    terms: list[Counter[str]]
    lengths: np.ndarray
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # context -> (n, 384)
    questions: list[beam.Question] = field(default_factory=list)


def context_texts(c: beam.Conversation, counts: np.ndarray) -> dict[str, list[str]]:
    """Vector text of each message per context variant (long messages stay alone: the
    model's window is full with the message itself)."""
    out: dict[str, list[str]] = {name: [] for name in CONTEXTS}
    for i, (m, (prev, nxt)) in enumerate(zip(c.messages, neighbours(c.messages))):
        short = counts[i] < WINDOW_TOKENS
        out["plain"].append(m.content)
        out["prev"].append(context_text(m, prev, None) if short else m.content)
        out["next"].append(context_text(m, None, nxt) if short else m.content)
        out["prev_next"].append(context_text(m, prev, nxt) if short else m.content)
    return out


def load(dirs: list[Path], extra_queries: list[str], log: Callable[[str], None],
         cache_dir: Path | None = CACHE_DIR, contexts: tuple[str, ...] = CONTEXTS
         ) -> tuple[list[Corpus], VectorTable]:
    """Load, tokenise and embed the conversations in ``dirs`` (plus ``extra_queries``)."""
    import memoryd.embed as membed

    convs = [beam.load_conversation(d) for d in dirs]
    convs = [_without_empty(c) for c in convs]
    tok = tokenizer()
    texts = {c.number: context_texts(c, token_counts(tok, [m.content for m in c.messages]))
             for c in convs}
    embedder = membed.LocalEmbedder()
    embedder.load()
    table = VectorTable(embedder, VectorCache(cache_dir), log)
    table.ensure([q.question for c in convs for q in c.questions] + extra_queries, "queries")
    for name in contexts:
        table.ensure([t for c in convs for t in texts[c.number][name]], f"messages ({name})")
    corpora = []
    for c in convs:
        terms = [term_counts(m.content) for m in c.messages]
        corpora.append(Corpus(
            number=c.number,
            ids=[str(m.id) for m in c.messages],
            texts=[m.content for m in c.messages],
            roles=[m.role for m in c.messages],
            sessions=[m.session for m in c.messages],
            created=[m.created_at for m in c.messages],
            terms=terms,
            lengths=np.asarray([sum(t.values()) for t in terms], dtype=np.float64),
            vectors=_with_mixes({name: table.matrix(texts[c.number][name]) for name in contexts},
                                neighbours(c.messages)),
            questions=[q for q in c.questions if q.question.strip()],
        ))
    return corpora, table


def mixed(plain: np.ndarray, nb: list, prev_w: float, next_w: float) -> np.ndarray:
    """Each row plus weighted neighbour rows (same session), renormalised to unit length."""
    out = plain.astype(np.float64).copy()
    for i, (prev, nxt) in enumerate(nb):
        if prev is not None and prev_w:
            out[i] += prev_w * plain[i - 1]
        if nxt is not None and next_w:
            out[i] += next_w * plain[i + 1]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def _with_mixes(vectors: dict[str, np.ndarray], nb: list) -> dict[str, np.ndarray]:
    for name, (pw, nw) in MIXES.items():
        vectors[name] = mixed(vectors["plain"], nb, pw, nw)
    return vectors


def _without_empty(c: beam.Conversation) -> beam.Conversation:
    """memoryd stores no empty memory; the bench drops empty messages the same way."""
    c.messages = [m for m in c.messages if m.content.strip()]
    return c


def user_turns_only(c: Corpus) -> Corpus:
    """The conversation as a store of the user's own turns only: short first-person chat,
    closer to a chit-chat memory store than BEAM's long assistant answers. Questions keep
    only user-turn evidence (those with none are dropped; abstentions stay)."""
    keep = [i for i, r in enumerate(c.roles) if r == "user"]
    ids = {c.ids[i] for i in keep}
    questions = []
    for q in c.questions:
        evidence = [e for e in q.evidence if str(e) in ids]
        if q.evidence and not evidence:
            continue
        groups = {k: [e for e in v if str(e) in ids] for k, v in q.evidence_groups.items()}
        questions.append(beam.Question(q.ability, q.index, q.question, evidence, groups))
    return Corpus(
        number=c.number, ids=[c.ids[i] for i in keep], texts=[c.texts[i] for i in keep],
        roles=[c.roles[i] for i in keep], sessions=[c.sessions[i] for i in keep],
        created=[c.created[i] for i in keep], terms=[c.terms[i] for i in keep],
        lengths=c.lengths[keep], vectors={"plain": c.vectors["plain"][keep]}, questions=questions)
