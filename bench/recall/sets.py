"""The three kinds of data the ranking is measured on, in one shape, with their vectors.

- ``beam``: BEAM development data (20 user/assistant conversations; :mod:`bench.recall.data`),
- ``realtalk``: REALTALK (6 real two-person chats; :mod:`bench.recall.realtalk`),
- ``agent``: the project's own agent memories (many small stores of facts, preferences,
  decisions; :mod:`bench.recall.agent`).

Each is a list of :class:`~bench.recall.data.Conversation` (one store each; one memory per
message). Vectors come from the shipped embedder (ONNX int8 MiniLM), one pass per distinct
text, cached under ``bench/.cache/recall`` (:class:`bench.recall.embedding.VectorTable`).
BEAM and REALTALK are read in place from ``../shared/data``; a data set that is absent is
left out with a message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from bench.recall import agent, realtalk
from bench.recall import data as beam
from bench.recall.embedding import VectorCache, VectorTable
from bench.recall.negatives import UNRELATED_QUERIES

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / "bench" / ".cache" / "recall"
NAMES = ("beam", "realtalk", "agent")

Log = Callable[[str], None]


def load_set(name: str) -> list[beam.Conversation]:
    """One data set's stores (an empty list when its data is absent)."""
    if name == "beam":
        convs = [beam.load_conversation(d) for d in beam.conversation_dirs()]
        for c in convs:
            c.messages = [m for m in c.messages if m.content.strip()]
            c.questions = [q for q in c.questions if q.question.strip()]
        return convs
    if name == "realtalk":
        return realtalk.load_realtalk()
    if name == "agent":
        return agent.load_agent()
    raise ValueError(f"unknown data set {name!r} (known: {', '.join(NAMES)})")


def load_sets(names: Sequence[str], log: Log) -> dict[str, list[beam.Conversation]]:
    """The named data sets that are present."""
    out = {}
    for name in names:
        convs = load_set(name)
        if not convs:
            log(f"{name}: data not found, left out")
            continue
        log(f"{name}: {len(convs)} stores, {sum(len(c.messages) for c in convs)} memories, "
            f"{sum(len(c.questions) for c in convs)} questions")
        out[name] = convs
    return out


def vector_table(log: Log, cache_dir: Path | None = CACHE_DIR) -> VectorTable:
    """A vector table over the shipped model's float path (ONNX MiniLM with int8 weights, as
    bulk writes run it; bench.recall.query_int8 measures the int8 copy short calls run) and
    the on-disk cache, whose vectors are all the float path's."""
    from memoryd.embed.onnx import PRESETS, OnnxEmbedder

    spec = PRESETS["minilm-int8"]
    embedder = OnnxEmbedder(spec.onnx_path, spec.tokenizer_path, model_id=spec.model_id,
                            dims=spec.dims, max_tokens=spec.max_tokens)
    embedder.load()
    return VectorTable(embedder, VectorCache(cache_dir), log)  # type: ignore[arg-type]


def embed_sets(sets: dict[str, list[beam.Conversation]], table: VectorTable,
               extra: Callable[[beam.Conversation], list[str]] | None = None) -> None:
    """Embed every message and question of ``sets`` (and ``extra(conversation)`` texts)."""
    table.ensure(list(UNRELATED_QUERIES), "unrelated queries")
    for name, convs in sets.items():
        table.ensure([q.question for c in convs for q in c.questions], f"{name} questions")
        table.ensure([m.content for c in convs for m in c.messages], f"{name} memories")
        if extra is not None:
            table.ensure([t for c in convs for t in extra(c)], f"{name} context texts")


if __name__ == "__main__":  # pragma: no cover - warm the cache: python -m bench.recall.sets
    import sys
    import time

    started = time.perf_counter()

    def _log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {message}", flush=True)

    wanted = sys.argv[1].split(",") if len(sys.argv) > 1 else list(NAMES)
    embed_sets(load_sets(wanted, _log), vector_table(_log))
