"""Soft assignment measured on labelled memories: which domains memories on one topic and
memories on two topics get, before and after the assignment rule changed.

Data: ``tests/data/domains_corpus.jsonl`` (40 short memories on each of network, home, rust
and cooking, and 10 on two of them) and ``tests/data/domains_corpus_more.jsonl`` (40 on a
fifth topic, finance, and 40 on two topics: four for each of the ten pairs of the five).
"four topics" is the first file, "five topics" both. Vectors: the default ONNX model.

Domains: *discovered* from the one-topic memories as memoryd discovers them (each mapped to
the topic most of its members are on), and the *topic centroids* (each topic's mean vector:
the assignment rule alone, without clustering's mistakes). A *uniform* variant pulls every
vector toward its topics' centroids (``v + 0.8 c``, renormalised), as in a store of very
uniform memories, where one-topic memories score high on their domain.

Rules, each at the threshold it suggests (and at 0.52, the suggestion a corpus of five
uniform topics gave before):
- **before**: every domain scoring at or above the threshold; suggested as the highest
  threshold leaving at most 10% of the memories' *best scores* below it.
- **after**: :mod:`memoryd.domains.assign` as shipped: classified when the memory's strength
  (``sqrt(s1² + s2²)``, its projection on its two best domains) reaches the threshold; its
  best domain and every other scoring at least 0.7 of the best; suggested as the highest
  threshold leaving at most 10% of the *strengths* below it.

Per kind of memory: precision (assigned domains that are the memory's topics), recall (topics
that got their domain), the share with all its topics, with none, with more domains than
topics. *Growth*: domains discovered on the network and cooking memories only, then the home
and rust memories arrive: how many of them are filed under one of the two old domains
(wrongly: re-clustering should propose new domains for them). With ``--beam`` (BEAM
present), also the paired-text measures of bench.domains.

    python -m bench.domains.assignment [--beam]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    BENCH_DIR,
    RESULTS_DIR,
    machine_info,
    md_table,
    other_load,
    write_results,
)
from memoryd.domains.assign import (
    RELATIVE,
    Domain,
    classify_many,
    score_matrix,
    suggest_threshold,
)
from memoryd.domains.discover import discover

DATA = BENCH_DIR.parent / "tests" / "data"
FILES = {"four topics": ["domains_corpus.jsonl"],
         "five topics": ["domains_corpus.jsonl", "domains_corpus_more.jsonl"]}
UNIFORM_PULL = 0.8
ISSUE_THRESHOLD = 0.52
Rule = Callable[[np.ndarray, list[Domain]], list[list[int]]]


def legacy_threshold(best: np.ndarray, max_unclassified: float = 0.10) -> float:
    """The suggestion before: the highest multiple of 0.01 leaving at most 10% of the best
    scores below it."""
    allowed = int(np.floor(max_unclassified * best.size))
    return float(np.floor(round(float(np.sort(best)[allowed]) * 100, 6)) / 100)


def absolute(threshold: float) -> Rule:
    """The rule before: every domain at or above the threshold."""
    return lambda vectors, domains: [list(np.flatnonzero(row >= threshold))
                                     for row in np.round(score_matrix(vectors, domains), 4)]


def shipped(threshold: float, relative: float = RELATIVE) -> Rule:
    def rule(vectors: np.ndarray, domains: list[Domain]) -> list[list[int]]:
        index = {d.id: i for i, d in enumerate(domains)}
        return [[index[d] for d in c.domains]
                for c in classify_many(vectors, domains, threshold, relative)]
    return rule


def sweep(vectors: np.ndarray, domains: list[Domain], names: list[str],
          topics: list[tuple[str, ...]]) -> list[dict[str, Any]]:
    """The shipped rule with other settings (how the defaults sit)."""
    matrix = score_matrix(vectors, domains)
    single = [i for i, t in enumerate(topics) if len(t) == 1]
    mixed = [i for i, t in enumerate(topics) if len(t) == 2]
    out = []
    for share in (0.05, 0.10):
        threshold = suggest_threshold(matrix, share)
        for relative in (0.0, 0.5, 0.6, 0.7, 0.8):
            assigned = shipped(threshold, relative)(vectors, domains)
            out.append({"unclassified_share": share, "relative": relative,
                        "threshold": threshold,
                        "one_topic": scores(assigned, names, topics, single),
                        "two_topics": scores(assigned, names, topics, mixed)})
    return out


def growth(embed: Callable[[list[str]], np.ndarray]) -> dict[str, Any]:
    """Domains found on two topics; memories on two other topics arrive."""
    texts, topics = load(FILES["four topics"])
    vectors = embed(texts)
    first = [i for i, t in enumerate(topics) if t in (("network",), ("cooking",))]
    found = discover(vectors[first], [texts[i] for i in first], force=True)
    domains = [c.as_domain() for c in found.clusters]
    fit = score_matrix(vectors[first], domains)
    arrivals = [i for i, t in enumerate(topics) if t in (("home",), ("rust",))]
    out = {}
    for label, threshold, rule in (("before", legacy_threshold(fit.max(axis=1)), absolute),
                                   ("after", suggest_threshold(fit), shipped)):
        assigned = rule(threshold)(vectors[arrivals], domains)
        out[label] = {"threshold": threshold,
                      "filed": round(float(np.mean([bool(a) for a in assigned])), 3),
                      "n": len(arrivals)}
    return out


def load(files: list[str]) -> tuple[list[str], list[tuple[str, ...]]]:
    rows = [json.loads(line) for name in files
            for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["text"] for r in rows], [tuple(r["topics"]) for r in rows]


def topic_centroids(vectors: np.ndarray, topics: list[tuple[str, ...]]) -> tuple[
        list[Domain], list[str]]:
    names = sorted({t[0] for t in topics if len(t) == 1})
    domains = []
    for name in names:
        mean = vectors[[i for i, t in enumerate(topics) if t == (name,)]].mean(axis=0)
        domains.append(Domain(id=name, label=name, centroid=mean / np.linalg.norm(mean)))
    return domains, names


def discovered(vectors: np.ndarray, texts: list[str], topics: list[tuple[str, ...]]) -> tuple[
        list[Domain], list[str]]:
    single = [i for i, t in enumerate(topics) if len(t) == 1]
    found = discover(vectors[single], [texts[i] for i in single], force=True)
    names = []
    for cluster in found.clusters:
        members = Counter(topics[single[j]][0] for j in np.flatnonzero(found.labels ==
                                                                       cluster.index))
        names.append(members.most_common(1)[0][0] if members else "")
    return [c.as_domain() for c in found.clusters], names


def uniform(vectors: np.ndarray, topics: list[tuple[str, ...]]) -> np.ndarray:
    """Every vector pulled toward the mean of its topics' centroids."""
    domains, names = topic_centroids(vectors, topics)
    by_name = {n: d.centroid for n, d in zip(names, domains)}
    out = np.array([v + UNIFORM_PULL * np.mean([by_name[t] for t in ts], axis=0)
                    for v, ts in zip(vectors, topics)], dtype=np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def scores(assigned: list[list[int]], names: list[str], topics: list[tuple[str, ...]],
           rows: list[int]) -> dict[str, float]:
    """Precision, recall and shares over ``rows``."""
    hit = extra = got_all = got_none = assigned_n = 0
    for i in rows:
        got = {names[k] for k in assigned[i]}
        truth = set(topics[i])
        hit += len(got & truth)
        assigned_n += len(assigned[i])
        got_all += truth <= got
        got_none += not assigned[i]
        extra += len(assigned[i]) > len(truth)
    n = len(rows)
    return {"precision": round(hit / max(assigned_n, 1), 3),
            "recall": round(hit / sum(len(topics[i]) for i in rows), 3),
            "all_topics": round(got_all / n, 3), "none": round(got_none / n, 3),
            "extra": round(extra / n, 3), "n": n}


def measure(vectors: np.ndarray, domains: list[Domain], names: list[str],
            topics: list[tuple[str, ...]]) -> list[dict[str, Any]]:
    """Both rules at their suggested thresholds (and the old rule at 0.52)."""
    matrix = score_matrix(vectors, domains)
    old, new = legacy_threshold(matrix.max(axis=1)), suggest_threshold(matrix)
    single = [i for i, t in enumerate(topics) if len(t) == 1]
    mixed = [i for i, t in enumerate(topics) if len(t) == 2]
    out = []
    for label, threshold, rule in (("before", old, absolute(old)),
                                   ("before at 0.52", ISSUE_THRESHOLD, absolute(ISSUE_THRESHOLD)),
                                   ("after", new, shipped(new)),
                                   ("after at 0.52", ISSUE_THRESHOLD, shipped(ISSUE_THRESHOLD))):
        assigned = rule(vectors, domains)
        out.append({"rule": label, "threshold": threshold,
                    "one_topic": scores(assigned, names, topics, single),
                    "two_topics": scores(assigned, names, topics, mixed)})
    return out


def labelled(embed: Callable[[list[str]], np.ndarray], log: Callable[[str], None]) -> dict:
    results: dict[str, Any] = {}
    for corpus, files in FILES.items():
        texts, topics = load(files)
        vectors = embed(texts)
        for variant, vecs in (("", vectors), (" (uniform)", uniform(vectors, topics))):
            for kind, (domains, names) in (("topic centroids", topic_centroids(vecs, topics)),
                                           ("discovered", discovered(vecs, texts, topics))):
                key = f"{corpus}{variant}, {kind}"
                results[key] = {"domains": names, "rows": measure(vecs, domains, names, topics)}
                if not variant:
                    results[key]["sweep"] = sweep(vecs, domains, names, topics)
                log(f"{key}: {[(r['rule'], r['threshold']) for r in results[key]['rows']]}")
    return results


def beam(log: Callable[[str], None]) -> dict[str, Any] | None:
    """The paired-text measures of bench.domains (mixed_both, same_multi) under both rules."""
    from bench.domains.data import load_corpus, pair_texts
    from bench.domains.threshold import best_domains

    corpus = load_corpus(log)
    if corpus is None:
        return None
    found = discover(corpus.vectors, corpus.texts)
    domains = [c.as_domain() for c in found.clusters]
    pairs = pair_texts(corpus, best_domains(domains, corpus.vectors), 300, 0, log)
    matrix = score_matrix(corpus.vectors, domains)
    out = {}
    for label, threshold, rule in (
            ("before", legacy_threshold(matrix.max(axis=1)), absolute),
            ("after", suggest_threshold(matrix), shipped)):
        assign = rule(threshold)
        messages = assign(corpus.vectors, domains)
        mixed = assign(pairs.mixed_vectors, domains)
        same = assign(pairs.same_vectors, domains)
        both = [set(p) <= set(m) for p, m in zip(pairs.mixed_domains.tolist(), mixed)]
        out[label] = {"threshold": threshold,
                      "unclassified": round(float(np.mean([not m for m in messages])), 3),
                      "multi_domain": round(float(np.mean([len(m) > 1 for m in messages])), 3),
                      "mixed_both": round(float(np.mean(both)), 3),
                      "same_multi": round(float(np.mean([len(s) > 1 for s in same])), 3)}
    return out


def render(results: dict[str, Any]) -> str:
    lines = ["# Domain assignment on labelled memories", "", results["summary"], "",
             f"Machine: {results['machine'].get('cpus', '?')} cores; other load at start "
             f"{results['other_load_cores_at_start']} cores; run took {results['wall_s']} s.", ""]
    head = ["rule", "threshold", "1-topic P", "1-topic R", "1-topic extra", "1-topic none",
            "2-topic P", "2-topic R", "2-topic both", "2-topic none"]
    for key, block in results["labelled"].items():
        lines += [f"## {key}", "", f"Domains: {', '.join(block['domains'])}", ""]
        rows = [[r["rule"], r["threshold"], r["one_topic"]["precision"],
                 r["one_topic"]["recall"], r["one_topic"]["extra"], r["one_topic"]["none"],
                 r["two_topics"]["precision"], r["two_topics"]["recall"],
                 r["two_topics"]["all_topics"], r["two_topics"]["none"]]
                for r in block["rows"]]
        lines += [md_table(head, rows), ""]
        if block.get("sweep"):
            lines += ["The shipped rule with other settings (shipped: at most 10% "
                      "unclassified, relative 0.7):", ""]
            lines += [md_table(["unclassified at most", "relative", *head[1:]],
                               [[r["unclassified_share"], r["relative"], r["threshold"],
                                 r["one_topic"]["precision"], r["one_topic"]["recall"],
                                 r["one_topic"]["extra"], r["one_topic"]["none"],
                                 r["two_topics"]["precision"], r["two_topics"]["recall"],
                                 r["two_topics"]["all_topics"], r["two_topics"]["none"]]
                                for r in block["sweep"]]), ""]
    lines += ["## Growth: two domains, then memories on two new topics", "",
              md_table(["rule", "threshold", "new-topic memories filed under an old domain"],
                       [[k, v["threshold"], v["filed"]] for k, v in results["growth"].items()]),
              ""]
    if results.get("beam"):
        lines += ["## BEAM (paired texts, as in domains.md)", ""]
        lines += [md_table(["rule", "threshold", "unclassified", "multi-domain", "mixed both",
                            "same multi"],
                           [[k, v["threshold"], v["unclassified"], v["multi_domain"],
                             v["mixed_both"], v["same_multi"]]
                            for k, v in results["beam"].items()]), ""]
    return "\n".join(lines)


FINDINGS = Path(__file__).with_name("assignment_findings.md")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--beam", action="store_true", help="also BEAM's paired texts")
    parser.add_argument("--render-only", action="store_true",
                        help="re-write the markdown from the last JSON (findings edited)")
    args = parser.parse_args(argv)
    if args.render_only:
        results = json.loads((RESULTS_DIR / "domains_assignment.json").read_text())
        results["summary"] = FINDINGS.read_text().strip()
        write_results("domains_assignment", results, render(results))
        return
    from memoryd.embed.onnx import OnnxEmbedder

    embedder = OnnxEmbedder.preset("minilm-int8")
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine_info(),
                               "other_load_cores_at_start": other_load()}
    results["labelled"] = labelled(lambda texts: embedder.embed(texts), print)
    results["growth"] = growth(lambda texts: embedder.embed(texts))
    results["beam"] = beam(print) if args.beam else None
    results["wall_s"] = round(time.perf_counter() - started, 1)
    results["summary"] = FINDINGS.read_text().strip() if FINDINGS.exists() else ""
    write_results("domains_assignment", results, render(results))


if __name__ == "__main__":
    main()
