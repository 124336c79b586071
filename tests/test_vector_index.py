"""The vector index: exact search, the HNSW path (hnsw_threshold lowered so a few hundred
memories use the graph), and the saved graph (reused when consistent, repaired or rebuilt when the
table changed behind it)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import memoryd
from memoryd.store.sqlite import vector_index as vector_index_module
from memoryd.store.sqlite.vector_index import VectorIndex

TOPICS = [
    "baking sourdough bread", "training for a marathon", "learning the Rust borrow checker",
    "repairing a bicycle chain", "planting tomatoes in spring", "the history of the Roman empire",
    "jazz improvisation on saxophone", "investing in index funds", "photographing the night sky",
    "brewing pour-over coffee", "knitting a wool sweater", "debugging memory leaks in C",
    "climbing in the Alps", "writing unit tests with pytest", "adopting a rescue dog",
    "learning Japanese kanji", "renovating a kitchen", "sailing across the Baltic sea",
    "chess opening theory", "composting kitchen scraps", "the physics of black holes",
    "fermenting kimchi at home", "building a mechanical keyboard", "birdwatching in wetlands",
    "running a PostgreSQL replica",
]
ANGLES = [
    "Notes on {t}.", "A beginner question about {t}.", "The user spent the weekend {t}.",
    "Lessons learned while {t}.", "A friend recommended a book on {t}.",
    "Common mistakes when {t}.", "Budget and costs of {t}.", "Tools needed for {t}.",
    "A short story involving {t}.", "Plans for next year: {t}.",
]
CORPUS = [a.format(t=t) for t in TOPICS for a in ANGLES]  # 250 memories
HNSW_THRESHOLD = 50


def unit_rows(n: int, dims: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, dims)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


# --------------------------------------------------------------------------- unit level


def test_exact_search_upsert_remove_and_subsets(embed) -> None:
    texts = CORPUS[:30]
    vectors = embed(texts)
    index = VectorIndex(384, hnsw_threshold=0)
    index.upsert(range(100, 130), vectors)
    assert len(index) == 30 and not index.uses_hnsw
    for i in (0, 7, 29):
        top = index.search(vectors[i], 3)
        assert top[0][0] == 100 + i and top[0][1] == pytest.approx(1.0, abs=1e-5)
        assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)
    # replace a vector under the same key
    index.upsert([100], vectors[5:6])
    assert len(index) == 30
    assert {k for k, _ in index.search(vectors[5], 2)} == {100, 105}
    # remove (missing keys ignored)
    index.remove([105, 999])
    assert len(index) == 29
    assert 105 not in {k for k, _ in index.search(vectors[5], 30)}
    # allowed subset
    allowed = np.array([110, 111, 112, 105], dtype=np.int64)
    hits = index.search(vectors[0], 10, allowed=allowed)
    assert {k for k, _ in hits} == {110, 111, 112}
    assert index.search(vectors[0], 0) == []
    assert set(index.vectors_for([101, 105, 4242])) == {101}
    # re-adding a removed key brings it back
    index.upsert([105], vectors[5:6])
    assert len(index) == 30 and index.search(vectors[5], 1)[0][0] in (100, 105)


def test_growth_beyond_initial_capacity() -> None:
    rows = unit_rows(3000, seed=1)
    index = VectorIndex(8, hnsw_threshold=0)
    for start in range(0, 3000, 700):
        index.upsert(range(start, min(start + 700, 3000)), rows[start : start + 700])
    assert len(index) == 3000
    for i in (0, 1023, 1024, 2999):
        assert index.search(rows[i], 1)[0][0] == i


def test_a_batch_repeating_a_key_keeps_its_last_vector() -> None:
    rows = unit_rows(4, seed=2)
    index = VectorIndex(8, hnsw_threshold=0)
    index.upsert([1, 2, 1], rows[:3])  # key 1 twice in one batch: the later vector wins
    assert len(index) == 2
    assert index.search(rows[2], 1) == [(1, pytest.approx(1.0, abs=1e-5))]
    assert set(index.vectors_for([1, 2])) == {1, 2}
    index.upsert([3, 4], rows[2:4])  # new keys after known ones
    assert len(index) == 4 and index.search(rows[3], 1)[0][0] == 4


def test_empty_index() -> None:
    index = VectorIndex(8)
    assert len(index) == 0
    assert index.search(unit_rows(1)[0], 5) == []


def test_hnsw_graph_matches_exact_search(embed) -> None:
    vectors = embed(CORPUS)
    exact = VectorIndex(384, hnsw_threshold=0)
    graph = VectorIndex(384, hnsw_threshold=HNSW_THRESHOLD)
    exact.upsert(range(len(CORPUS)), vectors)
    graph.upsert(range(len(CORPUS)), vectors)
    assert graph.uses_hnsw and not exact.uses_hnsw
    queries = embed(["how do I bake bread", "marathon training plan", "black hole physics",
                     "keyboard switches", "dog adoption", CORPUS[17], CORPUS[203]])
    for q in queries:
        e, g = exact.search(q, 5), graph.search(q, 5)
        assert g[0][0] == e[0][0]
        assert len({k for k, _ in e} & {k for k, _ in g}) >= 4
        # The graph finds neighbours on int8 copies; what it returns is re-scored exactly.
        exact_sims = dict(exact.search(q, len(CORPUS)))
        assert all(s == pytest.approx(exact_sims[k], abs=1e-5) for k, s in g)
        assert [s for _, s in g] == sorted((s for _, s in g), reverse=True)


# --------------------------------------------------------------------------- through the store


@pytest.fixture(scope="module")
def hnsw_template(tmp_path_factory, shared_embedder) -> Path:
    """A closed store of 250 memories whose index uses the HNSW graph (built once)."""
    path = tmp_path_factory.mktemp("hnsw") / "m.db"
    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder,
                      hnsw_threshold=HNSW_THRESHOLD) as mem:
        mem.add_many([{"content": text, "id": f"m{i:03d}"} for i, text in enumerate(CORPUS)])
        assert mem.store.vector_cache.index.uses_hnsw
    return path


def copy_store(template: Path, target_dir: Path, *, with_graph: bool = True) -> Path:
    target = target_dir / "m.db"
    shutil.copy(template, target)
    for suffix in (".hnsw.usearch", ".hnsw.json", ".hnsw.vectors"):
        source = template.with_name(template.name + suffix)
        if with_graph and source.exists():
            shutil.copy(source, target.with_name(target.name + suffix))
    return target


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts HNSW graph builds (a reused saved graph is not a build)."""
    calls: list[int] = []
    original = vector_index_module.VectorIndex._build_hnsw

    def counting(self):  # type: ignore[no-untyped-def]
        calls.append(self._live)
        return original(self)

    monkeypatch.setattr(vector_index_module.VectorIndex, "_build_hnsw", counting)
    return calls


