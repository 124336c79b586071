"""Retrieval-quality benchmark of memoryd on BEAM development data (100K track).

    .venv/bin/python -m bench.recall --chunks   # full run as published (20 conversations)
    .venv/bin/python -m bench.recall            # same without the chunked-embedding variants
    .venv/bin/python -m bench.recall --quick    # smoke run (3 conversations)
    python bench/recall/run.py --help

Each conversation gets a fresh store; every message becomes one memory (added with
``Engine.add_many``); every probing question with evidence is asked with ``Engine.search``
in keyword, vector and hybrid mode. Tuning variants reuse the same embeddings and the same
store's FTS5 index. Results: bench/results/recall_tuning.json and bench/results/recall_tuning.md
(bench/results/recall.{json,md} come from the ranking bench, bench/recall/ranking.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `python bench/recall/run.py`
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402

from bench.recall import data as beam  # noqa: E402
from bench.recall import metrics as M  # noqa: E402
from bench.recall.embedding import (  # noqa: E402
    CONTEXT_CHARS,
    MAX_CHUNKS,
    WINDOW_TOKENS,
    PrecomputedEmbedder,
    VectorCache,
    VectorTable,
    chunk_texts,
    context_text,
    date_text,
    neighbours,
    token_counts,
    tokenizer,
)
from bench.recall.fusion import effective_pool, rrf  # noqa: E402
from bench.recall.lexical import (  # noqa: E402
    BM25_WEIGHTS,
    FTS5_B,
    FTS5_K1,
    BM25Emulator,
    KeywordRunner,
    expressions,
)

MODES = ("keyword", "vector", "hybrid")
LIMIT = 10
DEPTH = 200  # depth of the keyword candidate lists kept for tuning
QUICK_CONVERSATIONS = 3
MAX_CONTENT_BYTES = 1 << 20  # the bench raises memoryd's 64 KiB limit (one BEAM message is 341 KiB)

# Settings recommended from the tuning below; override with --recommended "rrf_k=10,vector_weight=2".
# Engine.search also runs with a second set of settings ("hybrid:alt"): these when they differ
# from the engine's defaults, else memoryd's defaults before this tuning (plain RRF, k=60).
RECOMMENDED_SETTINGS: dict[str, Any] = {"rrf_k": 5, "vector_weight": 2.0}
PREVIOUS_DEFAULTS: dict[str, Any] = {"rrf_k": 60, "keyword_weight": 1.0, "vector_weight": 1.0,
                                     "candidate_pool": 50}

# Tuning grids
RRF_KS = (1, 2, 5, 10, 20, 40, 60, 100)
WEIGHTS = ((1.0, 1.0), (1.5, 1.0), (2.0, 1.0), (3.0, 1.0), (1.0, 1.5), (1.0, 2.0), (1.0, 3.0), (1.0, 4.0))
POOLS = (20, 50, 100, 200)
GRID_POOLS = (20, 50, 100)
CONTENT_WEIGHTS = (0.25, 0.5, 2.0, 4.0)  # FTS5 content weight w ranks like BM25 with k1 = 1.2 / w
BM25_K1S = (0.3, 0.6, 0.9, 1.2, 1.8, 2.4, 3.6, 5.0)
BM25_BS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)

_started = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


# --------------------------------------------------------------------------- records


@dataclass
class QRec:
    """One question with evidence and every ranked list the experiments need."""

    conv: int
    ability: str
    index: int
    question: str
    evidence: list[str]
    groups: dict[str, list[str]]
    engine: dict[str, list[str]] = field(default_factory=dict)  # mode -> Engine.search top 10
    kw: dict[str, list[str]] = field(default_factory=dict)  # keyword variant -> ranked ids
    vec: dict[str, list[str]] = field(default_factory=dict)  # vector variant -> full ranking
    bm25: dict[tuple[float, float], list[str]] = field(default_factory=dict)  # (k1, b) -> ranked


Ranker = Callable[[QRec], Sequence[str]]


def evaluate(recs: Sequence[QRec], ranker: Ranker) -> dict[str, Any]:
    rows = []
    for r in recs:
        ranked = list(ranker(r))[:LIMIT]
        rows.append({"ability": r.ability, "metrics": M.question_metrics(ranked, r.evidence), "ranked": ranked})
    return {"by_ability": M.aggregate(rows), "rows": rows}


def selection_score(m: dict[str, float]) -> float:
    """How configurations are compared: mean of hit@5, hit@10 and recall@10."""
    return (m["hit@5"] + m["hit@10"] + m["recall@10"]) / 3


def paired(base_rows: list[dict], rows: list[dict], metric: str) -> dict[str, Any]:
    wins = sum(1 for a, b in zip(base_rows, rows) if b["metrics"][metric] > a["metrics"][metric])
    losses = sum(1 for a, b in zip(base_rows, rows) if b["metrics"][metric] < a["metrics"][metric])
    return {"wins": wins, "losses": losses, "p_sign": round(M.sign_test(wins, losses), 4)}


def rounded(d: dict[str, float], digits: int = 4) -> dict[str, float]:
    return {k: round(v, digits) for k, v in d.items()}


# --------------------------------------------------------------------------- preparation


def prepare_texts(convs: list[beam.Conversation], tok, with_chunks: bool) -> dict[str, Any]:
    """Token counts, variant texts and chunk texts for every message."""
    prep: dict[str, Any] = {}
    for c in convs:
        msgs = c.messages
        counts = token_counts(tok, [m.content for m in msgs])
        nb = neighbours(msgs)
        ctx = [
            context_text(m, p, n) if counts[i] < WINDOW_TOKENS else None  # None: same as plain
            for i, (m, (p, n)) in enumerate(zip(msgs, nb))
        ]
        chunks = [
            chunk_texts(tok, m.content)[1:] if with_chunks and counts[i] > WINDOW_TOKENS else []
            for i, m in enumerate(msgs)
        ]
        prep[c.number] = {
            "tokens": counts,
            "plain": [m.content for m in msgs],
            "date": [date_text(m) for m in msgs],
            "ctx": ctx,
            "chunks": chunks,
        }
    return prep


def truncation_stats(convs: list[beam.Conversation], prep: dict[str, Any]) -> dict[str, Any]:
    """How much of the message text MiniLM's 256-token window cuts off."""
    tokens, roles, evidence_tokens, evidence_roles = [], [], [], []
    for c in convs:
        counts = prep[c.number]["tokens"]
        tokens.extend(counts.tolist())
        roles.extend(m.role for m in c.messages)
        pos = {m.id: i for i, m in enumerate(c.messages)}
        ev = {i for q in c.questions for i in q.evidence if i in pos}
        evidence_tokens.extend(int(counts[pos[i]]) for i in ev)
        evidence_roles.extend(c.messages[pos[i]].role for i in ev)
    t = np.asarray(tokens)
    out: dict[str, Any] = {
        "window_word_pieces": WINDOW_TOKENS,
        "messages": int(len(t)),
        "median_tokens": float(np.median(t)),
        "p90_tokens": float(np.percentile(t, 90)),
        "max_tokens": int(t.max()),
        "share_messages_truncated": round(float((t > WINDOW_TOKENS).mean()), 4),
        "share_tokens_cut": round(float(np.maximum(t - WINDOW_TOKENS, 0).sum() / t.sum()), 4),
        "by_role": {},
    }
    for role in sorted(set(roles)):
        r = t[np.asarray(roles) == role]
        out["by_role"][role] = {
            "messages": int(len(r)),
            "median_tokens": float(np.median(r)),
            "share_truncated": round(float((r > WINDOW_TOKENS).mean()), 4),
            "share_tokens_cut": round(float(np.maximum(r - WINDOW_TOKENS, 0).sum() / r.sum()), 4),
        }
    e = np.asarray(evidence_tokens)
    out["evidence_messages"] = {
        "messages": int(len(e)),
        "median_tokens": float(np.median(e)) if len(e) else None,
        "share_truncated": round(float((e > WINDOW_TOKENS).mean()), 4) if len(e) else None,
        "by_role": {r: evidence_roles.count(r) for r in sorted(set(evidence_roles))},
    }
    return out


