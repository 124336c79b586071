"""Ranking bench parts after fusion: recall threshold, cognitive layer, time expressions, speaker
cues, latency."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from bench.recall import metrics as M
from bench.recall.candidates import Query, TermIndex
from bench.recall.corpus import Corpus
from bench.recall.pipeline import KeywordConfig, Pool, by_probability, keyword_ranking
from memoryd.cognition.ranking import order_within_margin, recency, spread
from memoryd.retrieval.bm25 import Candidate, CorpusStats, keyword_evidence
from memoryd.retrieval.answer import DEFAULT_RECALL_THRESHOLD
from memoryd.retrieval.relevance import DEFAULT_MODEL, candidate_features
from memoryd.retrieval.tokens import query_terms
from memoryd.cognition.extraction import states_preference
from memoryd.engine.cues import PREFERENCE_SCAN_CHARS
from memoryd.retrieval.requests import asks_for_advice
from memoryd.retrieval.speaker import USER, memory_speaker, normalise, query_speaker, same_speaker
from memoryd.retrieval.when import time_window

THRESHOLDS = (0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5)
TARGET_HIT_RECALL = 0.98  # recall first: a missing memory costs more than an extra line
MARGINS = (0.05, 0.1, 0.25, 0.5, 1.0)
HALF_LIFE_DAYS = 30.0
HEAD = 30  # the search path re-ranks the first max(3 x limit, 30) fused hits
NEGATIVE_KINDS = ("abstention", "foreign", "unrelated")


def threshold_table(queries: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray],
                    half_of: Callable[[int], str], limit: int) -> dict[str, Any]:
    """Precision/recall of each threshold on the returned top ``limit``, per CV half."""
    out: dict[str, Any] = {"target_hit_recall": TARGET_HIT_RECALL, "halves": {}}
    for h in ("odd", "even", "both"):
        qs = [q for q in queries if h == "both" or half_of(q.conv) == h]
        out["halves"][h] = {f"{t:g}": _at_threshold(qs, pools, held, t, limit) for t in THRESHOLDS}
    for h, other in (("odd", "even"), ("even", "odd")):
        t = _choose(out["halves"][h])
        out[f"chosen on {h}"] = {"threshold": t, f"held-out ({other})": out["halves"][other][f"{t:g}"]}
    out["chosen_all"] = _choose(out["halves"]["both"])
    shipped = f"{DEFAULT_RECALL_THRESHOLD:g}"
    out["shipped"] = {"threshold": DEFAULT_RECALL_THRESHOLD,
                      **{h: out["halves"][h].get(shipped) for h in ("odd", "even", "both")}}
    return out


def _choose(rows: dict[str, dict]) -> float:
    ok = [float(t) for t, r in rows.items() if r["hit_recall"] >= TARGET_HIT_RECALL]
    return max(ok) if ok else min(float(t) for t in rows)


def _at_threshold(qs: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray], t: float,
                  limit: int) -> dict[str, Any]:
    kept = kept_ev = ev_total = answer_ok = answer_n = 0
    empty = {k: [0, 0] for k in NEGATIVE_KINDS}
    for q in qs:
        p, lab = held[id(q)], pools[id(q)].labels
        order = np.argsort(-p, kind="stable")[:limit]
        top_p, top_l = p[order], lab[order]
        passed = top_p >= t
        kept += int(passed.sum())
        kept_ev += int((passed & (top_l == 1)).sum())
        ev_total += int((top_l == 1).sum())
        if q.kind == "answerable" and (top_l == 1).any():
            answer_n += 1
            answer_ok += int((passed & (top_l == 1)).any())
        elif q.kind in empty:
            empty[q.kind][0] += int(not passed.any())
            empty[q.kind][1] += 1
    return {"hit_precision": round(kept_ev / kept, 4) if kept else None,
            "hit_recall": round(kept_ev / ev_total, 4) if ev_total else None,
            "answerable_keep_evidence": round(answer_ok / answer_n, 4) if answer_n else None,
            "mean_hits_kept": round(kept / len(qs), 2) if qs else 0.0,
            "empty_block": {k: round(v[0] / v[1], 4) if v[1] else None for k, v in empty.items()}}


def _now(c: Corpus):
    dates = [d for d in c.created if d is not None]
    return max(dates) + timedelta(days=1) if dates else None


def cognitive_section(ans: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray],
                      corpora: dict[int, Corpus], qm: Callable) -> dict[str, Any]:
    """Recency (the only cognitive signal that varies in BEAM) as a near-tie breaker among
    the first ``HEAD`` hits (the hits the search path hydrates and re-ranks)."""
    out: dict[str, Any] = {"signal": f"recency (half-life {HALF_LIFE_DAYS:g} days) of the write time, "
                                     f"spread over the first {HEAD} hits; BEAM gives original and updated "
                                     "facts the same session date, so the write time is the session date "
                                     "plus one minute per message, in conversation order (a chat import "
                                     "writes in order)"}
    base_rows, variants = [], {m: [] for m in MARGINS}
    ku = {"without": [], **{f"margin {m:g}": [] for m in MARGINS}}
    for q in ans:
        c, p, pool = corpora[q.conv], held[id(q)], pools[id(q)]
        base = by_probability(pool, p)
        base_rows.append(qm(base, q))
        written = _write_times(c)
        now = max(written) + timedelta(days=1)
        prob = dict(zip(pool.docs.tolist(), p.tolist()))
        head = base[:HEAD]
        bonus = spread([recency(written[d], now, HALF_LIFE_DAYS) for d in head])
        kuq = q.ability == "knowledge_update" and "updated_info" in q.groups
        if kuq:
            ku["without"].append(M.update_order(base[:10], q.groups.get("original_info", []),
                                                q.groups["updated_info"]))
        for m in MARGINS:
            ranked = [head[i] for i in order_within_margin([prob[d] for d in head], bonus, m)] + base[HEAD:]
            variants[m].append(qm(ranked, q))
            if kuq:
                ku[f"margin {m:g}"].append(M.update_order(ranked[:10], q.groups.get("original_info", []),
                                                          q.groups["updated_info"]))
    out["without"] = _avg(base_rows)
    out["with"] = {f"margin {m:g}": _avg(rows) for m, rows in variants.items()}
    out["knowledge_update_order"] = {k: {s: v.count(s) for s in ("updated_first", "original_first", "neither")}
                                     for k, v in ku.items()}
    return out


def _write_times(c: Corpus) -> list[datetime]:
    start = min((d for d in c.created if d is not None), default=_FIXED_NOW)
    out, last = [], start
    for i, d in enumerate(c.created):
        last = max(last, d or last)
        out.append(last + timedelta(minutes=i))
    return out


BOOST_MARGINS = (0.25, 1.0, 3.0)


def _boost_rows() -> dict[str, list[dict[str, float]]]:
    return {"without": [], **{f"margin {m:g}": [] for m in BOOST_MARGINS}}


def _add_boosted(rows: dict[str, list], pool: Pool, p: np.ndarray, bonus: list[float], q: Query,
                 qm: Callable) -> None:
    """One question's metrics without the boost and with it at each of BOOST_MARGINS."""
    rows["without"].append(qm(by_probability(pool, p), q))
    for m in BOOST_MARGINS:
        order = order_within_margin(p.tolist(), bonus, m)
        rows[f"margin {m:g}"].append(qm([int(pool.docs[i]) for i in order], q))