def top_ids(mem, query: str, n: int = 5) -> list[str]:
    return [h.memory.id for h in mem.search(query, n, mode="vector", cognitive=False,
                                            associations=False, record_access=False)]


QUERIES = ["baking bread with a starter", "running long distances", "Rust ownership rules",
           "fixing my bike", "growing vegetables", "saxophone solos", "stars at night",
           "mountain climbing trip", "kanji study plan", "database replication"]


def test_hnsw_path_gives_same_top_result_as_exact(hnsw_template, tmp_path, open_mem) -> None:
    path = copy_store(hnsw_template, tmp_path)
    graph = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    exact = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000)
    assert graph.store.vector_cache.index.uses_hnsw
    assert not exact.store.vector_cache.index.uses_hnsw
    for query in QUERIES + [CORPUS[42], CORPUS[199]]:
        assert top_ids(graph, query, 1) == top_ids(exact, query, 1), query
    assert top_ids(graph, CORPUS[42], 1) == ["m042"]


def test_threshold_zero_never_uses_a_saved_graph(hnsw_template, tmp_path, open_mem) -> None:
    path = copy_store(hnsw_template, tmp_path)
    exact = open_mem(f"sqlite:///{path}", hnsw_threshold=0)
    assert not exact.store.vector_cache.index.uses_hnsw


