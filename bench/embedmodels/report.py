"""Assemble bench/results/embedmodels.json and its markdown summary."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from bench.common import md_table
from bench.embedmodels.recall import MODES, aggregate, paired

DECISION_RULE = (
    "Switch the default only if (1) recall rises: hybrid as shipped gains hit@5 or hit@10 over "
    "MiniLM overall with a sign test p < 0.05 and loses nothing significant in vector or hybrid "
    "mode, and (2) the budgets still hold with it: search p50 <= 30 ms end to end at 100k, bulk "
    "import >= 300 memories/s, RSS <= 600 MB with 100k memories (projections: see speed.py), "
    "or it holds them where MiniLM does not. A runtime change that keeps MiniLM's recall "
    "(same model, lighter runtime) qualifies on (2) alone."
)


def _recall_entry(res: dict[str, Any], base: dict[str, Any] | None) -> dict[str, Any]:
    if "error" in res:
        return {"error": res["error"]}
    out: dict[str, Any] = {"by_mode": res["by_mode"], "seconds": res["seconds"],
                           "questions": len(res["questions"])}
    if res.get("subset_conversations") and base is not None:
        keys = {q.key for q in res["questions"]}
        same = [q for q in base["questions"] if q.key in keys]
        out["subset_conversations"] = res["subset_conversations"]
        out["baseline_same_questions"] = {mode: aggregate(same, mode) for mode in MODES}
    if base is not None and base is not res:
        out["vs_baseline"] = {
            mode: {metric: paired(base["questions"], res["questions"], mode, metric)
                   for metric in ("hit@1", "hit@5", "hit@10", "recall@10")}
            for mode in ("vector", "hybrid")
        }
    out["per_question"] = {q.key: q.ranked for q in res["questions"]}
    return out


def build(*, packages: dict[str, Any], skipped: dict[str, str], recalls: dict[str, Any],
          reranks: dict[str, Any], speeds: dict[str, Any], baseline: str, conversations: int,
          command: str, machine: dict[str, Any], seconds: int) -> dict[str, Any]:
    """The JSON result: packages, recall per model, re-ranking, speed, budgets, decision."""
    base = recalls.get(baseline)
    return {
        "benchmark": "embedmodels",
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "seconds": seconds,
        "machine": machine,
        "baseline": baseline,
        "conversations": conversations,
        "packages": packages,
        "skipped": skipped,
        "recall": {m: _recall_entry(r, base) for m, r in recalls.items()},
        "rerank": reranks,
        "speed": speeds,
        "decision_rule": DECISION_RULE,
    }


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def packages_table(result: dict[str, Any]) -> str:
    rows = []
    for name, p in result["packages"].items():
        probe = p.get("probe", {})
        why = result["skipped"].get(name, "")
        status = "loads" if p.get("loads_offline") else "no"
        detail = probe.get("error") or p.get("install_error") or why or (
            f"dims {probe.get('dims')}, paraphrase {probe.get('cos_paraphrase')} vs unrelated "
            f"{probe.get('cos_unrelated')}" if probe.get("kind") == "embedder" else
            f"scores {probe.get('scores')}")
        rows.append([name, p["package"], p["model"], p.get("runtime", ""), status,
                     _fmt(p.get("package_mb")), _fmt(p.get("site_packages_mb")),
                     str(detail).replace("|", "/")[:160]])
    return md_table(["model", "package", "what it ships", "runtime", "offline", "package MB",
                     "venv MB", "probe / reason"], rows)


def recall_table(result: dict[str, Any]) -> str:
    rows = []
    for name, r in result["recall"].items():
        if "error" in r:
            rows.append([name, "error", r["error"][:80]] + [""] * 6)
            continue
        for mode in MODES:
            if name != result["baseline"] and mode == "keyword":
                continue  # keyword search does not use the model
            if r.get("subset_conversations") and mode != "keyword":
                b = r["baseline_same_questions"][mode]["overall"]
                rows.append([f"{result['baseline']} (same {r['subset_conversations']} conversations)",
                             mode, b["hit@1"], b["hit@5"], b["hit@10"], b["recall@5"],
                             b["recall@10"], b["mrr@10"], ""])
            m = r["by_mode"][mode]["overall"]
            vs = r.get("vs_baseline", {}).get(mode.split(":")[0] if mode != "hybrid:fusion" else "", {})
            sig = vs.get("hit@5")
            rows.append([name, mode, m["hit@1"], m["hit@5"], m["hit@10"], m["recall@5"],
                         m["recall@10"], m["mrr@10"],
                         f"{sig['wins']}/{sig['losses']} p={sig['p_sign']}" if sig else ""])
    return md_table(["model", "mode", "hit@1", "hit@5", "hit@10", "recall@5", "recall@10",
                     "MRR@10", "hit@5 W/L vs MiniLM"], rows)


def ability_table(result: dict[str, Any], mode: str) -> str:
    models = [m for m, r in result["recall"].items() if "error" not in r]
    if not models:
        return ""
    abilities = [a for a in result["recall"][models[0]]["by_mode"][mode] if a != "overall"]
    rows = [[a] + [result["recall"][m]["by_mode"][mode].get(a, {}).get("hit@5", "-") for m in models]
            for a in abilities]
    return md_table(["ability (hit@5, " + mode + ")"] + models, rows)


def speed_table(result: dict[str, Any]) -> str:
    sp = result.get("speed") or {}
    budgets = sp.get("budgets", {})
    rows = []
    for name, s in sp.get("models", {}).items():
        if "error" in s:
            rows.append([name, s["error"][:60]] + [""] * 10)
            continue
        b = budgets.get(name, {})
        rows.append([name, f"{s['load_s']:.1f} ({s.get('load_cpu_s', 0):.1f})",
                     f"{s['spawn_to_first_query_s']:.1f}",
                     f"{s['query_p50_ms']:.1f} ({s.get('query_cpu_p50_ms', 0):.1f})",
                     f"{s['docs_per_s_batch64']:.0f} ({s.get('docs_per_cpu_s_batch64', 0):.0f})",
                     f"{s['model_rss_mb']:.0f}",
                     f"{_fmt(b.get('search_p50_ms'), 1)} ({_fmt(b.get('search_ok'))})",
                     f"{_fmt(b.get('import_per_s'), 0)} ({_fmt(b.get('import_ok'))})",
                     f"{_fmt(b.get('rss_mb'), 0)} ({_fmt(b.get('rss_ok'))})",
                     f"{_fmt(b.get('first_query_cpu_s'), 2)} ({_fmt(b.get('first_query_ok'))})",
                     result["packages"].get(name, {}).get("site_packages_mb")])
    return md_table(["model", "load s wall (CPU)", "spawn to 1st query s wall",
                     "query p50 ms wall (CPU)", "texts/s batch 64 wall (per CPU-s)",
                     "model RSS MB", "search p50 @100k ms (ok)", "import /s (ok)",
                     "RSS @100k MB (ok)", "load + 1st query CPU s (<= 1.5)", "venv MB"], rows)


def rerank_table(result: dict[str, Any]) -> str:
    rows = []
    for name, r in result.get("rerank", {}).items():
        if "error" in r:
            rows.append([name, "error", r["error"][:80]] + [""] * 8)
        for depth, d in r.get("depths", {}).items():
            m = d["metrics"]["overall"]
            w = d["vs_shipped_hit@5"]
            base = d.get("shipped_same_questions", {})
            rows.append([name, r.get("questions"), depth, m["hit@1"], m["hit@5"], m["hit@10"], m["mrr@10"],
                         f"{base.get('hit@5', '-')}",
                         f"{w['wins']}/{w['losses']} p={w['p_sign']}", d["latency_p50_ms"],
                         d["latency_p95_ms"]])
    return md_table(["re-ranker", "questions", "top N", "hit@1", "hit@5", "hit@10", "MRR@10",
                     "shipped hit@5, same questions", "hit@5 W/L vs shipped", "p50 ms/query",
                     "p95 ms/query"], rows)


def markdown(result: dict[str, Any]) -> str:
    """The results file: findings (hand-written in findings.md) then the measured tables."""
    from pathlib import Path

    findings = Path(__file__).with_name("findings.md")
    parts = [
        "# Embedding models and re-rankers packaged on the registries, measured for memoryd",
        "",
        f"Run {result['started']} with `{result['command']}` in {result['seconds']} s on "
        f"{result['machine'].get('cpus')} x {result['machine'].get('cpu_model')} (shared machine), "
        f"Python {result['machine'].get('python')}. BEAM 100K track, {result['conversations']} "
        "conversations, one memory per message; baseline: "
        f"`{result['baseline']}` (memoryd's default) in the same run. Vectors, recall runs, "
        "re-ranker scores and the speed run are kept in bench/.cache/embedmodels and reused "
        f"(speed measured {result.get('speed', {}).get('started', '-')}); the embedding itself "
        "took about 80 min per model on this machine.",
        "",
    ]
    if findings.exists():
        parts += [findings.read_text().strip(), ""]
    parts += ["## Decision rule", "", result["decision_rule"], "",
              "## 1. Packages found and the offline load test", "",
              "Each installed into its own scratch virtualenv (`pip install`), then loaded under "
              "`unshare -n` (no network at all) with `HF_HUB_OFFLINE=1` and an empty HOME; the "
              "probe embeds 'Deploys go out on Tuesdays after standup.' and an unrelated sentence "
              "and compares both with 'When do we ship a release?'.", "",
              packages_table(result), "",
              "## 2. Recall on BEAM through memoryd's pipeline", "",
              "`Engine.search(question, limit=10, mode=..., query_vector=<model's vector>)` on a "
              "fresh SQLite store per conversation; `hybrid` = as shipped (cognitive re-ranking and "
              "associations on), `hybrid:fusion` = `cognitive=False, associations=False`. "
              "W/L = questions won/lost against MiniLM in the same mode, two-sided sign test.", "",
              recall_table(result), "", ability_table(result, "vector"), "",
              ability_table(result, "hybrid"), "",
              "## 3. Re-ranking the shipped pipeline's top 20 / 50", "", rerank_table(result), "",
              "## 4. Speed, memory and the budgets", "",
              "Fresh process per run (imports included in load time), medians over interleaved "
              "rounds. Budget columns project memoryd at 100k memories from bench/results/scale.json "
              "(SQLite search p50 without embedding, store writes/s) and latency.json (RSS with "
              "MiniLM), swapping MiniLM's runtime for this model's (see speed.py).", "",
              speed_table(result), ""]
    return "\n".join(p for p in parts if p is not None)
