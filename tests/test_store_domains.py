"""The domain part of the store contract, on every backend (``store`` fixture): domains with
their centroids, the threshold, assignments (no history), the domain filter, proposals, keys
limited to domains, and copying all of it between backends with ``memoryd migrate``.

Vectors and centroids are real: made by the shared all-MiniLM-L6-v2 model.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memoryd.errors import StoreError
from memoryd.migrate import copy_store
from memoryd.models import (
    ApiKey,
    Domain,
    DomainProposal,
    Memory,
    SchedulingState,
    SearchFilters,
)
from memoryd.store.base import Actor, Store
from memoryd.store.postgres import PostgresStore
from memoryd.store.sqlite import SQLiteStore

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
TEXTS = {
    "home": ["The heat pump used 14 kWh yesterday", "The solar panels charged the battery"],
    "infra": ["BGP peering with the upstream provider is up", "VLAN 30 carries storage traffic"],
    "rust": ["The crate builds with cargo on stable Rust", "The trait object needs a Box"],
}


def memory(content: str, **fields: object) -> Memory:
    return Memory(id=str(uuid.uuid4()), content=content, created_at=NOW, updated_at=NOW,
                  state=SchedulingState(last_review=NOW), **fields)


def domain(name: str, centroid: np.ndarray, members: int = 0, **fields: object) -> Domain:
    return Domain(id=fields.pop("id", None) or uuid.uuid4().hex[:12], name=name,
                  centroid=centroid, member_count=members, top_terms=[name, "terms"],
                  suggested_name=name, created_at=NOW, updated_at=NOW, **fields)


@pytest.fixture
def filled(store: Store, embed) -> tuple[Store, dict[str, list[str]], list[Domain]]:
    ids: dict[str, list[str]] = {}
    domains = []
    for name, texts in TEXTS.items():
        made = [memory(t) for t in texts]
        vectors = embed(texts)
        store.insert(made, vectors, Actor("test"))
        ids[name] = [m.id for m in made]
        domains.append(domain(name, vectors.mean(axis=0), len(texts)))
    store.domains.save_domains(domains)
    return store, ids, domains


def test_a_new_store_has_no_domains(store: Store) -> None:
    assert store.domains.list_domains() == []
    assert store.domains.domain_threshold() is None
    assert store.domains.list_proposals() == [] and store.domains.get_proposal("nope") is None


def test_domains_round_trip_with_their_centroids(filled) -> None:
    store, _, saved = filled
    got = store.domains.list_domains()
    assert [d.name for d in got] == ["home", "infra", "rust"]  # members equal: by name
    for before, after in zip(saved, got, strict=True):
        assert after.centroid.dtype == np.float32 and after.centroid.shape == (384,)
        np.testing.assert_array_equal(after.centroid, before.centroid.astype(np.float32))
        assert after.model_dump() == before.model_dump()
    bigger = got[2].model_copy(update={"member_count": 9})
    store.domains.save_domains([bigger])
    assert [d.name for d in store.domains.list_domains()] == ["rust", "home", "infra"]


def test_names_are_unique_and_a_rename_may_swap_them(filled) -> None:
    store, _, saved = filled
    home, infra = saved[0], saved[1]
    with pytest.raises(StoreError, match="share a name"):
        store.domains.save_domains([infra.model_copy(update={"name": "home"})])
    assert {d.name for d in store.domains.list_domains()} == {"home", "infra", "rust"}
    store.domains.save_domains([home.model_copy(update={"name": "infra"}),
                        infra.model_copy(update={"name": "home"})])
    by_id = {d.id: d.name for d in store.domains.list_domains()}
    assert (by_id[home.id], by_id[infra.id]) == ("infra", "home")


def test_save_and_remove_in_one_call(filled, embed) -> None:
    store, _, saved = filled
    merged = domain("everything", embed(["all of it"])[0], 6)
    store.domains.save_domains([merged], remove=[d.id for d in saved])
    assert [d.name for d in store.domains.list_domains()] == ["everything"]


def test_the_threshold_is_kept(store: Store) -> None:
    store.domains.set_domain_threshold(0.31)
    assert store.domains.domain_threshold() == pytest.approx(0.31)
    store.domains.set_domain_threshold(-0.5)
    assert store.domains.domain_threshold() == pytest.approx(-0.5)


def test_assignments_record_no_history_and_filter_any_of(filled, embed) -> None:
    store, ids, _ = filled
    before = {i: store.get(i) for group in ids.values() for i in group}
    last_seq = store.stats().last_seq
    mixed = ids["home"][0]
    changed = store.domains.set_assignments({
        **{i: (["home"], {"home": 0.7, "infra": 0.1}) for i in ids["home"]},
        **{i: (["infra"], {"infra": 0.6}) for i in ids["infra"]},
        mixed: (["home", "infra"], {"home": 0.7, "infra": 0.5}),
        "no-such-memory": (["home"], {"home": 1.0}),
    })
    assert changed == 4
    got = store.get(mixed)
    assert (got.domains, got.domain_scores) == (["home", "infra"], {"home": 0.7, "infra": 0.5})
    assert got.seq == before[mixed].seq and got.updated_at == before[mixed].updated_at
    assert store.stats().last_seq == last_seq and len(store.history(mixed)) == 1

    def listed(*names: str) -> set[str]:
        return {m.id for m in store.list(SearchFilters(domains=list(names)), now=NOW)}

    assert listed("home") == set(ids["home"])
    assert listed("infra") == set(ids["infra"]) | {mixed}
    assert listed("home", "rust") == set(ids["home"])
    assert listed("rust") == set()
    assert store.count(SearchFilters(domains=["infra"]), now=NOW) == 3
    assert store.matching_ids(ids["rust"] + ids["home"], SearchFilters(domains=["home"]),
                              now=NOW) == set(ids["home"])
    query = embed(["electricity at home"])[0]
    vector = store.vector_search(query, SearchFilters(domains=["infra"]), now=NOW, limit=10)
    assert {h.memory_id for h in vector} == set(ids["infra"]) | {mixed}
    keyword = store.keyword_search("battery peering kWh", SearchFilters(domains=["home"]),
                                  now=NOW, limit=10)
    assert {h.memory_id for h in keyword} <= set(ids["home"]) and keyword
    everywhere = store.keyword_search("battery peering kWh", SearchFilters(), now=NOW, limit=10)
    assert set(ids["infra"]) & {h.memory_id for h in everywhere}


def test_reassigning_replaces_and_deleting_forgets(filled) -> None:
    store, ids, _ = filled
    one = ids["rust"][0]
    store.domains.set_assignments({one: (["rust"], {"rust": 0.9})})
    store.domains.set_assignments({one: (["home"], {"rust": 0.1, "home": 0.4})})
    assert store.count(SearchFilters(domains=["rust"]), now=NOW) == 0
    assert store.count(SearchFilters(domains=["home"]), now=NOW) == 1
    store.delete(one, Actor("test"))
    assert store.count(SearchFilters(domains=["home"]), now=NOW) == 0
    store.domains.set_assignments({ids["rust"][1]: ([], {})})
    assert store.get(ids["rust"][1]).domains == []


def test_proposals_are_kept_and_decided(store: Store) -> None:
    old = DomainProposal(id="split-aaa", kind="split", summary="split 'dev' into two",
                         domain_ids=["d1"], evidence={"parts": [{"members": 31}]},
                         created_at=NOW - timedelta(days=1),
                         payload={"clusters": [{"name": "a", "centroid": [0.5, 0.25]}]})
    new = DomainProposal(id="new-bbb", kind="new", summary="new domain 'x'", created_at=NOW)
    store.domains.save_proposals([old, new])
    assert [p.id for p in store.domains.list_proposals()] == ["new-bbb", "split-aaa"]
    got = store.domains.get_proposal("split-aaa")
    assert got.payload == old.payload and got.evidence == old.evidence
    assert got.model_dump() == old.model_dump()
    store.domains.save_proposals([old.model_copy(update={"status": "rejected", "decided_at": NOW,
                                                 "decided_by": "cli"})])
    assert [p.id for p in store.domains.list_proposals(["proposed"])] == ["new-bbb"]
    rejected = store.domains.list_proposals(["rejected", "expired"])
    assert [(p.id, p.decided_by, p.decided_at) for p in rejected] == [("split-aaa", "cli", NOW)]


def test_keys_carry_their_domains(store: Store) -> None:
    limited = ApiKey(id="k1", label="home-assistant", prefix="mk_aaa", key_hash="a" * 64,
                     scopes=["read"], domains=["home", "garden"], created_at=NOW)
    free = ApiKey(id="k2", label="laptop", prefix="mk_bbb", key_hash="b" * 64,
                  scopes=["read", "write"], created_at=NOW)
    store.keys.save_key(limited)
    store.keys.save_key(free)
    assert store.keys.key_by_hash("a" * 64).domains == ["home", "garden"]
    assert store.keys.key_by_hash("b" * 64).domains is None
    ledger = store.ledger_entries()
    assert [e.operation for e in ledger] == ["key.create", "key.create"]
    assert ledger[0].content_sha256 != ledger[1].content_sha256


def _fill_domains(store: Store, embed) -> None:
    texts = [t for group in TEXTS.values() for t in group]
    made = [memory(t) for t in texts]
    store.insert(made, embed(texts), Actor("test"))
    vectors = embed(texts)
    store.domains.save_domains([domain("home", vectors[:2].mean(0), 2),
                        domain("infra", vectors[2:4].mean(0), 2, renamed_at=NOW)])
    store.domains.set_domain_threshold(0.33)
    store.domains.set_assignments({made[0].id: (["home"], {"home": 0.8, "infra": 0.1}),
                           made[2].id: (["infra", "home"], {"home": 0.35, "infra": 0.9})})
    store.domains.save_proposals([DomainProposal(id="merge-1", kind="merge", summary="merge",
                                         domain_ids=["a", "b"], created_at=NOW,
                                         evidence={"centroid_similarity": 0.71},
                                         payload={"clusters": [{"centroid": [0.1] * 3}]})])
    store.keys.save_key(ApiKey(id="k1", label="ha", prefix="mk_aaa", key_hash="a" * 64,
                          scopes=["read"], domains=["home"], created_at=NOW))


def test_migrate_copies_domains_both_ways(tmp_path: Path, pg_url: str, embed,
                                         shared_embedder) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    source.set_embedding_model(shared_embedder.model_id, shared_embedder.dims)
    _fill_domains(source, embed)
    middle = PostgresStore(pg_url)
    back = SQLiteStore(tmp_path / "back.db")
    try:
        there = copy_store(source, middle)
        assert there.verified, [c for c in there.checks if not c.ok]
        assert {t: there.copied[t] for t in ("domains", "domain_proposals", "domain_settings")} \
            == {"domains": 2, "domain_proposals": 1, "domain_settings": 1}
        home = next(d for d in middle.domains.list_domains() if d.name == "home")
        np.testing.assert_array_equal(
            home.centroid, next(d for d in source.domains.list_domains() if d.name == "home").centroid)
        assert middle.domains.domain_threshold() == pytest.approx(0.33)
        assert middle.count(SearchFilters(domains=["home"]), now=NOW) == 2
        assert middle.keys.key_by_hash("a" * 64).domains == ["home"]
        again = copy_store(middle, back)
        assert again.verified
        assert back.count(SearchFilters(domains=["infra"]), now=NOW) == 1
        assert back.domains.get_proposal("merge-1").payload == {"clusters": [{"centroid": [0.1] * 3}]}
    finally:
        for store in (source, middle, back):
            store.close()