def time_section(ans: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray],
                 corpora: dict[int, Corpus], qm: Callable) -> dict[str, Any]:
    """Questions naming a date or period: a boost for memories created inside the window."""
    parsed, samples = [], []
    for q in ans:
        now = _now(corpora[q.conv])
        t = time.perf_counter()
        w = time_window(q.text, now) if now else None
        samples.append(time.perf_counter() - t)
        if w is not None:
            parsed.append((q, w))
    out: dict[str, Any] = {"questions_with_time_expression": len(parsed),
                           "by_ability": _count(q.ability for q, _ in parsed),
                           "examples": [f"{q.text[:90]} → {w.text}" for q, w in parsed[:6]],
                           "parse_ms_median": round(statistics.median(samples) * 1000, 4)}
    rows = _boost_rows()
    inside = []
    for q, w in parsed:
        c = corpora[q.conv]
        bonus = [1.0 if c.created[d] and w.contains(c.created[d]) else 0.0 for d in pools[id(q)].docs.tolist()]
        inside.append(any(c.created[d] and w.contains(c.created[d]) for d in q.evidence))
        _add_boosted(rows, pools[id(q)], held[id(q)], bonus, q, qm)
    out["evidence_created_inside_window"] = sum(inside)
    out["metrics"] = {k: _avg(v) for k, v in rows.items()}
    return out