def vector_matrices(c: beam.Conversation, p: dict[str, Any], table: VectorTable,
                    with_chunks: bool) -> dict[str, Any]:
    """Per-variant message matrices (rows in message order); chunk matrix with owners."""
    plain = table.matrix(p["plain"])
    ctx = np.stack([table[t] if t is not None else plain[i] for i, t in enumerate(p["ctx"])])
    mats: dict[str, Any] = {"plain": plain, "ctx": ctx, "date": table.matrix(p["date"])}
    if with_chunks:
        rows, owners, means = [], [], []
        for i, extra in enumerate(p["chunks"]):
            block = np.vstack([plain[i : i + 1]] + ([table.matrix(extra)] if extra else []))
            rows.append(block)
            owners.extend([i] * len(block))
            mean = block.mean(axis=0)
            means.append(mean / np.linalg.norm(mean))
        mats["chunk_mean"] = np.stack(means).astype(np.float32)
        mats["chunk_rows"] = np.vstack(rows).astype(np.float32)
        mats["chunk_owner_starts"] = np.flatnonzero(np.r_[True, np.diff(np.asarray(owners)) != 0])
    return mats


def vector_ranking(mats: dict[str, Any], name: str, q: np.ndarray, ids: list[str]) -> list[str]:
    if name == "chunk_max":
        sims_rows = mats["chunk_rows"] @ q
        sims = np.maximum.reduceat(sims_rows, mats["chunk_owner_starts"])
    else:
        sims = mats[name] @ q
    order = np.argsort(-sims, kind="stable")
    return [ids[i] for i in order]


# --------------------------------------------------------------------------- per conversation


def _accepts(func: Callable[..., Any], name: str) -> bool:
    """Whether ``func`` takes keyword ``name`` (memoryd's API grows while this bench exists)."""
    import inspect

    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def run_conversation(
    c: beam.Conversation,
    p: dict[str, Any],
    table: VectorTable,
    workdir: Path,
    with_chunks: bool,
    checks: dict[str, int],
    recommended: dict[str, Any],
) -> tuple[list[QRec], dict[str, Any]]:
    import memoryd
    from memoryd.models import SearchFilters

    t0 = time.perf_counter()
    db_path = (workdir / f"c{c.number}.db").resolve()
    url = f"sqlite://{db_path}"  # sqlite:///abs/path.db
    embedder = PrecomputedEmbedder(table)
    engine = memoryd.open(url, embedder=embedder, max_content_bytes=MAX_CONTENT_BYTES)
    items = [
        {
            "id": str(m.id),
            "content": m.content,
            "node_type": "message",
            "session_id": str(m.session),
            "created_at": m.created_at,
            "metadata": {"message_id": m.id, "role": m.role},
        }
        for m in c.messages
        if m.content.strip()
    ]
    add_kwargs = {"allow_secrets": True} if _accepts(engine.add_many, "allow_secrets") else {}
    engine.add_many(items, **add_kwargs)  # coding chats hold example passwords; store them as-is
    t_index = time.perf_counter() - t0
    ids = [str(m.id) for m in c.messages]
    mats = vector_matrices(c, p, table, with_chunks)
    vec_names = ["plain", "ctx", "date"] + (["chunk_mean", "chunk_max"] if with_chunks else [])
    settings = {
        "rrf_k": engine.settings.rrf_k,
        "keyword_weight": engine.settings.keyword_weight,
        "vector_weight": engine.settings.vector_weight,
        "candidate_pool": engine.settings.candidate_pool,
    }

    # Engine.search as shipped (defaults), never recording accesses so that questions do not
    # influence each other; plus the bare fusion ("raw") and each later stage on its own.
    base_kwargs = {"record_access": False} if _accepts(engine.search, "record_access") else {}
    from memoryd.engine import Engine

    if all(getattr(engine.settings, k) == v for k, v in recommended.items()):
        compare = {"name": "previous defaults", "settings": PREVIOUS_DEFAULTS}
    else:
        compare = {"name": "recommended", "settings": recommended}
    tuned = Engine(engine.store, embedder, engine.settings.model_copy(update=compare["settings"]))
    search_plan: dict[str, tuple[Any, str, dict[str, Any]]] = {m: (engine, m, {}) for m in MODES}
    search_plan["hybrid:alt"] = (tuned, "hybrid", {})
    stages = [s for s in ("cognitive", "associations") if _accepts(engine.search, s)]
    if stages:
        off = {s: False for s in stages}
        for m in MODES:
            search_plan[f"{m}:raw"] = (engine, m, off)
        for s in stages:
            search_plan[f"hybrid:{s}_only"] = (engine, "hybrid", {**off, s: True})
        search_plan["hybrid:alt:raw"] = (tuned, "hybrid", off)
    runner = KeywordRunner(db_path)
    emulator = BM25Emulator(db_path)
    from memoryd.retrieval.fts import query_terms

    recs: list[QRec] = []
    t1 = time.perf_counter()
    for q in c.questions:
        if not q.evidence or not q.question.strip():
            continue
        r = QRec(
            conv=c.number,
            ability=q.ability,
            index=q.index,
            question=q.question,
            evidence=[str(i) for i in q.evidence],
            groups={k: [str(i) for i in v] for k, v in q.evidence_groups.items()},
        )
        qvec = table[q.question]
        for label, (eng, mode, extra) in search_plan.items():
            hits = eng.search(q.question, limit=LIMIT, mode=mode, query_vector=qvec,
                                 **base_kwargs, **extra)
            r.engine[label] = [str(h.memory.metadata["message_id"]) for h in hits]
        # keyword side: the store's own candidate list, and variants through its FTS5 index
        store_list = [
            h.memory_id
            for h in engine.store.keyword_search(q.question, SearchFilters(), now=engine.clock(), limit=DEPTH)
        ]
        ex = expressions(q.question)
        r.kw["or"] = [m for m, _ in runner.search(ex["or"], limit=DEPTH)]
        checks["keyword_store_vs_runner_same"] += int(store_list == r.kw["or"])
        r.kw["or_stop"] = [m for m, _ in runner.search(ex["or_stop"], limit=DEPTH)]
        r.kw["and"] = [m for m, _ in runner.search(ex["and"], limit=DEPTH)]
        seen = set(r.kw["and"])
        r.kw["and_then_or"] = r.kw["and"] + [m for m in r.kw["or"] if m not in seen]
        r.kw["weights_1_1_1"] = [m for m, _ in runner.search(ex["or"], weights=(1.0, 1.0, 1.0), limit=DEPTH)]
        for w in CONTENT_WEIGHTS:
            weights = (w,) + tuple(BM25_WEIGHTS[1:])
            r.kw[f"content_w{w:g}"] = [m for m, _ in runner.search(ex["or"], weights=weights, limit=DEPTH)]
        # BM25 with free k1/b, emulated over the same tokens
        terms = query_terms(q.question) or query_terms(q.question, keep_stopwords=True)
        prepared = emulator.matrix(terms)
        for k1 in BM25_K1S:
            for b in BM25_BS:
                r.bm25[(k1, b)] = emulator.rank(prepared, k1, b, limit=DEPTH)
        checks["bm25_emulation_top10_same"] += int(r.bm25[(FTS5_K1, FTS5_B)][:LIMIT] == r.kw["or"][:LIMIT])
        # vector side: full rankings per embedding variant
        for name in vec_names:
            r.vec[name] = vector_ranking(mats, name, qvec, ids)
        raw = ":raw" if "hybrid:raw" in r.engine else ""
        checks["vector_numpy_vs_engine_top10_same"] += int(r.vec["plain"][:LIMIT] == r.engine[f"vector{raw}"])
        checks["hybrid_fusion_vs_engine_top10_same"] += int(
            rrf(r.kw["or"], r.vec["plain"], k=settings["rrf_k"], keyword_weight=settings["keyword_weight"],
                vector_weight=settings["vector_weight"], pool=effective_pool(settings["candidate_pool"]))
            == r.engine[f"hybrid{raw}"]
        )
        checks["keyword_engine_vs_list_top10_same"] += int(r.kw["or"][:LIMIT] == r.engine[f"keyword{raw}"])
        checks["questions"] += 1
        recs.append(r)
    runner.close()
    emulator.close()
    engine.close()
    info = {
        "conversation": c.number,
        "chat_file": c.chat_file,
        "messages": len(c.messages),
        "indexed": len(items),
        "sessions": len(c.sessions),
        "questions": len(c.questions),
        "questions_with_evidence": len(recs),
        "index_seconds": round(t_index, 2),
        "search_seconds": round(time.perf_counter() - t1, 2),
        "embedder_misses": embedder.misses,
        "settings": settings,
        "compare": compare,
    }
    return recs, info


