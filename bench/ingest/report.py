"""The markdown report of the ingest bench (bench/results/ingest.md)."""

from __future__ import annotations

from typing import Any

_SHOWN = ("hit@1", "hit@5", "hit@10", "recall@10", "mrr")
_DECISIONS = ("create", "reinforce", "update", "supersede", "merge")


def _row(label: str, m: dict[str, float]) -> str:
    return f"| {label} | " + " | ".join(f"{m[k]:.3f}" for k in _SHOWN) + " |"


def _earlier(s: dict[str, Any]) -> list[str]:
    """The earlier run's rows (the previous gate), when one was given."""
    e = s.get("earlier")
    if not e:
        return []
    return ["An earlier run with the previous gate (`--compare`; its own `add_many` row shows "
            "the search it ran with):", "",
            "| written with | " + " | ".join(_SHOWN) + " |", "|---" * (len(_SHOWN) + 1) + "|",
            _row("`add_many`", e["add_many/strict"]),
            _row("smart ingest, previous gate (strict)", e["ingest/strict"]),
            _row("smart ingest, previous gate (lenient)", e["ingest/lenient"]), "",
            "Its decisions: " + ", ".join(f"{d} {e['decisions'].get(d, 0)}" for d in _DECISIONS)
            + f"; memories of their own {e['own_share']:.1%}, superseded "
            f"{e['superseded_share']:.1%}.", ""]


def _set_section(name: str, s: dict[str, Any]) -> list[str]:
    out = [f"## {name}", "",
           f"{s['chats']} chats, {s['messages']} messages, {s['questions']} questions with "
           "evidence.", "",
           "| written with | " + " | ".join(_SHOWN) + " |", "|---" * (len(_SHOWN) + 1) + "|",
           _row("`add_many`", s["add_many/strict"]),
           _row("smart ingest (strict)", s["ingest/strict"]),
           _row("smart ingest (lenient)", s["ingest/lenient"]), "",
           f"Δhit@5, smart ingest minus `add_many`: strict {s['delta_hit@5']['strict']:+.3f}, "
           f"lenient {s['delta_hit@5']['lenient']:+.3f}.", ""]
    out += _earlier(s)
    out += ["| decision | " + " | ".join(_DECISIONS) + " |", "|---" * (len(_DECISIONS) + 1) + "|",
            "| messages | " + " | ".join(str(s["decisions"].get(d, 0)) for d in _DECISIONS)
            + " |", "",
            f"Messages that stay memories of their own: {s['own_share']:.1%}; superseded (out "
            f"of default search): {s['superseded_share']:.1%}. Memories searched: "
            f"{s['memories']['add_many']} (`add_many`), {s['memories']['ingest']} (smart "
            f"ingest). Write time: {s['build_s']['add_many']} s (`add_many`), "
            f"{s['build_s']['ingest']} s (smart ingest).", ""]
    abilities = s["ingest/strict/abilities"]
    out += ["Per ability, hit@5 (`add_many` / smart ingest strict):", "",
            "| ability | n | add_many | smart ingest |", "|---|---:|---:|---:|"]
    for ability, m in abilities.items():
        base = s["add_many/strict/abilities"][ability]
        out.append(f"| {ability} | {m['n']} | {base['hit@5']:.3f} | {m['hit@5']:.3f} |")
    examples = [e for e in s.get("examples", []) if e["decision"] != "create"][:8]
    if examples:
        out += ["", "First decisions other than create (reason as the gate gives it):", ""]
        out += [f"- `{e['id']}` {e['decision']}: {e['reason']}" for e in examples]
    return out + [""]


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown."""
    out = ["# Smart ingest against add_many", "",
           "The same chats written two ways into fresh SQLite stores, the same questions asked "
           "with `Engine.search(question, 10, record_access=False)`: `add_many` (one memory "
           "per message) and smart ingest (`Engine.ingest_many`, batches of 50, in order). "
           "A memory stands for the messages folded into it: `strict` counts a message only "
           "when its text is in the memory (update, merge), `lenient` also when it was "
           "reinforced (judged to add nothing). A superseded memory is not searched. "
           "`python -m bench.ingest`"
           + (" (quick run: two chats per set)" if report["quick"] else "") + ".", ""]
    for name, s in report["sets"].items():
        out += _set_section(name, s)
    out.append(f"Run time {report['run_s']} s.")
    return "\n".join(out) + "\n"