def test_saved_graph_is_reused_when_consistent(hnsw_template, tmp_path, open_mem, builds) -> None:
    path = copy_store(hnsw_template, tmp_path)
    graph_file = path.with_name(path.name + ".hnsw.usearch")
    meta_file = path.with_name(path.name + ".hnsw.json")
    assert graph_file.exists() and meta_file.exists()
    assert json.loads(meta_file.read_text())["count"] == len(CORPUS)
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem.store.vector_cache.index.uses_hnsw
    assert builds == []  # loaded, not rebuilt
    assert top_ids(mem, CORPUS[7], 1) == ["m007"]
    mem.close()
    # reopened again after a clean close: still reused
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem.store.vector_cache.index is not None and builds == []
    # The reused graph answers as exact search does (a graph loaded wrongly would not).
    exact = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000)
    assert not exact.store.vector_cache.index.uses_hnsw
    for query in QUERIES[:4]:
        assert top_ids(mem, query, 1) == top_ids(exact, query, 1), query
    sourdough = {f"m{i:03d}" for i in range(len(ANGLES))}  # TOPICS[0] is sourdough bread
    assert top_ids(mem, QUERIES[0], 1)[0] in sourdough


def test_graph_is_repaired_when_table_changed_behind_it(hnsw_template, tmp_path, open_mem, builds) -> None:
    path = copy_store(hnsw_template, tmp_path)
    # Another writer that never builds a graph adds, re-embeds and deletes memories.
    other = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000)
    new = other.add("A completely new memory about volcanic eruptions in Iceland")
    other.update("m005", content="Restoring the stained glass windows of a gothic cathedral")
    other.delete("m010")
    other.close()
    assert builds == []
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem.store.vector_cache.index.uses_hnsw and builds == []  # the saved graph, repaired
    assert len(mem.store.vector_cache.index._hnsw) == len(CORPUS)
    assert top_ids(mem, "volcano eruption Iceland", 1) == [new.id]
    assert top_ids(mem, "stained glass cathedral windows", 1) == ["m005"]
    assert "m010" not in top_ids(mem, CORPUS[10], 20)
    mem.close()
    meta = json.loads(path.with_name(path.name + ".hnsw.json").read_text())
    assert meta["count"] == len(CORPUS)  # the repaired graph was saved
    again = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert again.store.vector_cache.index is not None and builds == []
    assert top_ids(again, "volcano eruption Iceland", 1) == [new.id]


