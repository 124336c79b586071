"""``memoryd domains ...`` and ``memoryd keys create --domain`` through the installed console
script, on a real SQLite store filled in-process with the shared model (network and cooking
memories of the hand-written corpus). None of these commands embeds anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memoryd

CORPUS = Path(__file__).resolve().parent / "data" / "domains_corpus.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def ok(result) -> str:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr
    return result.stdout


def fails(result, *fragments: str) -> None:
    text = " ".join((result.stderr + result.stdout).split()).lower()
    assert result.returncode == 1 and "traceback" not in text, text
    for fragment in fragments:
        assert fragment.lower() in text, text


@pytest.fixture
def store(cli_env, shared_embedder) -> str:
    path = Path(cli_env["MEMORYD_HOME"]) / "memoryd.db"
    rows = [r for r in ROWS if r["topics"] in (["network"], ["cooking"])]
    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder, domains_auto=False) as mem:
        mem.add_many([{"content": r["text"], "tags": r["topics"]} for r in rows])
    return f"sqlite:///{path}"


def test_domains_commands(run_cli, store: str) -> None:
    def cli(*args: str):
        return run_cli("--store", store, *args)

    assert "no domains yet" in ok(cli("domains", "list"))
    skipped = json.loads(ok(cli("domains", "discover", "--json")))
    assert skipped["action"] == "skipped" and "80 memories" in skipped["skipped"]
    found = json.loads(ok(cli("domains", "discover", "--force", "--json")))
    assert found["action"] == "discovered" and len(found["domains"]) == 2
    names = [d["name"] for d in json.loads(ok(cli("domains", "list", "--json")))["domains"]]
    with memoryd.open(store, domains_auto=False) as mem:
        network = next(m.domains[0] for m in mem.list(limit=200)
                       if m.tags == ["network"] and m.domains)
    renamed = json.loads(ok(cli("domains", "rename", network, "Network", "--json")))
    assert renamed["action"] == "renamed" and "network" in [d["name"] for d in renamed["domains"]]
    shown = json.loads(ok(cli("domains", "show", "network", "--json")))
    assert shown["renamed_at"] and shown["suggested_name"] == network
    assert "network" in ok(cli("domains", "list"))

    key = json.loads(ok(cli("keys", "create", "--label", "netops", "--scopes", "read",
                            "--domain", "network", "--json")))
    assert key["domains"] == ["network"] and key["key"].startswith("mk_")
    assert "domains:network" in " ".join(ok(cli("keys", "list")).split())
    fails(cli("keys", "create", "--label", "x", "--domain", "nowhere"), "no domain named nowhere")

    assert "no proposals" in ok(cli("domains", "proposals"))
    strict = json.loads(ok(cli("domains", "threshold", "0.99", "--json")))
    assert strict["assigned"] == 0 and strict["threshold"] == pytest.approx(0.99)
    other = next(n for n in names if n != network)
    merged = json.loads(ok(cli("domains", "merge", "network", other, "--into", "network",
                               "--json")))
    assert [d["name"] for d in merged["domains"]] == ["network"] and merged["removed"] == [other]

    fails(cli("domains", "accept", "nope"), "no domain proposal 'nope'")
    fails(cli("domains", "rename", "network", "proposals"), "reserved")
    fails(cli("domains", "show", "nowhere"), "no domain named 'nowhere'")
    fails(cli("domains", "threshold", "2"), "threshold must be")
    fails(cli("domains", "proposals", "--status", "pending"), "status must be one of")
