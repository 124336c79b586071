"""The hand-written domain corpus (tests/data/domains_corpus.jsonl) with real vectors."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memoryd.domains.discover import Discovery

PATH = Path(__file__).resolve().parent / "data" / "domains_corpus.jsonl"
TOPICS = ("network", "home", "rust", "cooking")


@dataclass(frozen=True, eq=False)
class Corpus:
    texts: list[str]
    topics: list[tuple[str, ...]]
    vectors: np.ndarray

    def single(self, *topics: str) -> np.ndarray:
        """Row indices of the one-topic memories on any of ``topics`` (all four if none)."""
        wanted = set(topics or TOPICS)
        return np.array([i for i, t in enumerate(self.topics) if len(t) == 1 and t[0] in wanted])

    @property
    def mixed(self) -> np.ndarray:
        return np.array([i for i, t in enumerate(self.topics) if len(t) == 2])

    def truth(self, rows: np.ndarray) -> list[str]:
        return [self.topics[i][0] for i in rows]


def load(embed) -> Corpus:  # type: ignore[no-untyped-def]
    with PATH.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    texts = [r["text"] for r in rows]
    return Corpus(texts, [tuple(r["topics"]) for r in rows], embed(texts))


def topic_of_clusters(found: Discovery, rows: np.ndarray, truth: list[str]) -> dict[int, str]:
    """The majority topic of each cluster's members among ``rows``."""
    out = {}
    for cluster in found.clusters:
        members = Counter(
            t for t, label in zip(truth, found.labels[rows]) if label == cluster.index
        )
        out[cluster.index] = members.most_common(1)[0][0] if members else ""
    return out
