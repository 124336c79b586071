"""How far token estimates are from the real cl100k count, and a fitted estimator.

Texts: BEAM messages (real user/assistant chat, code included; read in place when the
data is present), the blocks of a generated graph as the core renders them, and whole
rendered cores. Counters: ``chars/4``, MiniLM's WordPiece, and the linear estimator of
memoryd.graph.tokens (refitted here: least squares on the even-indexed texts, measured on
the odd ones, then scaled so that 90% of the fitting texts are not under-counted).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.kgraph.generate import NOW, generate_graph, generate_user_graph
from bench.recall.data import chat_path, conversation_dirs, load_messages
from memoryd.graph.core import build_core, node_blocks
from memoryd.graph.tokens import (
    CharsPerTokenCounter,
    EstimateCounter,
    TokenCounter,
    estimate_features,
    get_counter,
)

FEATURES = ("letters", "digits", "symbols", "words", "newlines", "extra_utf8_bytes")
COVERAGE = 0.90


def beam_texts(limit: int | None = None) -> list[str]:
    """Every BEAM message text (empty when the data is absent)."""
    out: list[str] = []
    for conv in conversation_dirs():
        out += [m.content for m in load_messages(chat_path(conv)) if m.content.strip()]
    return out[:limit] if limit else out


def graph_texts(n: int = 2000) -> tuple[list[str], list[str]]:
    """Node blocks of a generated graph, and whole cores rendered at several budgets."""
    graph = generate_graph(n, seed=11, archived_share=0.3)
    blocks = list(
        node_blocks([graph], [(graph.scope, x.id) for x in graph.nodes if not x.archived]).values()
    )
    user = generate_user_graph()
    cores = [
        build_core([user, graph], now=NOW, budget=b, counter=get_counter("cl100k")).text
        for b in (500, 1000, 2000, 5000, 10000)
    ]
    return blocks, cores


def fit_estimator(
    texts: Sequence[str], real: Sequence[int], coverage: float | None = COVERAGE
) -> dict[str, float]:
    """Least-squares coefficients on the features, scaled so that ``coverage`` of the texts
    are not under-counted (``None``: the plain least-squares fit)."""
    x = np.array([[estimate_features(t)[f] for f in FEATURES] + [1.0] for t in texts], dtype=float)
    y = np.array(real, dtype=float)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    predicted = x @ coef
    ratio = np.divide(y, np.maximum(predicted, 1e-9))
    scale = float(np.quantile(ratio, coverage)) if coverage is not None else 1.0
    out = {f: round(float(c) * scale, 4) for f, c in zip(FEATURES, coef[:-1], strict=True)}
    out["intercept"] = round(float(coef[-1]) * scale, 4)
    return out


def errors(estimates: Sequence[int], real: Sequence[int]) -> dict[str, float]:
    """Relative errors of ``estimates`` against ``real`` (texts of >= 5 real tokens)."""
    pairs = [(e, r) for e, r in zip(estimates, real, strict=True) if r >= 5]
    rel = [(e - r) / r for e, r in pairs]
    absolute = sorted(abs(v) for v in rel)
    return {
        "texts": len(pairs),
        "mean_signed_pct": round(100 * statistics.fmean(rel), 2),
        "median_abs_pct": round(100 * statistics.median(absolute), 2),
        "p95_abs_pct": round(100 * absolute[int(0.95 * (len(absolute) - 1))], 2),
        "under_counted_share": round(sum(1 for v in rel if v < 0) / len(rel), 3),
        "total_ratio": round(sum(e for e, _ in pairs) / sum(r for _, r in pairs), 4),
    }


def timed(fn: Callable[[], Any], repeats: int = 3) -> float:
    """Median seconds of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(log: Callable[[str], None], beam_limit: int | None = None) -> dict[str, Any]:
    """Measure every counter against cl100k on each kind of text; refit the estimator."""
    real_counter = get_counter("cl100k")
    beam = beam_texts(beam_limit)
    blocks, cores = graph_texts()
    log(f"tokenizer: {len(beam)} BEAM messages, {len(blocks)} graph blocks, {len(cores)} cores")
    sets = {"beam_messages": beam, "graph_blocks": blocks, "core_texts": cores}
    real = {k: real_counter.count_many(v) for k, v in sets.items()}
    fit_texts = [t for k in ("beam_messages", "graph_blocks") for t in sets[k][0::2]]
    fit_real = [r for k in ("beam_messages", "graph_blocks") for r in real[k][0::2]]
    coefficients = fit_estimator(fit_texts, fit_real)
    counters: dict[str, TokenCounter] = {
        "chars/4": CharsPerTokenCounter(),
        "estimate (shipped)": EstimateCounter(),
        "estimate (refit here)": EstimateCounter(coefficients),
        "estimate (least squares, unscaled)": EstimateCounter(
            fit_estimator(fit_texts, fit_real, None)
        ),
        "minilm": get_counter("minilm"),
    }
    results: dict[str, Any] = {"coefficients_refit": coefficients, "sets": {}, "speed": {}}
    for name, texts in sets.items():
        if not texts:
            continue
        held_out = name != "core_texts"  # measure the estimators on texts they were not fitted on
        idx = range(1, len(texts), 2) if held_out else range(len(texts))
        sub, sub_real = [texts[i] for i in idx], [real[name][i] for i in idx]
        results["sets"][name] = {
            "held_out_half": held_out,
            "real_tokens": sum(sub_real),
            **{c: errors(counter.count_many(sub), sub_real) for c, counter in counters.items()},
        }
    speed_texts = (beam[:2000] or []) + blocks
    chars = sum(len(t) for t in speed_texts)
    for name, counter in {"cl100k": real_counter, **counters}.items():
        seconds = timed(lambda c=counter: c.count_many(speed_texts))
        results["speed"][name] = {
            "texts": len(speed_texts),
            "us_per_text": round(1e6 * seconds / len(speed_texts), 2),
            "mb_per_s": round(chars / seconds / 1e6, 2),
        }
    return results
