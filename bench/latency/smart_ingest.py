"""Smart-ingest latency at a given store size: ``python -m bench.latency.smart_ingest``.

Builds (or reuses) a store of N synthetic memories from the cached embedded corpus,
then times ``Engine.ingest`` end to end (embedding, nearest neighbours, the gate and
the write) for three kinds of input: novel memories (CREATE), exact repeats of stored
ones (REINFORCE) and stored ones with a number changed (usually SUPERSEDE). The query
embedding alone is timed in the same run for comparison.
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Any

from bench.common import machine_info, md_table, summarize, write_results
from bench.latency.corpus import embedded_corpus, ingest_texts
from bench.latency.stores import WORK_DIR, build_store, isolate_settings, store_url


def _changed_number(text: str) -> str | None:
    match = re.search(r"\d+", text)
    if not match:
        return None
    return text[: match.start()] + str(int(match.group()) + 7) + text[match.end() :]


def run(n: int, samples: int) -> dict[str, Any]:
    import memoryd
    from memoryd.embed import LocalEmbedder

    isolate_settings()
    embedder = LocalEmbedder()
    embedder.load()
    corpus, vectors, _ = embedded_corpus(n, embedder, log=lambda m: None)
    path = WORK_DIR / f"smart-ingest-{n}.db"
    build = build_store(path, corpus, vectors, embedder, log=print)
    fresh = ingest_texts(samples + 5)
    cases: dict[str, list[str]] = {
        "novel": list(fresh.texts[: samples + 5]),
        "repeat": [corpus.texts[i] for i in range(0, n, max(1, n // (samples + 5)))][: samples + 5],
        "changed_number": [t for t in (_changed_number(corpus.texts[i]) for i in range(1, n, 97))
                           if t][: samples + 5],
    }
    out: dict[str, Any] = {"n": n, "samples": samples, "build": build, "cases": {}}
    with memoryd.open(store_url(path), embedder=embedder) as mem:
        for name, texts in cases.items():
            times, decisions = [], {}
            for i, text in enumerate(texts):
                t0 = time.perf_counter()
                result = mem.ingest(text, allow_secrets=True)
                if i >= 5:
                    times.append((time.perf_counter() - t0) * 1000.0)
                    decisions[result.decision] = decisions.get(result.decision, 0) + 1
            out["cases"][name] = {"latency_ms": summarize(times), "decisions": decisions}
        embed_times = []
        for text in cases["novel"]:
            t0 = time.perf_counter()
            embedder.embed([text])
            embed_times.append((time.perf_counter() - t0) * 1000.0)
        out["embedding_only_ms"] = summarize(embed_times[5:])
    out["machine"] = machine_info()
    return out


def render(data: dict[str, Any]) -> str:
    rows = [
        [name, c["latency_ms"]["p50_ms"], c["latency_ms"]["p95_ms"],
         ", ".join(f"{k} {v}" for k, v in sorted(c["decisions"].items()))]
        for name, c in data["cases"].items()
    ]
    rows.append(["query embedding alone", data["embedding_only_ms"]["p50_ms"],
                 data["embedding_only_ms"]["p95_ms"], ""])
    return "\n\n".join([
        "# Smart ingest latency",
        f"`Engine.ingest` end to end on a store of {data['n']:,} synthetic memories "
        f"({data['samples']} timed calls per case after 5 warm-up calls; shared 2-core machine). "
        "Budget (DESIGN.md §6): p50 <= 30 ms at 100k.",
        md_table(["input", "p50 ms", "p95 ms", "decisions"], rows),
        "The decisions are a by-product, not a quality measure: the synthetic corpus recombines "
        "the same templates, names and numbers, so many 'novel' sentences share a subject and a "
        "slot with a stored one and read as corrections to the contradiction detector. Gate "
        "quality is measured on labelled pairs in gating.md.",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()
    data = run(args.n, args.samples)
    write_results("smart_ingest", data, render(data))
    print(render(data))


if __name__ == "__main__":
    main()