# --------------------------------------------------------------------------- experiments


def run_experiments(recs: list[QRec], settings: dict[str, Any], with_chunks: bool,
                    recommended: dict[str, Any], compare: dict[str, Any]) -> dict[str, Any]:
    base_cfg = {"kw": "or", "vec": "plain", "k": settings["rrf_k"], "wk": settings["keyword_weight"],
                "wv": settings["vector_weight"], "pool": settings["candidate_pool"]}

    def hybrid(cfg: dict[str, Any]) -> Ranker:
        def rank(r: QRec) -> list[str]:
            kw = r.bm25[cfg["kw"]] if isinstance(cfg["kw"], tuple) else r.kw[cfg["kw"]]
            return rrf(kw, r.vec[cfg["vec"]], k=cfg["k"], keyword_weight=cfg["wk"],
                       vector_weight=cfg["wv"], pool=effective_pool(cfg["pool"]))
        return rank

    results: list[dict[str, Any]] = []
    evaluated: dict[str, dict[str, Any]] = {}

    def add(name: str, group: str, description: str, ranker: Ranker, baseline: str, cfg=None) -> dict:
        ev = evaluate(recs, ranker)
        base_rows = evaluated[baseline]["rows"] if baseline in evaluated else ev["rows"]
        entry = {
            "name": name,
            "group": group,
            "description": description,
            "baseline": baseline,
            "overall": rounded(ev["by_ability"]["overall"]),
            "by_ability": {a: rounded(v) for a, v in ev["by_ability"].items() if a != "overall"},
            "vs_baseline_hit@10": paired(base_rows, ev["rows"], "hit@10"),
            "vs_baseline_recall@10": paired(base_rows, ev["rows"], "recall@10"),
        }
        if cfg is not None:
            entry["config"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()}
        evaluated[name] = ev
        results.append(entry)
        return entry

    # keyword side (mode=keyword)
    kwb = "keyword: OR of content words (current)"
    add(kwb, "keyword", "memoryd's match_expression: quoted content words joined by OR",
        lambda r: r.kw["or"], kwb)
    add("keyword: OR incl. stopwords", "keyword", "every word of the question, OR",
        lambda r: r.kw["or_stop"], kwb)
    add("keyword: AND of content words", "keyword", "all content words required (often no match)",
        lambda r: r.kw["and"], kwb)
    add("keyword: AND, then OR", "keyword", "AND matches first, OR matches after",
        lambda r: r.kw["and_then_or"], kwb)
    add("keyword: weights (1,1,1)", "keyword", "bm25 column weights content/summary/tags 1/1/1 "
        "(summary and tags are empty here)", lambda r: r.kw["weights_1_1_1"], kwb)
    for w in CONTENT_WEIGHTS:
        add(f"keyword: content weight {w:g} (= k1 {FTS5_K1 / w:.2g})", "keyword",
            f"BM25_WEIGHTS[0] = {w:g}: ranks like BM25 k1={FTS5_K1 / w:.2g}, b=0.75",
            lambda r, w=w: r.kw[f"content_w{w:g}"], kwb)
    # BM25 emulation grid
    grid = []
    for k1 in BM25_K1S:
        for b in BM25_BS:
            ev = evaluate(recs, lambda r, key=(k1, b): r.bm25[key])
            m = ev["by_ability"]["overall"]
            grid.append({"k1": k1, "b": b, **rounded(m), "score": round(selection_score(m), 4)})
            evaluated[f"bm25 k1={k1:g} b={b:g}"] = ev
    best_bm25 = max(grid, key=lambda g: g["score"])
    best_key = (best_bm25["k1"], best_bm25["b"])
    add(f"keyword: BM25 emulated k1={FTS5_K1:g} b={FTS5_B:g} (FTS5's own)", "keyword",
        "Python re-computation of bm25() over the index's tokens (checks the emulation)",
        lambda r: r.bm25[(FTS5_K1, FTS5_B)], kwb)
    add(f"keyword: BM25 emulated k1={best_key[0]:g} b={best_key[1]:g} (best of grid)", "keyword",
        "best (k1, b) of the grid; b other than 0.75 needs re-scoring outside FTS5",
        lambda r: r.bm25[best_key], kwb)

    # vector side (mode=vector)
    vb = "vector: message alone (current)"
    add(vb, "vector", "embed_text = content (MiniLM sees its first 254 word pieces)",
        lambda r: r.vec["plain"], vb)
    add("vector: date prefix", "vector", "embed_text = '[March 15, 2024] ' + content",
        lambda r: r.vec["date"], vb)
    add("vector: + previous/next message", "vector",
        f"embed_text = content + ~{CONTEXT_CHARS} chars of the previous and next message of the session",
        lambda r: r.vec["ctx"], vb)
    if with_chunks:
        add("vector: mean of 254-token chunks", "vector",
            f"one vector = normalised mean of up to {MAX_CHUNKS} window embeddings of the content",
            lambda r: r.vec["chunk_mean"], vb)
        add("vector: max over 254-token chunks", "vector",
            f"best of up to {MAX_CHUNKS} window vectors per message (needs several vectors per memory)",
            lambda r: r.vec["chunk_max"], vb)

    # hybrid (mode=hybrid)
    hb = "hybrid (fusion only): current defaults"
    add(hb, "hybrid", f"RRF k={base_cfg['k']}, weights {base_cfg['wk']:g}:{base_cfg['wv']:g}, "
        f"candidate_pool {base_cfg['pool']}, OR query, plain vectors", hybrid(base_cfg), hb, base_cfg)
    stage_labels = {
        "hybrid:cognitive_only": "hybrid + cognitive re-ranking (no associations)",
        "hybrid:associations_only": "hybrid + spreading activation (no cognitive re-ranking)",
        "hybrid": "hybrid as shipped (cognitive re-ranking + associations)",
    }
    if recs and "hybrid:raw" in recs[0].engine:
        for label, title in stage_labels.items():
            if label in recs[0].engine:
                add(f"pipeline: {title}", "pipeline", f"Engine.search stages after fusion ({label})",
                    lambda r, label=label: r.engine[label], hb)
    for k in RRF_KS:
        if k != base_cfg["k"]:
            cfg = {**base_cfg, "k": k}
            add(f"hybrid: rrf_k={k}", "fusion", "plain RRF with another k", hybrid(cfg), hb, cfg)
    for wk, wv in WEIGHTS:
        if (wk, wv) != (base_cfg["wk"], base_cfg["wv"]):
            cfg = {**base_cfg, "wk": wk, "wv": wv}
            add(f"hybrid: weights kw {wk:g} : vec {wv:g}", "fusion", "weighted RRF, k unchanged",
                hybrid(cfg), hb, cfg)
    for pool in POOLS:
        if pool != base_cfg["pool"]:
            cfg = {**base_cfg, "pool": pool}
            add(f"hybrid: candidate_pool={pool}", "fusion",
                f"per-list candidates (effective {effective_pool(pool)})", hybrid(cfg), hb, cfg)
    vec_variants = ["date", "ctx"] + (["chunk_mean", "chunk_max"] if with_chunks else [])
    for v in vec_variants:
        cfg = {**base_cfg, "vec": v}
        add(f"hybrid: vectors {v}", "hybrid-vector", "default fusion, another vector side", hybrid(cfg), hb, cfg)
    kw_variants = ["or_stop", "and_then_or"] + [f"content_w{w:g}" for w in CONTENT_WEIGHTS]
    for kv in kw_variants:
        cfg = {**base_cfg, "kw": kv}
        add(f"hybrid: keyword {kv}", "hybrid-keyword", "default fusion, another keyword side",
            hybrid(cfg), hb, cfg)
    if best_key != (FTS5_K1, FTS5_B):
        cfg = {**base_cfg, "kw": best_key}
        add(f"hybrid: keyword BM25 k1={best_key[0]:g} b={best_key[1]:g}", "hybrid-keyword",
            "default fusion, emulated BM25 with the best (k1, b)", hybrid(cfg), hb, cfg)

    rec_cfg = {**base_cfg, "k": recommended.get("rrf_k", base_cfg["k"]),
               "wk": float(recommended.get("keyword_weight", base_cfg["wk"])),
               "wv": float(recommended.get("vector_weight", base_cfg["wv"])),
               "pool": recommended.get("candidate_pool", base_cfg["pool"])}
    if rec_cfg != base_cfg:
        add(f"hybrid: recommended settings {recommended}", "tuned", "fusion only, settings change only",
            hybrid(rec_cfg), hb, rec_cfg)
    if compare["name"] != "recommended":
        c = compare["settings"]
        prev_cfg = {**base_cfg, "k": c["rrf_k"], "wk": c["keyword_weight"], "wv": c["vector_weight"],
                    "pool": c["candidate_pool"]}
        add(f"hybrid: {compare['name']} (rrf_k={c['rrf_k']}, weights {c['keyword_weight']:g}:"
            f"{c['vector_weight']:g}, pool {c['candidate_pool']})", "tuned", "fusion only", hybrid(prev_cfg), hb,
            prev_cfg)
    if best_key != (FTS5_K1, FTS5_B) and rec_cfg != base_cfg:
        cfg = {**rec_cfg, "kw": best_key}
        add(f"hybrid: recommended settings + BM25 k1={best_key[0]:g} b={best_key[1]:g}", "tuned",
            "recommended fusion with a re-scored BM25 (not possible with FTS5's bm25())", hybrid(cfg), hb, cfg)
    # full grid over implementable settings, with 2-fold cross-validation by conversation
    grid_kw = ["or", "content_w0.5", "content_w0.25"]
    grid_vec = ["plain", "ctx"]
    configs = [
        {"kw": kv, "vec": vv, "k": k, "wk": wk, "wv": wv, "pool": pool}
        for kv in grid_kw for vv in grid_vec for k in RRF_KS for wk, wv in WEIGHTS for pool in GRID_POOLS
    ]
    log(f"fusion grid: {len(configs)} configurations x {len(recs)} questions")
    per_cfg_rows: list[list[dict]] = []
    for cfg in configs:
        per_cfg_rows.append(evaluate(recs, hybrid(cfg))["rows"])
    convs = sorted({r.conv for r in recs})

    def score_on(rows: list[dict], keep: set[int]) -> dict[str, float]:
        return M.mean_metrics([row["metrics"] for row, r in zip(rows, recs) if r.conv in keep])

    scores_all = [selection_score(M.mean_metrics([x["metrics"] for x in rows])) for rows in per_cfg_rows]
    best_i = int(np.argmax(scores_all))
    folds = [set(convs[0::2]), set(convs[1::2])]
    cv: dict[str, Any] = {"criterion": "mean of hit@5, hit@10, recall@10", "folds": []}
    cv_rows: dict[int, dict] = {}
    # The reference is untuned plain RRF (memoryd's defaults before this tuning), so that the
    # held-out score says whether tuning on the other half generalises.
    p = PREVIOUS_DEFAULTS
    ref_cfg = {"kw": "or", "vec": "plain", "k": p["rrf_k"], "wk": p["keyword_weight"], "wv": p["vector_weight"],
               "pool": p["candidate_pool"]}
    base_i = configs.index(ref_cfg) if ref_cfg in configs else None
    cur_i = configs.index(base_cfg) if base_cfg in configs else None
    cv["reference"] = ref_cfg
    if len(convs) >= 2:
        for f, test in enumerate(folds):
            train = folds[1 - f]
            tr_scores = [selection_score(score_on(rows, train)) for rows in per_cfg_rows]
            pick = int(np.argmax(tr_scores))
            test_m = score_on(per_cfg_rows[pick], test)
            base_m = score_on(per_cfg_rows[base_i], test) if base_i is not None else None
            cv["folds"].append({
                "train_conversations": sorted(train), "test_conversations": sorted(test),
                "chosen": configs[pick], "test": rounded(test_m),
                "baseline_test": rounded(base_m) if base_m else None,
            })
            for i, r in enumerate(recs):
                if r.conv in test:
                    cv_rows[i] = per_cfg_rows[pick][i]
        ordered = [cv_rows[i] for i in range(len(recs))]
        cv["held_out_overall"] = rounded(M.mean_metrics([x["metrics"] for x in ordered]))
        if cur_i is not None:
            cv["current_defaults_overall"] = rounded(M.mean_metrics([x["metrics"] for x in per_cfg_rows[cur_i]]))
            cv["current_defaults_config"] = base_cfg
        if base_i is not None:
            cv["baseline_overall"] = rounded(M.mean_metrics([x["metrics"] for x in per_cfg_rows[base_i]]))
            cv["vs_baseline_hit@10"] = paired(per_cfg_rows[base_i], ordered, "hit@10")
            cv["vs_baseline_recall@10"] = paired(per_cfg_rows[base_i], ordered, "recall@10")
    best_cfg = configs[best_i]
    add("hybrid: best of grid (tuned on all 20, optimistic)", "tuned", "best configuration of the full grid",
        hybrid(best_cfg), hb, best_cfg)
    top = sorted(range(len(configs)), key=lambda i: -scores_all[i])[:15]
    grid_all = [{"config": configs[i], **rounded(M.mean_metrics([x["metrics"] for x in per_cfg_rows[i]])),
                 "score": round(scores_all[i], 4)} for i in range(len(configs))]
    grid_top = [grid_all[i] for i in top]
    best_cfg_all = configs[best_i]
    sensitivity = {}
    for knob in ("k", "wk_wv", "pool", "kw", "vec"):
        keys = ("wk", "wv") if knob == "wk_wv" else (knob,)
        sensitivity[knob] = [
            {**{k: g["config"][k] for k in keys}, **{m: g[m] for m in ("hit@5", "hit@10", "recall@10")}}
            for g in grid_all
            if all(g["config"][k] == best_cfg_all[k] for k in g["config"] if k not in keys)
        ]
    # how each single setting fares when the others are at their best
    return {
        "experiments": results,
        "evaluated": evaluated,
        "bm25_grid": grid,
        "best_bm25": best_bm25,
        "fusion_grid_size": len(configs),
        "fusion_grid_top": grid_top,
        "fusion_grid": grid_all,
        "fusion_sensitivity": sensitivity,
        "best_config": best_cfg,
        "cross_validation": cv,
        "baseline_config": base_cfg,
        "hybrid": hybrid,
    }