def speaker_section(ans: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray],
                    corpora: dict[int, Corpus], qm: Callable) -> dict[str, Any]:
    """Questions about what one party said ("did I mention", "you recommended"): a boost for
    that party's messages (the message's role, as the engine bench stores it)."""
    parsed = [(q, s) for q in ans if (s := query_speaker(q.text)) is not None]
    out: dict[str, Any] = {"questions_with_speaker": len(parsed),
                           "by_speaker": _count(s for _, s in parsed),
                           "by_ability": _count(q.ability for q, _ in parsed),
                           "examples": [f"{q.text[:90]} → {s}" for q, s in parsed[:6]]}
    rows = _boost_rows()
    said = []
    for q, speaker in parsed:
        roles = corpora[q.conv].roles
        bonus = [1.0 if same_speaker(speaker, normalise(roles[d])) else 0.0 for d in pools[id(q)].docs.tolist()]
        said.append(any(same_speaker(speaker, normalise(roles[d])) for d in q.evidence))
        _add_boosted(rows, pools[id(q)], held[id(q)], bonus, q, qm)
    out["evidence_said_by_that_speaker"] = sum(said)
    out["metrics"] = {k: _avg(v) for k, v in rows.items()}
    return out


def preference_section(ans: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray],
                       corpora: dict[int, Corpus], qm: Callable) -> dict[str, Any]:
    """Requests for advice ("how would you suggest…"): a boost for the user's messages that
    state a preference or standing instruction. Per ability, since it must not cost any."""
    asked = [q for q in ans if asks_for_advice(q.text)]
    requests = {id(q) for q in asked}
    out: dict[str, Any] = {"requests": len(asked), "by_ability": _count(q.ability for q in asked),
                           "examples": [q.text[:90] for q in asked[:4]]}
    rows = _boost_rows()
    abilities: list[str] = []
    for q in ans:
        c = corpora[q.conv]
        abilities.append(q.ability)
        bonus = [1.0 if id(q) in requests and normalise(c.roles[d]) == USER
                 and states_preference(c.texts[d][:PREFERENCE_SCAN_CHARS]) else 0.0
                 for d in pools[id(q)].docs.tolist()]
        _add_boosted(rows, pools[id(q)], held[id(q)], bonus, q, qm)
    out["metrics"] = {k: {"overall": _avg(v), **{a: _avg([r for r, b in zip(v, abilities) if b == a])
                                                 for a in sorted(set(abilities))}}
                      for k, v in rows.items()}
    return out


def latency_section(ans: list[Query], indexes: dict[int, dict[str, TermIndex]],
                    cfg: KeywordConfig, corpora: dict[int, Corpus]) -> dict[str, Any]:
    """Median cost per query of each new step, on BEAM's questions (200 keyword candidates)."""
    corpora_texts = {n: c.texts for n, c in corpora.items()}
    steps: dict[str, list[float]] = {"query_terms": [], "bm25 + evidence (200 candidates)": [],
                                     "features + probability (union pool)": [],
                                     "order_within_margin (union pool)": [], "time_window": [],
                                     "speaker + request cues (query)": [],
                                     "speaker + preference of 30 hits": []}
    for q in ans:
        index = indexes[q.conv][cfg.stemming]
        m = q.matches[cfg.stemming]
        row_of = {int(d): r for r, d in enumerate(m.docs)}
        docs = keyword_ranking(q, indexes[q.conv], cfg)[:200].tolist()
        cands = [Candidate(str(d), int(index.lengths[d]),
                           {t: int(m.tf[row_of[d], j]) for j, t in enumerate(m.terms) if m.tf[row_of[d], j]})
                 for d in docs]
        stats = CorpusStats(len(index.terms), index.average, {t: int(x) for t, x in zip(m.terms, m.df)})
        steps["query_terms"].append(_time(lambda: query_terms(q.text)))
        steps["bm25 + evidence (200 candidates)"].append(_time(lambda: keyword_evidence(m.terms, cands, stats)))
        n = min(100, len(docs) + 50)
        cos = list(np.linspace(0.1, 0.6, n))
        steps["features + probability (union pool)"].append(_time(lambda: [
            DEFAULT_MODEL.probability(f) for f in candidate_features(cos, [0.5] * n, [0.5] * n, [1.0] * n)]))
        steps["order_within_margin (union pool)"].append(_time(lambda: order_within_margin(cos, cos, 0.25)))
        steps["time_window"].append(_time(lambda: time_window(q.text, _FIXED_NOW)))
        steps["speaker + request cues (query)"].append(_time(lambda: (query_speaker(q.text),
                                                                      asks_for_advice(q.text))))
        texts = [corpora_texts[q.conv][d] for d in docs[:30]]
        steps["speaker + preference of 30 hits"].append(_time(lambda: [
            (memory_speaker(t, {"role": "user"}), states_preference(t[:PREFERENCE_SCAN_CHARS]))
            for t in texts]))
    return {k: round(statistics.median(v) * 1000, 4) for k, v in steps.items()} | {"unit": "ms (median per query)"}


_FIXED_NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)


def _time(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _avg(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in rows[0]}


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out
