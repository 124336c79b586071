"""BEAM-derived gating pairs, stored as references only and resolved at run time.

The BEAM data (licence not stated upstream) is never copied into the project:
``tests/data/ingest_pairs_beam.jsonl`` holds conversation numbers, message ids and labels,
and the texts are read from ``$MEMORYD_BEAM_DIR`` or ``<repo>/../shared/data/beam`` when the
benchmark runs. Everything here returns nothing when the data is absent.

Pairs (``python -m bench.gating.beam`` rewrites the reference file, deterministically):

* ``knowledge_update`` probing questions -> label ``update``
  (``source_chat_ids = {"original_info": [...], "updated_info": [...]}``);
* ``contradiction_resolution`` probing questions -> label ``contradiction``
  (``{"first_statement": [...], "second_statement": [...]}``; the earlier message is "old");
  pairs whose two sides are the same message are skipped;
* two random pairs of user messages per conversation that no probing question cites ->
  label ``new`` (seeded), so that the BEAM set also measures false alarms.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
REFS_PATH = REPO_ROOT / "tests" / "data" / "ingest_pairs_beam.jsonl"
TRACK = "100K"
_ABILITIES = {"knowledge_update": "update", "contradiction_resolution": "contradiction"}


def beam_dir() -> Path:
    """``$MEMORYD_BEAM_DIR`` or ``<repo>/../shared/data/beam``."""
    explicit = os.environ.get("MEMORYD_BEAM_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return REPO_ROOT.parent / "shared" / "data" / "beam"


def available(root: Path | None = None) -> bool:
    """Whether the BEAM conversations are present."""
    return ((root or beam_dir()) / TRACK).is_dir()


def load_messages(conv: int, root: Path | None = None) -> dict[int, dict[str, Any]]:
    """Message id -> message dict of one conversation (chat_trunecated.json preferred)."""
    base = (root or beam_dir()) / TRACK / str(conv)
    path = base / "chat_trunecated.json"
    if not path.exists():
        path = base / "chat.json"
    out: dict[int, dict[str, Any]] = {}
    for batch in json.loads(path.read_text(encoding="utf-8")):
        for turn in batch["turns"]:
            for message in turn:
                out[int(message["id"])] = message
    return out


def _flatten(ids: Any) -> list[int]:
    """Message ids of a ``source_chat_ids`` value (a list, a dict of lists, nested lists)."""
    if ids is None:
        return []
    if isinstance(ids, dict):
        return [i for v in ids.values() for i in _flatten(v)]
    if isinstance(ids, (list, tuple)):
        return [i for v in ids for i in _flatten(v)]
    try:
        return [int(ids)]
    except (TypeError, ValueError):
        return []


def make_refs(root: Path | None = None, seed: int = 20240315) -> list[dict[str, Any]]:
    """Build the reference list (ids and labels only) from the probing questions."""
    root = root or beam_dir()
    rng = random.Random(seed)
    refs: list[dict[str, Any]] = []
    convs = sorted(int(p.name) for p in (root / TRACK).iterdir() if p.name.isdigit())
    for conv in convs:
        pq_path = root / TRACK / str(conv) / "probing_questions" / "probing_questions.json"
        questions = json.loads(pq_path.read_text(encoding="utf-8"))
        cited: set[int] = set()
        for ability_questions in questions.values():
            for q in ability_questions:
                cited.update(_flatten(q.get("source_chat_ids")))
        for ability, label in _ABILITIES.items():
            for index, q in enumerate(questions.get(ability, [])):
                ids = q.get("source_chat_ids")
                if not isinstance(ids, dict) or len(ids) != 2:
                    continue
                first, second = (sorted(set(_flatten(v))) for v in ids.values())
                if not first or not second or set(first) == set(second):
                    continue
                old, new = (first, second) if min(first) <= min(second) else (second, first)
                refs.append({"id": f"beam-{conv}-{ability}-{index}", "conv": conv,
                             "old_ids": old, "new_ids": new, "label": label,
                             "ability": ability, "origin": "beam"})
        messages = load_messages(conv, root)
        users = [i for i, m in sorted(messages.items())
                 if m.get("role") == "user" and i not in cited and len(m.get("content", "")) > 80]
        for k in range(2):
            a, b = sorted(rng.sample(users, 2))
            refs.append({"id": f"beam-{conv}-random-{k}", "conv": conv, "old_ids": [a],
                         "new_ids": [b], "label": "new", "ability": "random_pair",
                         "origin": "beam"})
    return refs


def read_refs(path: Path = REFS_PATH) -> list[dict[str, Any]]:
    """The stored references (empty list if the file is missing)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.S)
_INDEX_MARK = re.compile(r"\s*->->\s*[\d,\s]*$", re.M)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])|\n+")


def clean(text: str) -> str:
    """Message text without code blocks and BEAM's ``->-> n,m`` index marks."""
    return _INDEX_MARK.sub("", _CODE_BLOCK.sub(" ", text)).strip()


def sentences(text: str, min_words: int = 4) -> list[str]:
    """Prose sentences of a message (code removed), at least ``min_words`` words each."""
    out = []
    for part in _SENTENCE.split(clean(text)):
        part = part.strip(" -*#>\t")
        if len(part.split()) >= min_words:
            out.append(part)
    return out


def resolve(refs: list[dict[str, Any]], root: Path | None = None) -> list[dict[str, Any]]:
    """Attach the message texts to each reference: ``old_texts`` / ``new_texts`` lists
    (cleaned). Returns [] when the data is absent; references to missing ids are dropped."""
    if not refs or not available(root):
        return []
    cache: dict[int, dict[int, dict[str, Any]]] = {}
    out = []
    for ref in refs:
        conv = int(ref["conv"])
        if conv not in cache:
            try:
                cache[conv] = load_messages(conv, root)
            except FileNotFoundError:
                cache[conv] = {}
        messages = cache[conv]
        old = [clean(messages[i]["content"]) for i in ref["old_ids"] if i in messages]
        new = [clean(messages[i]["content"]) for i in ref["new_ids"] if i in messages]
        if old and new:
            out.append({**ref, "old_texts": old, "new_texts": new})
    return out


def main() -> None:
    """Rewrite tests/data/ingest_pairs_beam.jsonl from the BEAM probing questions."""
    if not available():
        raise SystemExit(f"BEAM data not found under {beam_dir()}")
    refs = make_refs()
    REFS_PATH.parent.mkdir(parents=True, exist_ok=True)
    with REFS_PATH.open("w", encoding="utf-8") as f:
        for ref in refs:
            f.write(json.dumps(ref) + "\n")
    print(f"wrote {len(refs)} references to {REFS_PATH}")


if __name__ == "__main__":
    main()