def extra_stats(recs: list[QRec], hybrid: Callable[[dict], Ranker], cfgs: dict[str, dict]) -> dict[str, Any]:
    """Median first-evidence ranks and knowledge-update ordering."""
    ranks: dict[str, list[int | None]] = {"keyword": [], "vector": []}
    for name in cfgs:
        ranks[name] = []
    for r in recs:
        ranks["keyword"].append(M.first_rank(r.kw["or"], r.evidence))
        ranks["vector"].append(M.first_rank(r.vec["plain"], r.evidence))
        for name, cfg in cfgs.items():
            full = rrf(r.kw[cfg["kw"]] if not isinstance(cfg["kw"], tuple) else r.bm25[cfg["kw"]],
                       r.vec[cfg["vec"]], k=cfg["k"], keyword_weight=cfg["wk"], vector_weight=cfg["wv"],
                       pool=effective_pool(cfg["pool"]), limit=10**6)
            ranks[name].append(M.first_rank(full, r.evidence))
    medians = {}
    for name, rs in ranks.items():
        found = [x for x in rs if x is not None]
        medians[name] = {
            "median_first_rank": M.median_rank(rs),
            "found_in_list": len(found),
            "median_rank_when_found": statistics.median(found) if found else None,
            "questions": len(rs),
        }
    return {"first_evidence_rank": medians}