def test_graph_is_repaired_after_direct_table_edit(hnsw_template, tmp_path, open_mem, builds) -> None:
    path = copy_store(hnsw_template, tmp_path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM memories WHERE id = 'm020'")
    conn.commit()
    conn.close()
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem.store.vector_cache.index is not None and builds == []
    assert "m020" not in top_ids(mem, CORPUS[20], 10)


def test_graph_is_rebuilt_when_too_much_changed(hnsw_template, tmp_path, open_mem, builds) -> None:
    path = copy_store(hnsw_template, tmp_path)
    other = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000)
    for i in range(0, len(CORPUS) // 4):  # a quarter of the memories: past the repair limit
        other.delete(f"m{i:03d}")
    other.close()
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem.store.vector_cache.index is not None  # waits for the load opening started
    assert builds == [len(CORPUS) - len(CORPUS) // 4]
    assert "m003" not in top_ids(mem, CORPUS[3], 20)
    assert top_ids(mem, CORPUS[200], 1) == ["m200"]


def test_corrupt_or_missing_graph_file_is_rebuilt(hnsw_template, tmp_path, open_mem, builds) -> None:
    path = copy_store(hnsw_template, tmp_path)
    graph_file = path.with_name(path.name + ".hnsw.usearch")
    graph_file.write_bytes(graph_file.read_bytes()[:1000])  # truncated
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem.store.vector_cache.index is not None  # waits for the load opening started
    assert len(builds) == 1
    assert top_ids(mem, CORPUS[3], 1) == ["m003"]
    mem.close()
    (tmp_path / "nograph").mkdir()
    path2 = copy_store(hnsw_template, tmp_path / "nograph", with_graph=False)
    mem2 = open_mem(f"sqlite:///{path2}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem2.store.vector_cache.index is not None
    assert len(builds) == 2
    assert top_ids(mem2, CORPUS[3], 1) == ["m003"]


def test_writes_in_hnsw_mode(hnsw_template, tmp_path, open_mem) -> None:
    path = copy_store(hnsw_template, tmp_path)
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert mem.store.vector_cache.index.uses_hnsw
    # update re-embeds in place: found by its new meaning, once
    mem.update("m100", content="Quantum entanglement experiments with photons")
    hits = top_ids(mem, "quantum entanglement photons", 10)
    assert hits[0] == "m100" and hits.count("m100") == 1
    # delete: gone from the graph
    mem.delete("m101")
    assert "m101" not in top_ids(mem, CORPUS[101], 50)
    # add: joins the graph
    new = mem.add("Tuning the carburetor of a vintage motorcycle")
    assert top_ids(mem, "motorcycle carburetor tuning", 1) == [new.id]
    mem.close()
    # everything survives close/reopen (graph saved with the new state)
    again = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert top_ids(again, "motorcycle carburetor tuning", 1) == [new.id]
    assert "m101" not in top_ids(again, CORPUS[101], 50)
    assert top_ids(again, "quantum entanglement photons", 1) == ["m100"]


def test_filtered_search_in_hnsw_mode_is_exact(hnsw_template, tmp_path, open_mem) -> None:
    path = copy_store(hnsw_template, tmp_path)
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    tagged = mem.add("Sourdough hydration ratios for rye flour", tags=["baking"])
    hits = mem.search("bread baking", 5, mode="vector", tags=["baking"], cognitive=False,
                      associations=False, record_access=False)
    assert [h.memory.id for h in hits] == [tagged.id]


def test_an_index_read_page_by_page_equals_one_read_at_once(
        hnsw_template, tmp_path, open_mem, monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryd.store.sqlite import search as search_module

    path = copy_store(hnsw_template, tmp_path, with_graph=False)
    whole = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000).store.vector_cache.index
    monkeypatch.setattr(search_module, "_SYNC_PAGE", 7)  # 250 vectors in 36 pages
    paged = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000).store.vector_cache.index
    assert len(paged) == len(whole) == len(CORPUS)
    keys = list(whole._pos)
    mine, theirs = whole.vectors_for(keys), paged.vectors_for(keys)
    assert all(np.array_equal(mine[k], theirs[k]) for k in keys)
    query = mine[keys[42]]
    assert paged.search(query, 10) == whole.search(query, 10)


def _edit_vector_in_place(path: Path, memory_id: str, vector: np.ndarray) -> None:
    """Overwrite a stored vector without a new sequence number (what no memoryd write does)."""
    conn = sqlite3.connect(path)
    conn.execute("UPDATE memory_vectors SET vector = ? WHERE memory_rowid = "
                 "(SELECT rowid FROM memories WHERE id = ?)",
                 (vector.astype(np.float32).tobytes(), memory_id))
    conn.commit()
    conn.close()


def test_saved_vectors_are_read_instead_of_the_table_when_it_is_unchanged(
        hnsw_template, tmp_path, open_mem, builds) -> None:
    path = copy_store(hnsw_template, tmp_path)
    meta = json.loads(path.with_name(path.name + ".hnsw.json").read_text())
    assert isinstance(meta["vectors"], list)  # the sums the table is checked against
    assert path.with_name(path.name + ".hnsw.vectors").exists()
    # Same count, same last seq: the saved copy is trusted, so an edit behind memoryd's back
    # that kept the seq is not seen (it is how this test tells the two ways of loading apart).
    _edit_vector_in_place(path, "m042", -unit_rows(1, dims=384, seed=3)[0])
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert builds == [] and mem.store.vector_cache.index.uses_hnsw
    assert top_ids(mem, CORPUS[42], 1) == ["m042"]  # the saved vector, not the edited one
    for query in QUERIES[:4]:
        assert top_ids(mem, query, 1)[0] in top_ids(mem, query, 3)


def test_saved_vectors_are_not_trusted_when_the_table_changed_or_the_file_is_bad(
        hnsw_template, tmp_path, open_mem, builds) -> None:
    path = copy_store(hnsw_template, tmp_path)
    other = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000)  # no graph: nothing saved
    new = other.add("A completely new memory about volcanic eruptions in Iceland")
    other.close()
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert top_ids(mem, "volcano eruption Iceland", 1) == [new.id]  # read from the table
    mem.close()  # saves the graph and the vectors again, now with the new memory
    vectors = path.with_name(path.name + ".hnsw.vectors")
    vectors.write_bytes(vectors.read_bytes()[:5000])  # truncated
    _edit_vector_in_place(path, "m042", -unit_rows(1, dims=384, seed=3)[0])
    again = open_mem(f"sqlite:///{path}", hnsw_threshold=1_000_000)
    assert len(again.store.vector_cache.index) == len(CORPUS) + 1
    assert "m042" not in top_ids(again, CORPUS[42], 3)  # the table's (edited) vector
    assert builds == []


def test_a_row_with_an_older_seq_is_not_hidden_by_the_saved_vectors(
        hnsw_template, tmp_path, open_mem) -> None:
    """A bulk import leaves rows with the sequence numbers they had: a replaced row with an
    older number keeps the count and the last number, but not the sum of the numbers."""
    path = copy_store(hnsw_template, tmp_path)
    _edit_vector_in_place(path, "m042", -unit_rows(1, dims=384, seed=3)[0])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE memory_vectors SET seq = 0 WHERE memory_rowid = "
                 "(SELECT rowid FROM memories WHERE id = 'm042')")
    conn.commit()
    conn.close()
    mem = open_mem(f"sqlite:///{path}", hnsw_threshold=HNSW_THRESHOLD)
    assert "m042" not in top_ids(mem, CORPUS[42], 3)  # the table's vector, not the saved one


