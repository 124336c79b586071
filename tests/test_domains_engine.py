"""Domains through the engine, with the real model on the hand-written corpus
(tests/data/domains_corpus.jsonl: network, home, rust and cooking memories, a few mixed):
accumulate then discover (by itself, off the write path), classify new memories, domain-scoped
search and listing, rename that keeps assignments, proposals that change nothing until
accepted, merge, split and a new threshold without re-embedding.

The discovered store is made once per module and copied for each test that changes it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from memoryd.domains.assign import rethreshold
from memoryd.engine import Engine
from memoryd.errors import DomainNotFound, InvalidFilter, InvalidInput, MaintenanceBusy
from memoryd.models import Memory

CORPUS = Path(__file__).resolve().parent / "data" / "domains_corpus.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
SINGLE = [r for r in ROWS if len(r["topics"]) == 1]


def items(rows: list[dict]) -> list[dict]:
    return [{"content": r["text"], "tags": r["topics"]} for r in rows]


def topic_of(memory: Memory) -> str:
    return memory.tags[0]


def by_topic(mem: Engine) -> dict[str, str]:
    """The domain holding most memories of each topic."""
    votes: dict[str, dict[str, int]] = {}
    for m in mem.list(limit=1000):
        if len(m.tags) == 1 and m.domains:
            counts = votes.setdefault(m.tags[0], {})
            counts[m.domains[0]] = counts.get(m.domains[0], 0) + 1
    return {t: max(c, key=c.__getitem__) for t, c in votes.items()}


@pytest.fixture(scope="module")
def template(module_mem_factory: Callable[..., Engine], tmp_path_factory) -> Path:
    """A store of the whole corpus whose domains were discovered by themselves at 150."""
    mem = module_mem_factory("domains")
    mem.add_many(items(ROWS[:149]))
    mem.settle()
    assert mem.domains.list() == [] and all(m.domains == [] for m in mem.list(limit=1000))
    mem.add_many(items(ROWS[149:]))
    mem.settle(timeout=300)
    path = tmp_path_factory.mktemp("template") / "domains.db"
    mem.admin.backup(path)
    return path


@pytest.fixture
def mem(template: Path, tmp_path: Path, open_mem: Callable[..., Engine]) -> Engine:
    copy = tmp_path / "m.db"
    shutil.copy(template, copy)
    return open_mem(f"sqlite:///{copy}")


# --------------------------------------------------------------------------- accumulate


def test_below_the_threshold_nothing_is_classified(open_mem, tmp_path: Path) -> None:
    mem = open_mem(f"sqlite:///{tmp_path / 'few.db'}", domains_min_memories=150)
    mem.add_many(items(SINGLE[:40] + SINGLE[120:160]))
    mem.settle()
    report = mem.domains.discover()
    assert report.action == "skipped" and "80 memories" in (report.skipped or "")
    assert mem.domains.list() == [] and mem.domains.threshold() is None
    assert all(m.domains == [] and m.domain_scores == {} for m in mem.list(limit=100))
    forced = mem.domains.discover(force=True)  # network and cooking: two clear groups
    assert forced.action == "discovered" and len(forced.domains) == 2
    assert forced.assigned + forced.unclassified == 80


def test_discovery_ran_by_itself_and_sorted_the_topics(mem: Engine) -> None:
    domains = mem.domains.list()
    assert len(domains) == 4
    topics = by_topic(mem)
    assert sorted(topics) == ["cooking", "home", "network", "rust"]
    assert len(set(topics.values())) == 4  # one domain per topic
    singles = [m for m in mem.list(limit=1000) if len(m.tags) == 1]
    right = [topics[m.tags[0]] == m.domains[0] for m in singles if m.domains]
    assert np.mean(right) >= 0.95
    assert all(set(m.domain_scores) == {d.name for d in domains} for m in singles)
    assert np.mean([not m.domains for m in singles]) <= 0.1
    assert 0.0 < (mem.domains.threshold() or 0) < 1.0
    assert sum(d.member_count for d in domains) >= 0.9 * len(ROWS)
    assert mem.store.bookkeeping.list_reports("domains")[0]["action"] == "discovered"


def test_new_memories_are_classified_and_move_their_domain(mem: Engine) -> None:
    home = by_topic(mem)["home"]
    before = {d.name: d for d in mem.store.domains.list_domains()}
    added = mem.add("The heat pump drew 9 kWh overnight while the solar battery was empty")
    assert added.domains[0] == home and mem.get(added.id).domains == added.domains
    ingested = mem.ingest("Knead the bread dough with butter and flour for ten minutes").memory
    assert ingested.domains[0] == by_topic(mem)["cooking"]
    after = {d.name: d for d in mem.store.domains.list_domains()}
    assert after[home].member_count == before[home].member_count + 1
    assert not np.allclose(after[home].centroid, before[home].centroid)
    network = by_topic(mem)["network"]
    np.testing.assert_array_equal(after[network].centroid, before[network].centroid)


# --------------------------------------------------------------------------- reading


def test_search_and_list_within_domains(mem: Engine) -> None:
    topics = by_topic(mem)
    home, rust = topics["home"], topics["rust"]
    hits = mem.search("what uses electricity", 10, domains=[home], record_access=False)
    assert hits and all(home in h.memory.domains for h in hits)
    both = mem.list(domains=[home, rust], limit=1000)
    assert {d for m in both for d in m.domains} >= {home, rust}
    assert all({home, rust} & set(m.domains) for m in both)
    assert mem.count(domains=[home]) == len(mem.list(domains=[home], limit=1000))
    with pytest.raises(InvalidFilter, match="no domain named nowhere"):
        mem.search("anything", 5, domains=["nowhere"])
    with pytest.raises(InvalidFilter, match="domain name"):
        mem.list(domains=["Not A Name!"])


def test_spreading_activation_respects_the_domain_filter(mem: Engine) -> None:
    topics = by_topic(mem)
    rust = next(m for m in mem.list(domains=[topics["rust"]], limit=1000) if m.tags == ["rust"])
    vector = mem.store.vectors([rust.id])[rust.id]
    cooking = [m for m in mem.list(domains=[topics["cooking"]], limit=1000)
               if m.tags == ["cooking"]]
    far = {m.id: float(v @ vector) for m in cooking
           for v in [mem.store.vectors([m.id])[m.id]]}
    target = min(cooking, key=lambda m: far[m.id])  # never a direct hit for this query
    mem.link(rust.id, target.id, "related", 1.0)
    # Associations take only the slots the likely answers leave: leave a few.
    direct = mem.search(rust.content, 200, associations=False, record_access=False)
    room = sum(h.score >= mem.settings.recall_threshold for h in direct) + 3
    free = mem.search(rust.content, room, associations=True, record_access=False)
    reached = {h.memory.id: h for h in free}
    assert target.id in reached and reached[target.id].association
    scoped = mem.search(rust.content, room, associations=True, domains=[topics["rust"]],
                        record_access=False)
    assert scoped and target.id not in {h.memory.id for h in scoped}
    assert all(topics["rust"] in h.memory.domains for h in scoped)


# --------------------------------------------------------------------------- changes


def test_rename_keeps_every_assignment(mem: Engine) -> None:
    old = by_topic(mem)["home"]
    before = {m.id: m for m in mem.list(limit=1000)}
    key = mem.admin.create_key("ha", scopes=["read"], domains=[old])
    report = mem.domains.rename(old, "home")
    assert report.action == "renamed" and report.removed == [old]
    after = {m.id: m for m in mem.list(limit=1000)}
    for memory_id, was in before.items():
        now = after[memory_id]
        assert now.domains == ["home" if d == old else d for d in was.domains]
        assert now.domain_scores == {("home" if k == old else k): v
                                     for k, v in was.domain_scores.items()}
        assert now.seq == was.seq  # not a change of the memory: no history
    renamed = mem.domains.get("home")
    assert renamed.renamed_at is not None and renamed.suggested_name == old
    assert mem.admin.verify_key(key.secret).domains == ["home"]
    with pytest.raises(DomainNotFound):
        mem.domains.get(old)


def test_bad_changes_are_refused_and_change_nothing(mem: Engine) -> None:
    names = [d.name for d in mem.domains.list()]
    snapshot = {m.id: m.domains for m in mem.list(limit=1000)}
    for call, error in [
        (lambda: mem.domains.rename(names[0], names[1]), InvalidInput),
        (lambda: mem.domains.rename(names[0], "proposals"), InvalidInput),
        (lambda: mem.domains.rename(names[0], "No Spaces!"), InvalidInput),
        (lambda: mem.domains.rename("nowhere", "x"), DomainNotFound),
        (lambda: mem.domains.merge([names[0], names[0]]), InvalidInput),
        (lambda: mem.domains.merge([names[0], "nowhere"]), DomainNotFound),
        (lambda: mem.domains.set_threshold(1.5), InvalidInput),
        (lambda: mem.domains.accept("nope"), DomainNotFound),
        (lambda: mem.domains.proposals("pending"), InvalidInput),
        (lambda: mem.admin.create_key("x", domains=["nowhere"]), InvalidInput),
        (lambda: mem.admin.create_key("x", domains=[]), InvalidInput),
    ]:
        with pytest.raises(error):
            call()
    assert [d.name for d in mem.domains.list()] == names
    assert {m.id: m.domains for m in mem.list(limit=1000)} == snapshot


def test_merge_then_split(mem: Engine) -> None:
    """Two unrelated topics merged come apart again. (Rust and network, both technical,
    left 55 memories whose best domain was the merged one, and HDBSCAN saw one group in them.)"""
    topics = by_topic(mem)
    merged = mem.domains.merge([topics["cooking"], topics["network"]], into=topics["network"])
    assert merged.action == "merged" and merged.removed == [topics["cooking"]]
    assert len(mem.domains.list()) == 3
    both = mem.list(domains=[topics["network"]], limit=1000)
    assert {topic_of(m) for m in both if len(m.tags) == 1} >= {"cooking", "network"}
    split_id = next(d.id for d in mem.domains.list() if d.name == topics["network"])
    split = mem.domains.split(topics["network"])
    assert split.action == "split"
    # The domain is replaced by its parts; one part may carry its name on (then it is not
    # reported as removed).
    assert split_id not in {d.id for d in mem.domains.list()}
    assert (topics["network"] in split.removed) == (topics["network"] not in
                                                    {d.name for d in mem.domains.list()})
    assert len(mem.domains.list()) >= 4
    again = by_topic(mem)
    assert again["cooking"] != again["network"]


def test_a_new_threshold_rethresholds_without_embedding(mem: Engine) -> None:
    before = {m.id: m for m in mem.list(limit=1000)}
    calls = []
    original = mem.embedder.embed
    def counting(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return original(texts)

    mem.embedder.embed = counting  # type: ignore[method-assign]
    try:
        strict = mem.domains.set_threshold(0.95)
    finally:
        mem.embedder.embed = original  # type: ignore[method-assign]
    assert calls == [] and strict.action == "rethresholded"
    assert strict.assigned == 0 and strict.unclassified == len(before)
    assert all(m.domains == [] for m in mem.list(limit=1000))
    loose = mem.domains.set_threshold(-1.0)
    assert loose.unclassified == 0
    for m in mem.list(limit=1000):  # every memory its best domain, and the rule's others
        assert m.domain_scores == before[m.id].domain_scores
        ranked = sorted(m.domain_scores, key=lambda n: (-m.domain_scores[n], n))
        assert m.domains == rethreshold(m.domain_scores, -1.0) and m.domains[0] == ranked[0]


# --------------------------------------------------------------------------- proposals


@pytest.fixture
def grown(open_mem, tmp_path: Path) -> Engine:
    """Domains found on network and cooking memories, then home and rust memories added."""
    mem = open_mem(f"sqlite:///{tmp_path / 'grown.db'}", domains_auto=False)
    first = [r for r in SINGLE if r["topics"][0] in ("network", "cooking")]
    mem.add_many(items(first))
    assert mem.domains.discover(force=True).action == "discovered"
    mem.add_many(items([r for r in ROWS if r not in first]))
    return mem


def test_a_proposal_changes_nothing_until_accepted(grown: Engine) -> None:
    mem = grown
    names = [d.name for d in mem.domains.list()]
    assignments = {m.id: (m.domains, m.domain_scores) for m in mem.list(limit=1000)}
    proposals = mem.domains.recluster()
    news = [p for p in proposals if p.kind == "new"]
    assert len(news) == 2 and all(p.status == "proposed" for p in proposals)
    assert all(p.evidence["cluster"]["members"] > 0 for p in news)
    assert [d.name for d in mem.domains.list()] == names
    assert {m.id: (m.domains, m.domain_scores) for m in mem.list(limit=1000)} == assignments

    accepted = mem.domains.accept(news[0].id)
    assert accepted.action == "created" and accepted.proposals[0].status == "accepted"
    assert len(mem.domains.list()) == len(names) + 1
    created = (set(d.name for d in mem.domains.list()) - set(names)).pop()
    assert mem.count(domains=[created]) >= 20
    with pytest.raises(InvalidInput, match="accepted"):
        mem.domains.accept(news[0].id)

    rejected = mem.domains.reject(news[1].id)
    assert rejected.proposals[0].status == "rejected"
    assert len(mem.domains.list()) == len(names) + 1
    again = mem.domains.recluster()
    assert news[1].id not in {p.id for p in again}
    assert mem.store.domains.get_proposal(news[1].id).status == "rejected"


def test_a_rename_proposal_is_applied_by_accepting(grown: Engine) -> None:
    mem = grown
    renames = [p for p in mem.domains.recluster() if p.kind == "rename"]
    if not renames:
        pytest.skip("re-clustering suggested the same names")
    proposal = renames[0]
    old = mem.domains.get(proposal.domain_ids[0])
    members = {m.id for m in mem.list(domains=[old.name], limit=1000)}
    report = mem.domains.accept(proposal.id)
    new_name = proposal.payload["name"]
    assert report.action == "renamed" and mem.domains.get(old.id).name == new_name
    assert {m.id for m in mem.list(domains=[new_name], limit=1000)} == members


def test_every_nth_consolidation_reclusters(grown: Engine, open_mem) -> None:
    mem = open_mem(grown.store.url, domains_auto=False, domains_recluster_every=2)
    first = mem.admin.consolidate()
    assert first.domain_proposals == [] and mem.domains.proposals() == []
    second = mem.admin.consolidate()
    assert second.domain_proposals and set(second.domain_proposals) == {
        p.id for p in mem.domains.proposals()}
    assert mem.store.bookkeeping.list_reports("domains")[0]["action"] == "reclustered"


def test_changes_wait_for_the_domains_lock(mem: Engine) -> None:
    with mem.store.maintenance_lock("domains") as mine:
        assert mine
        with pytest.raises(MaintenanceBusy):
            mem.domains.rename(mem.domains.list()[0].name, "busy")


# --------------------------------------------------------------------------- PostgreSQL


def test_the_same_flow_on_postgresql(open_mem, pg_database) -> None:
    mem = open_mem(pg_database(), domains_auto=False)
    mem.add_many(items([r for r in SINGLE if r["topics"][0] in ("network", "cooking")]))
    report = mem.domains.discover(force=True)
    assert report.action == "discovered" and len(report.domains) == 2
    net = by_topic(mem)["network"]
    hits = mem.search("routers and switches", 10, domains=[net], record_access=False)
    assert hits and all(net in h.memory.domains for h in hits)
    before = {m.id: m.domain_scores for m in mem.list(limit=1000)}
    mem.domains.rename(net, "network")
    after = {m.id: m.domain_scores for m in mem.list(limit=1000)}
    assert after == {i: {("network" if k == net else k): v for k, v in scores.items()}
                     for i, scores in before.items()}
    added = mem.add("The edge router drops its BGP sessions whenever the VLAN trunk flaps")
    assert added.domains[0] == "network"
    assert mem.domains.get("network").member_count == by_topic_count(mem, "network")


def by_topic_count(mem: Engine, name: str) -> int:
    return sum(1 for m in mem.list(limit=1000) if m.domains and m.domains[0] == name)


def test_importing_memoryd_does_not_load_the_clustering_libraries() -> None:
    import subprocess
    import sys

    code = ("import sys, memoryd, memoryd.operations, memoryd.cli.app, memoryd.serving.http\n"
            "print([m for m in ('sklearn', 'scipy', 'hdbscan', 'umap') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_closing_stops_a_running_discovery_and_keeps_none_of_it(
        open_mem, tmp_path: Path, monkeypatch) -> None:
    """A discovery scoring a large store would hold the close for minutes: the close stops it
    at its next batch, and its transaction leaves no domain or assignment behind."""
    import threading

    from memoryd.domains import assign

    scoring, release = threading.Event(), threading.Event()
    score = assign.classify_many

    def held(*args, **kwargs):
        scoring.set()
        release.wait(30)
        return score(*args, **kwargs)

    monkeypatch.setattr(assign, "classify_many", held)
    url = f"sqlite:///{tmp_path / 'closing.db'}"
    mem = open_mem(url)
    mem.add_many(items(ROWS))
    assert scoring.wait(120)  # the automatic discovery is scoring every memory
    closer = threading.Thread(target=mem.close)
    closer.start()
    assert mem._ctx.closing.wait(10)
    release.set()
    closer.join(60)
    assert not closer.is_alive()
    again = open_mem(url, domains_auto=False)
    assert again.domains.list() == [] and again.domains.threshold() is None
    assert all(m.domains == [] and m.domain_scores == {} for m in again.list(limit=1000))