def ku_ordering(recs: list[QRec], lists: dict[str, Ranker]) -> dict[str, Any]:
    out = {}
    ku = [r for r in recs if r.ability == "knowledge_update" and "updated_info" in r.groups]
    for name, ranker in lists.items():
        counts = {"updated_first": 0, "original_first": 0, "neither": 0}
        for r in ku:
            counts[M.update_order(list(ranker(r))[:LIMIT], r.groups.get("original_info", []),
                                  r.groups["updated_info"])] += 1
        out[name] = {**counts, "questions": len(ku)}
    return out


# --------------------------------------------------------------------------- report


def fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def render_markdown(res: dict[str, Any]) -> str:
    L: list[str] = []
    d = res["data"]
    L.append("# Recall on BEAM (development data)\n")
    L.append(f"Run {res['date']}; {d['conversations']} conversations, {d['messages']} messages indexed as one "
             f"memory each, {d['questions_with_evidence']} of {d['questions']} probing questions with evidence "
             f"(abstention questions have none). Model {res['config']['embedding_model']}; "
             f"Engine.search(limit={LIMIT}); settings {res['config']['engine_settings']}. "
             f"hit@k = any evidence message in the top k; recall@k = share of a question's evidence "
             f"messages in the top k; means over questions. Runtime {res['timing']['total_seconds']:.0f}s.\n")
    L.append("## Main table (Engine.search as shipped)\n")
    cmp_ = res["config"].get("compared_settings") or {"name": "alt", "settings": {}}
    L.append(f"keyword / vector / hybrid = current defaults; 'hybrid, {cmp_['name']}' = the same pipeline with "
             f"{cmp_['settings']}.\n")
    L.append("| ability | n | mode | hit@1 | hit@5 | hit@10 | recall@5 | recall@10 |")
    L.append("|---|---:|---|---:|---:|---:|---:|---:|")
    abilities = ["overall"] + sorted(a for a in res["main"]["keyword"] if a != "overall")
    for a in abilities:
        n = d["questions_with_evidence"] if a == "overall" else d["with_evidence_by_ability"].get(a, 0)
        shown = list(MODES) + (["hybrid:alt"] if "hybrid:alt" in res["main"] else [])
        for mode in shown:
            m = res["main"][mode][a]
            label = f"**{a}**" if a == "overall" else a
            L.append(f"| {label if mode == 'keyword' else ''} | {n if mode == 'keyword' else ''} | "
                     f"{'hybrid, ' + cmp_['name'] if mode == 'hybrid:alt' else mode} | "
                     f"{fmt(m['hit@1'])} | {fmt(m['hit@5'])} | {fmt(m['hit@10'])} | {fmt(m['recall@5'])} | "
                     f"{fmt(m['recall@10'])} |")
    L.append("")
    raw = [m for m in MODES if f"{m}:raw" in res["main"]]
    if raw:
        L.append("The table above is Engine.search as shipped (fusion, then cognitive re-ranking and spreading "
                 "activation; accesses not recorded). Fusion alone (`cognitive=False, associations=False`), "
                 "overall:\n")
        L.append("| mode | hit@1 | hit@5 | hit@10 | recall@5 | recall@10 |")
        L.append("|---|---:|---:|---:|---:|---:|")
        rows = [(f"{mode} (fusion only)", f"{mode}:raw") for mode in raw]
        rows += [(f"hybrid, {cmp_['name']} {cmp_['settings']}, as shipped", "hybrid:alt"),
                 (f"hybrid, {cmp_['name']} {cmp_['settings']}, fusion only", "hybrid:alt:raw")]
        for title, label in rows:
            if label not in res["main"]:
                continue
            m = res["main"][label]["overall"]
            L.append(f"| {title} | {fmt(m['hit@1'])} | {fmt(m['hit@5'])} | {fmt(m['hit@10'])} | "
                     f"{fmt(m['recall@5'])} | {fmt(m['recall@10'])} |")
        L.append("")
    ku = res["knowledge_update_order"]
    L.append("Knowledge update (top 10): updated fact above the original / original above / neither found: " +
             "; ".join(f"{k} {v['updated_first']}/{v['original_first']}/{v['neither']} of {v['questions']}"
                       for k, v in ku.items()) + ".\n")
    L.append(f"## Tuning (overall, {d['questions_with_evidence']} questions)\n")
    L.append("Each row changes one thing against its group's baseline (first row of the group). "
             "W/L = questions whose hit@10 got better/worse vs that baseline, p = two-sided sign test.\n")
    L.append("| variant | hit@5 | hit@10 | recall@10 | Δhit@10 | W/L (hit@10) | p |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    by_name = {e["name"]: e for e in res["tuning"]}
    for e in res["tuning"]:
        base = by_name.get(e["baseline"], e)
        delta = e["overall"]["hit@10"] - base["overall"]["hit@10"]
        wl = e["vs_baseline_hit@10"]
        L.append(f"| {e['name']} | {fmt(e['overall']['hit@5'])} | {fmt(e['overall']['hit@10'])} | "
                 f"{fmt(e['overall']['recall@10'])} | {delta:+.3f} | {wl['wins']}/{wl['losses']} | "
                 f"{wl['p_sign']:.3g} |")
    L.append("")
    g = res["bm25_grid"]
    L.append("BM25 (k1, b) grid, emulated (hit@10 / recall@10):\n")
    bs = sorted({x["b"] for x in g})
    L.append("| k1 \\ b | " + " | ".join(f"{b:g}" for b in bs) + " |")
    L.append("|---|" + "---:|" * len(bs))
    for k1 in sorted({x["k1"] for x in g}):
        cells = []
        for b in bs:
            x = next(y for y in g if y["k1"] == k1 and y["b"] == b)
            cells.append(f"{x['hit@10']:.3f} / {x['recall@10']:.3f}")
        L.append(f"| {k1:g} | " + " | ".join(cells) + " |")
    L.append("")
    cv = res["cross_validation"]
    if cv.get("folds"):
        L.append(f"Fusion grid: {res['fusion_grid_size']} configurations (keyword variant × vector variant × "
                 f"rrf_k × weights × candidate_pool). 2-fold cross-validation by conversation (choose on one "
                 f"half by {cv['criterion']}, score on the other):\n")
        for f in cv["folds"]:
            L.append(f"- chosen on {f['train_conversations']}: `{json.dumps(f['chosen'])}` → held-out "
                     f"hit@10 {fmt(f['test']['hit@10'])}, recall@10 {fmt(f['test']['recall@10'])} "
                     f"(untuned {fmt(f['baseline_test']['hit@10'])}, {fmt(f['baseline_test']['recall@10'])})")
        h, b = cv["held_out_overall"], cv["baseline_overall"]
        L.append(f"- held-out overall: hit@5 {fmt(h['hit@5'])}, hit@10 {fmt(h['hit@10'])}, recall@10 "
                 f"{fmt(h['recall@10'])} vs untuned plain RRF `{json.dumps(cv.get('reference'))}` "
                 f"{fmt(b['hit@5'])}, {fmt(b['hit@10'])}, {fmt(b['recall@10'])}; "
                 f"hit@10 W/L {cv['vs_baseline_hit@10']['wins']}/{cv['vs_baseline_hit@10']['losses']} "
                 f"(p {cv['vs_baseline_hit@10']['p_sign']:.3g}), recall@10 W/L "
                 f"{cv['vs_baseline_recall@10']['wins']}/{cv['vs_baseline_recall@10']['losses']} "
                 f"(p {cv['vs_baseline_recall@10']['p_sign']:.3g})")
        c = cv.get("current_defaults_overall")
        if c:
            L.append(f"- current defaults `{json.dumps(cv['current_defaults_config'])}` (chosen on all 20, so "
                     f"optimistic): hit@5 {fmt(c['hit@5'])}, hit@10 {fmt(c['hit@10'])}, recall@10 "
                     f"{fmt(c['recall@10'])}")
        L.append("")
        sens = res.get("fusion_sensitivity") or {}
        if sens:
            L.append("Around the best configuration, one knob at a time (hit@5 / hit@10 / recall@10):\n")
            for knob, rows in sens.items():
                cells = []
                for row in rows:
                    label = (f"{row['wk']:g}:{row['wv']:g}" if knob == "wk_wv" else str(row[knob]))
                    cells.append(f"{label} → {row['hit@5']:.3f} / {row['hit@10']:.3f} / {row['recall@10']:.3f}")
                name = {"k": "rrf_k", "wk_wv": "keyword:vector weight", "pool": "candidate_pool",
                        "kw": "keyword side", "vec": "vector side"}[knob]
                L.append(f"- {name}: " + "; ".join(cells))
            L.append("")
        L.append("Top of the grid (all conversations):\n")
        L.append("| config | hit@5 | hit@10 | recall@10 |")
        L.append("|---|---:|---:|---:|")
        for x in res["fusion_grid_top"][:8]:
            L.append(f"| `{json.dumps(x['config'])}` | {fmt(x['hit@5'])} | {fmt(x['hit@10'])} | "
                     f"{fmt(x['recall@10'])} |")
        L.append("")
    t = res["truncation"]
    L.append("## Long messages\n")
    L.append(f"MiniLM reads 256 positions (254 word pieces + [CLS]/[SEP]). Median message "
             f"{t['median_tokens']:.0f} word pieces (p90 {t['p90_tokens']:.0f}, max {t['max_tokens']}); "
             f"{t['share_messages_truncated']:.0%} of messages are truncated and "
             f"{t['share_tokens_cut']:.0%} of all word pieces never reach the vector side. By role: " +
             "; ".join(f"{r} median {v['median_tokens']:.0f}, {v['share_truncated']:.0%} truncated, "
                       f"{v['share_tokens_cut']:.0%} of tokens cut" for r, v in t["by_role"].items()) +
             f". Evidence messages: median {t['evidence_messages']['median_tokens']:.0f} word pieces, "
             f"{t['evidence_messages']['share_truncated']:.0%} truncated; by role "
             f"{t['evidence_messages'].get('by_role')}. "
             f"{res['data']['messages_over_default_limit']} message(s) exceed memoryd's default "
             f"max_content_bytes (64 KiB); the bench raises the limit.\n")
    L.append("## Conclusions\n")
    L.extend(f"- {c}" for c in res["conclusions"])
    L.append("")
    L.append("Consistency checks (questions whose lists agree; the bench's own lists vs Engine/store; a "
             "vector mismatch is an exact tie between identical messages, ordered differently): " + ", ".join(f"{k} {v}" for k, v in res["checks"].items()) + ".\n")
    return "\n".join(L) + "\n"


def conclusions(res: dict[str, Any]) -> list[str]:
    """Findings computed from the numbers (the interpretation is left to bench/README.md)."""
    out: list[str] = []
    main = res["main"]
    kw, vec, hy = (main[m]["overall"] for m in MODES)
    out.append(
        f"As shipped: keyword hit@10 {kw['hit@10']:.3f} / recall@10 {kw['recall@10']:.3f}, vector "
        f"{vec['hit@10']:.3f} / {vec['recall@10']:.3f}, hybrid {hy['hit@10']:.3f} / {hy['recall@10']:.3f}. "
        f"Against BM25 alone: vector {vec['hit@10'] / kw['hit@10']:.2f}x hit@10 and "
        f"{vec['recall@10'] / kw['recall@10']:.2f}x recall@10; hybrid {hy['hit@10'] / kw['hit@10']:.2f}x hit@10 "
        f"and {hy['recall@10'] / kw['recall@10']:.2f}x recall@10."
    )
    abil = [a for a in main["keyword"] if a != "overall"]
    gaps = sorted(abil, key=lambda a: main["vector"][a]["hit@10"] - main["keyword"][a]["hit@10"])
    if gaps:
        lo, hi = gaps[0], gaps[-1]
        out.append(
            f"The sides fail on different questions: BM25 leads most on {lo} (hit@10 "
            f"{main['keyword'][lo]['hit@10']:.3f} vs vector {main['vector'][lo]['hit@10']:.3f}), the vector "
            f"side on {hi} ({main['vector'][hi]['hit@10']:.3f} vs {main['keyword'][hi]['hit@10']:.3f})."
        )
    fr = res["first_evidence_rank"]
    out.append(
        "Median rank of the first evidence message (not found counts as last): " +
        ", ".join(f"{k} {v['median_first_rank'] if v['median_first_rank'] is not None else 'not found'}"
                  f" ({v['found_in_list']}/{v['questions']} in the list)" for k, v in fr.items()) + "."
    )
    entries = res["tuning"]
    by_name = {e["name"]: e for e in entries}

    def delta(e: dict) -> str:
        b = by_name[e["baseline"]]["overall"]
        o = e["overall"]
        wl = e["vs_baseline_hit@10"]
        wr = e["vs_baseline_recall@10"]
        return (f"hit@5 {o['hit@5'] - b['hit@5']:+.3f}, hit@10 {o['hit@10'] - b['hit@10']:+.3f} "
                f"(W/L {wl['wins']}/{wl['losses']}, p {wl['p_sign']:.2g}), recall@10 "
                f"{o['recall@10'] - b['recall@10']:+.3f} (W/L {wr['wins']}/{wr['losses']}, p {wr['p_sign']:.2g})")

    for group, title in (("keyword", "Keyword side"), ("vector", "Vector side"), ("pipeline", "After fusion"),
                         ("fusion", "Fusion"), ("hybrid-vector", "Hybrid with another vector side"),
                         ("hybrid-keyword", "Hybrid with another keyword side")):
        rows = [e for e in entries if e["group"] == group and e["name"] != e["baseline"]]
        if not rows:
            continue
        base = by_name[rows[0]["baseline"]]
        ranked = sorted(rows, key=lambda e: -selection_score(e["overall"]))
        best, worst = ranked[0], ranked[-1]
        gain = selection_score(best["overall"]) - selection_score(base["overall"])
        text = (f"{title} (baseline: {base['name'].split(': ', 1)[-1]}): best variant "
                f"'{best['name'].split(': ', 1)[-1]}' {delta(best)}")
        if gain <= 0:
            text += " — no variant beats the baseline"
        if worst is not best:
            text += f"; worst '{worst['name'].split(': ', 1)[-1]}' {delta(worst)}"
        out.append(text + ".")
    g = res.get("best_bm25")
    if g:
        default = next((x for x in res["bm25_grid"] if x["k1"] == FTS5_K1 and x["b"] == FTS5_B), None)
        if default:
            out.append(
                f"BM25 grid: FTS5's fixed k1={FTS5_K1:g}, b={FTS5_B:g} gives hit@10 {default['hit@10']:.3f} / "
                f"recall@10 {default['recall@10']:.3f}; the best cell k1={g['k1']:g}, b={g['b']:g} gives "
                f"{g['hit@10']:.3f} / {g['recall@10']:.3f}."
            )
    cv = res.get("cross_validation") or {}
    if cv.get("folds"):
        h, b = cv["held_out_overall"], cv["baseline_overall"]
        chosen = "; ".join(json.dumps(f["chosen"]) for f in cv["folds"])
        out.append(
            f"Tuning the whole fusion grid on half the conversations and scoring on the other half, against "
            f"untuned plain RRF (k=60, 1:1): hit@10 "
            f"{h['hit@10']:.3f} vs {b['hit@10']:.3f}, recall@10 {h['recall@10']:.3f} vs {b['recall@10']:.3f} "
            f"(W/L {cv['vs_baseline_hit@10']['wins']}/{cv['vs_baseline_hit@10']['losses']}, p "
            f"{cv['vs_baseline_hit@10']['p_sign']:.2g}); chosen: {chosen}."
        )
    ku = res.get("knowledge_update_order") or {}
    if ku:
        out.append("Knowledge updates, updated fact ranked above the original (top 10): " +
                   ", ".join(f"{k} {v['updated_first']}/{v['questions']}" for k, v in ku.items()) + ".")
    t = res["truncation"]
    out.append(
        f"MiniLM's window: {t['share_messages_truncated']:.0%} of messages are longer than 254 word pieces and "
        f"{t['share_tokens_cut']:.0%} of all word pieces are never embedded (assistant messages: "
        f"{t['by_role'].get('assistant', {}).get('share_truncated', 0):.0%} truncated); BM25 sees everything."
    )
    return out


# --------------------------------------------------------------------------- main


def default_cache_dir() -> Path:
    explicit = os.environ.get("MEMORYD_BENCH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memoryd-bench" / "recall"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.recall", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"smoke run on {QUICK_CONVERSATIONS} conversations")
    ap.add_argument("--conversations", help="comma-separated conversation numbers (default: all)")
    ap.add_argument("--chunks", action="store_true",
                    help=f"also embed long messages in windows (up to {MAX_CHUNKS}) for the chunk variants; "
                         "adds ~5.7k embeddings (about 7 min on an idle 2-core machine)")
    ap.add_argument("--cache-dir", type=Path, default=default_cache_dir(),
                    help="cache vectors here between runs (default $MEMORYD_BENCH_CACHE or "
                         "$XDG_CACHE_HOME/memoryd-bench/recall, outside the project)")
    ap.add_argument("--no-cache", action="store_true", help="embed everything afresh, cache nothing")
    ap.add_argument("--out-dir", type=Path, default=REPO_ROOT / "bench" / "results")
    ap.add_argument("--name", default=None, help="result file stem (default recall_tuning, recall_tuning_quick with --quick)")
    ap.add_argument("--recommended", default=None,
                    help="recommended settings, e.g. 'rrf_k=5,vector_weight=2' (checked end to end when they "
                         "differ from the defaults)")
    ap.add_argument("--render-only", type=Path, metavar="JSON",
                    help="re-write the markdown (and conclusions) from an existing result JSON")
    args = ap.parse_args(argv)
    if args.render_only:
        res = json.loads(args.render_only.read_text(encoding="utf-8"))
        res["conclusions"] = conclusions(res)
        args.render_only.write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
        md = args.render_only.with_suffix(".md")
        md.write_text(render_markdown(res), encoding="utf-8")
        print(f"wrote {md}")
        return 0

    root = beam.beam_dir()
    dirs = beam.conversation_dirs(root)
    if not dirs:
        print(f"BEAM data not found at {root} (expected {root / beam.TRACK}/<n>/). Set MEMORYD_BEAM_DIR to "
              "the directory holding 100K/ to run this benchmark. Skipping.")
        return 0
    if args.conversations:
        wanted = {int(x) for x in args.conversations.split(",") if x.strip()}
        dirs = [d for d in dirs if int(d.name) in wanted]
    elif args.quick:
        dirs = dirs[:QUICK_CONVERSATIONS]
    with_chunks = args.chunks
    recommended = dict(RECOMMENDED_SETTINGS)
    if args.recommended:
        recommended = {}
        for part in args.recommended.split(","):
            key, _, value = part.partition("=")
            recommended[key.strip()] = float(value) if "." in value else int(value)
    name = args.name or ("recall_tuning_quick" if args.quick else "recall_tuning")

    log(f"loading {len(dirs)} conversations from {root}")
    convs = [beam.load_conversation(d) for d in dirs]
    n_msgs = sum(len(c.messages) for c in convs)
    n_q = sum(len(c.questions) for c in convs)
    log(f"{n_msgs} messages, {n_q} questions")

    import memoryd.embed as membed

    t_load = time.perf_counter()
    tok = tokenizer()
    prep = prepare_texts(convs, tok, with_chunks)
    trunc = truncation_stats(convs, prep)
    log(f"tokenized; {trunc['share_messages_truncated']:.0%} of messages exceed {WINDOW_TOKENS} word pieces, "
        f"{trunc['share_tokens_cut']:.0%} of word pieces cut")

    embedder = membed.LocalEmbedder()
    embedder.load()
    log(f"model loaded in {time.perf_counter() - t_load:.1f}s (incl. tokenizing)")
    cache = VectorCache(None if args.no_cache else args.cache_dir)
    if not args.no_cache:
        log(f"vector cache: {args.cache_dir}")
    table = VectorTable(embedder, cache, log)
    t_emb = time.perf_counter()
    table.ensure([q.question for c in convs for q in c.questions if q.evidence], "questions")
    table.ensure([t for c in convs for t in prep[c.number]["plain"]], "messages (plain)")
    table.ensure([t for c in convs for t in prep[c.number]["ctx"] if t is not None], "with neighbours")
    table.ensure([t for c in convs for t in prep[c.number]["date"]], "with date prefix")
    if with_chunks:
        table.ensure([t for c in convs for ch in prep[c.number]["chunks"] for t in ch], "later chunks")
    t_emb = time.perf_counter() - t_emb
    log(f"embeddings ready: {table.embedded} embedded in {table.seconds:.0f}s, {table.from_cache} from cache")

    checks = {"questions": 0, "keyword_store_vs_runner_same": 0, "keyword_engine_vs_list_top10_same": 0,
              "vector_numpy_vs_engine_top10_same": 0, "hybrid_fusion_vs_engine_top10_same": 0,
              "bm25_emulation_top10_same": 0}
    recs: list[QRec] = []
    infos = []
    t_runs = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memoryd-recall-") as tmp:
        for c in convs:
            rs, info = run_conversation(c, prep[c.number], table, Path(tmp), with_chunks, checks,
                                        recommended)
            recs.extend(rs)
            infos.append(info)
            hits = sum(M.hit_at(r.engine["hybrid"], r.evidence, 10) for r in rs)
            log(f"conversation {c.number:>2}: {info['indexed']} memories in {info['index_seconds']:.1f}s, "
                f"{len(rs)} questions in {info['search_seconds']:.1f}s, hybrid hit@10 {hits}/{len(rs)}")
    t_runs = time.perf_counter() - t_runs
    settings = infos[0]["settings"]

    log("experiments")
    t_exp = time.perf_counter()
    compare = infos[0]["compare"]
    ex = run_experiments(recs, settings, with_chunks, recommended, compare)
    hybrid = ex.pop("hybrid")
    ex.pop("evaluated")
    main_table = {label: {a: rounded(v) for a, v in evaluate(recs, lambda r, m=label: r.engine[m])["by_ability"].items()}
                  for label in recs[0].engine}
    best = ex["best_config"]
    ranks = extra_stats(recs, hybrid, {"hybrid (defaults)": ex["baseline_config"], "hybrid (best of grid)": best})
    ku = ku_ordering(recs, {
        "keyword": lambda r: r.engine["keyword"],
        "vector": lambda r: r.engine["vector"],
        "hybrid": lambda r: r.engine["hybrid"],
        **({"hybrid (fusion only)": lambda r: r.engine["hybrid:raw"]} if "hybrid:raw" in recs[0].engine else {}),
        f"hybrid ({compare['name']})": lambda r: r.engine["hybrid:alt"],
        "hybrid (fusion only, best of grid)": hybrid(best),
    })
    t_exp = time.perf_counter() - t_exp

    by_ability = {}
    with_ev = {}
    for c in convs:
        for q in c.questions:
            by_ability[q.ability] = by_ability.get(q.ability, 0) + 1
            if q.evidence:
                with_ev[q.ability] = with_ev.get(q.ability, 0) + 1
    over_limit = sum(1 for c in convs for m in c.messages if len(m.content.encode("utf-8")) > 64 * 1024)
    per_question = [
        {"conversation": r.conv, "ability": r.ability, "index": r.index, "question": r.question,
         "evidence": r.evidence,
         "first_rank": {"keyword": M.first_rank(r.kw["or"], r.evidence),
                        "vector": M.first_rank(r.vec["plain"], r.evidence)},
         "top10": dict(r.engine),
         "top10_best_of_grid": list(hybrid(best)(r))}
        for r in recs
    ]
    res: dict[str, Any] = {
        "benchmark": "memoryd recall on BEAM 100K (development data)",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "config": {
            "embedding_model": membed.DEFAULT_MODEL_ID,
            "limit": LIMIT,
            "engine_settings": settings,
            "recommended_settings": recommended,
            "compared_settings": compare,
            "keyword_depth_for_tuning": DEPTH,
            "context_chars": CONTEXT_CHARS,
            "max_chunks": MAX_CHUNKS,
            "window_word_pieces": WINDOW_TOKENS,
            "bm25_weights": list(BM25_WEIGHTS),
            "fts5": {"k1": FTS5_K1, "b": FTS5_B, "tokenize": BM25Emulator.TOKENIZE},
            "max_content_bytes": MAX_CONTENT_BYTES,
            "chunks": with_chunks,
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "cpus": os.cpu_count(),
        },
        "data": {
            "dir": str(root),
            "conversations": len(convs),
            "conversation_numbers": [c.number for c in convs],
            "chat_files": {c.number: c.chat_file for c in convs},
            "messages": n_msgs,
            "messages_indexed": sum(i["indexed"] for i in infos),
            "messages_over_default_limit": over_limit,
            "questions": n_q,
            "questions_with_evidence": len(recs),
            "questions_by_ability": dict(sorted(by_ability.items())),
            "with_evidence_by_ability": dict(sorted(with_ev.items())),
        },
        "main": main_table,
        "knowledge_update_order": ku,
        "first_evidence_rank": ranks["first_evidence_rank"],
        "truncation": trunc,
        "tuning": ex["experiments"],
        "bm25_grid": ex["bm25_grid"],
        "best_bm25": ex["best_bm25"],
        "fusion_grid_size": ex["fusion_grid_size"],
        "fusion_grid_top": ex["fusion_grid_top"],
        "fusion_sensitivity": ex["fusion_sensitivity"],
        "fusion_grid": ex["fusion_grid"],
        "best_config": best,
        "cross_validation": ex["cross_validation"],
        "checks": checks,
        "conversations": infos,
        "timing": {
            "embedding_seconds": round(t_emb, 1),
            "texts_embedded": table.embedded,
            "texts_from_cache": table.from_cache,
            "index_and_search_seconds": round(t_runs, 1),
            "experiments_seconds": round(t_exp, 1),
            "total_seconds": round(time.perf_counter() - _started, 1),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "note": "embedding time depends on other load on the machine; cached vectors make re-runs fast",
        },
        "per_question": per_question,
    }
    res["conclusions"] = conclusions(res)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    json_path = args.out_dir / f"{name}.json"
    md_path = args.out_dir / f"{name}.md"
    json_path.write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(res), encoding="utf-8")
    cache.close()
    log(f"wrote {json_path} and {md_path}")
    for mode in MODES:
        m = main_table[mode]["overall"]
        print(f"  {mode:8s} hit@1 {m['hit@1']:.3f}  hit@5 {m['hit@5']:.3f}  hit@10 {m['hit@10']:.3f}  "
              f"recall@5 {m['recall@5']:.3f}  recall@10 {m['recall@10']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