def test_stored_vectors_come_from_the_loaded_index_and_follow_other_writers(
        tmp_path: Path, shared_embedder) -> None:
    """``Store.vectors`` (a search's keyword candidates' cosines) reads the loaded index, caught
    up first: the table's exact values, what another process wrote since, and never a vector
    a transaction wrote and rolled back."""
    from memoryd.store.sqlite import SQLiteStore

    url = f"sqlite:///{tmp_path}/v.db"
    texts = ["The billing service runs on port 8443", "Deploys go out on Tuesdays",
             "Alice maintains the search cluster"]
    with memoryd.open(url, embedder=shared_embedder) as writer:
        ids = [writer.add(t).id for t in texts]
    reader = SQLiteStore(tmp_path / "v.db")
    try:
        reader.vector_cache.wait()
        table = reader.vector_cache._table_vectors(ids)
        with pytest.MonkeyPatch.context() as patch:  # the loaded index answers alone
            patch.setattr(reader.vector_cache, "_table_vectors", _table_not_read)
            held = reader.vectors(ids + ["missing"])
        assert held.keys() == set(ids)
        assert all(held[i].tobytes() == table[i].tobytes() for i in ids)
        other = shared_embedder.embed_one("The office coffee machine is broken again")
        with memoryd.open(url, embedder=shared_embedder) as writer:
            writer.store.replace_vectors({ids[0]: other}, shared_embedder.model_id)
            writer.delete(ids[1])
        now = reader.vectors(ids)
        assert now.keys() == {ids[0], ids[2]}
        np.testing.assert_array_equal(now[ids[0]], other.astype(np.float32))
        assert now[ids[2]].tobytes() == table[ids[2]].tobytes()
        # Inside a write transaction the table answers: the index never takes in a vector
        # that is then rolled back.
        with pytest.raises(RuntimeError), reader.transaction():
            reader.replace_vectors({ids[2]: other}, shared_embedder.model_id)
            np.testing.assert_array_equal(reader.vectors([ids[2]])[ids[2]], other)
            raise RuntimeError("roll back")
        assert reader.vectors([ids[2]])[ids[2]].tobytes() == table[ids[2]].tobytes()
    finally:
        reader.close()


def _table_not_read(memory_ids: list[str]) -> dict[str, np.ndarray]:
    raise AssertionError(f"read from the table: {memory_ids}")
