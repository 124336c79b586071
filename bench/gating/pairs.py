"""The labelled gate pairs with real similarities, and the gate run on them.

Three sets, each item ``{"id", "old", "new", "expected", "similarity", "set", ...}``:

* ``gate``: ``tests/data/gate_pairs.jsonl``, agent memories in five classes (duplicate,
  rephrase, new_value, contradiction, distinct) over twelve topics. The gate's thresholds are
  fitted on :data:`FIT_TOPICS` and reported on the others (``gate_fit`` / ``gate_held``).
* ``fresh``: ``tests/data/gate_pairs_fresh.jsonl``, 60 more pairs of the same kind written
  after the gate was built and measured as written (nothing was changed after seeing them).
* ``earlier``: ``tests/data/ingest_pairs.jsonl``, the pairs the contradiction detector was
  first built on (labels duplicate, update, new_value, contradiction, new).
* ``beam_message`` / ``beam_sentence``: BEAM knowledge updates, contradictions and random
  pairs (:mod:`bench.gating.beam`; texts read at run time, skipped when absent), as whole
  messages and as their closest sentence pair.

Similarities are cosines of the default embedder (all-MiniLM-L6-v2, int8, ONNX Runtime: what
the engine compares by), cached in ``bench/.cache/gating_pairs.json`` keyed by the data files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from bench.gating import beam
from memoryd.cognition import contradiction, gating, novelty

REPO_ROOT = Path(__file__).resolve().parents[2]
GATE_PATH = REPO_ROOT / "tests" / "data" / "gate_pairs.jsonl"
FRESH_PATH = REPO_ROOT / "tests" / "data" / "gate_pairs_fresh.jsonl"
EARLIER_PATH = REPO_ROOT / "tests" / "data" / "ingest_pairs.jsonl"
CACHE = REPO_ROOT / "bench" / ".cache" / "gating_pairs.json"
FIT_TOPICS = frozenset({"infra", "dev", "prefs", "decisions", "people", "schedule"})
EARLIER_EXPECTED = {"duplicate": "reinforce", "update": "update", "new_value": "supersede",
                    "contradiction": "supersede", "new": "create"}
BEAM_EXPECTED = {"update": "supersede", "contradiction": "supersede", "new": "create"}
DEV_CONVERSATIONS = 10  # BEAM conversations 1-10 were inspected while building the detector

Embed = Callable[[list[str]], Any]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _similarities(pairs: list[dict[str, Any]], embed: Embed) -> list[float]:
    old = np.asarray(embed([p["old"] for p in pairs]))
    new = np.asarray(embed([p["new"] for p in pairs]))
    return [float(s) for s in (old * new).sum(axis=1)]


def _gate_set(embed: Embed, path: Path = GATE_PATH, name: str = "gate") -> list[dict[str, Any]]:
    pairs = _lines(path)
    return [{**p, "similarity": s, "set": name} for p, s in zip(pairs, _similarities(pairs, embed))]


def _earlier_set(embed: Embed) -> list[dict[str, Any]]:
    pairs = _lines(EARLIER_PATH)
    return [{**p, "expected": EARLIER_EXPECTED[p["label"]], "similarity": s, "set": "earlier",
             "change": "value" if p["label"] in ("new_value", "contradiction") else None}
            for p, s in zip(pairs, _similarities(pairs, embed))]


def _beam_sets(embed: Embed) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    resolved = beam.resolve(beam.read_refs())
    if not resolved:
        return [], []
    messages = sorted({t for r in resolved for t in r["old_texts"] + r["new_texts"]})
    sentence_lists = {m: beam.sentences(m) or [m] for m in messages}
    sentences = sorted({s for v in sentence_lists.values() for s in v})
    vec = dict(zip(messages, np.asarray(embed(messages))))
    svec = dict(zip(sentences, np.asarray(embed(sentences))))
    by_message, by_sentence = [], []
    for r in resolved:
        base = {"id": r["id"], "label": r["label"], "expected": BEAM_EXPECTED[r["label"]],
                "change": "value" if r["label"] != "new" else None, "conv": r["conv"]}
        best = max((float(vec[o] @ vec[n]), o, n) for o in r["old_texts"] for n in r["new_texts"])
        by_message.append({**base, "old": best[1], "new": best[2], "similarity": best[0],
                           "set": "beam_message"})
        olds = [s for m in r["old_texts"] for s in sentence_lists[m]]
        news = [s for m in r["new_texts"] for s in sentence_lists[m]]
        sims = np.stack([svec[s] for s in olds]) @ np.stack([svec[s] for s in news]).T
        i, j = np.unravel_index(int(np.argmax(sims)), sims.shape)
        by_sentence.append({**base, "old": olds[i], "new": news[j],
                            "similarity": float(sims[i, j]), "set": "beam_sentence"})
    return by_message, by_sentence


def make_embed() -> tuple[Embed, str]:
    """``texts -> unit vectors`` with the default embedder of the default settings."""
    from memoryd.config import Settings
    from memoryd.embed import make_embedder

    embedder = make_embedder(Settings())
    return embedder.embed, f"{embedder.model_id} ({type(embedder).__name__})"


def scored_sets() -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """(model id, set name -> items with similarities); cached by the data files."""
    parts = [b"onnx-default", GATE_PATH.read_bytes(), FRESH_PATH.read_bytes(),
             EARLIER_PATH.read_bytes(),
             beam.REFS_PATH.read_bytes() if beam.REFS_PATH.exists() else b"",
             str(beam.available()).encode(), Path(beam.__file__).read_bytes()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()
    if CACHE.exists():
        cached = json.loads(CACHE.read_text())
        if cached.get("key") == key:
            return cached["model"], cached["sets"]
    embed, model_id = make_embed()
    beam_message, beam_sentence = _beam_sets(embed)
    sets = {"gate": _gate_set(embed), "fresh": _gate_set(embed, FRESH_PATH, "fresh"),
            "earlier": _earlier_set(embed),
            "beam_message": beam_message, "beam_sentence": beam_sentence}
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps({"key": key, "model": model_id, "sets": sets}))
    return model_id, sets


def split(sets: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The reported sets: the gate pairs whole, its fit and held-out topics, and the rest."""
    gate_pairs = sets["gate"]
    out = {"gate": gate_pairs,
           "gate_fit": [p for p in gate_pairs if p["topic"] in FIT_TOPICS],
           "gate_held": [p for p in gate_pairs if p["topic"] not in FIT_TOPICS],
           "fresh": sets["fresh"], "earlier": sets["earlier"]}
    if sets["beam_sentence"]:
        out["beam_message"] = sets["beam_message"]
        out["beam_sentence"] = sets["beam_sentence"]
        out["beam_sentence_held"] = [p for p in sets["beam_sentence"]
                                     if p["conv"] > DEV_CONVERSATIONS]
    return out


@cache
def cached_detect(old: str, new: str) -> contradiction.Contradiction:
    return contradiction.detect(old, new)


@cache
def cached_compare(old: str, new: str) -> novelty.Comparison:
    return novelty.compare(old, new)


def gate(item: dict[str, Any], params: gating.GatingParams) -> gating.GateDecision:
    """The real ``gating.decide`` on one pair (one stored candidate)."""
    candidate = gating.Candidate("old", item["old"], item["similarity"])
    return gating.decide(item["new"], [candidate], params, detector=cached_detect,
                         comparer=cached_compare)
