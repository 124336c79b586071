"""The int8-arithmetic copy of the packaged model that search queries run."""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from memoryd.embed.onnx import PRESETS, QUERY_COPY_MAX_TOKENS, OnnxEmbedder
from memoryd.embed.onnx_int8 import int8_copy, rewrite
from memoryd.errors import EmbeddingError

SPEC = PRESETS["minilm-int8"]
TEXTS = [
    "staging runs on port 8443",
    "When do we ship the next release?",
    "Deploys go out on Tuesdays after standup; the on-call engineer watches the dashboards "
    "for an hour and rolls back if the error rate doubles.",
    "Prefers tabs over spaces, dark mode everywhere, and short commit messages.",
    "",
    "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try: return fn()\n"
    "        except IOError: time.sleep(2 ** i)",
    " ".join(["the cache was cold when the billing deploy failed on friday"] * 40),  # > 256 tokens
]


def _embedder(copy: Path | None) -> OnnxEmbedder:
    embedder = OnnxEmbedder(SPEC.onnx_path, SPEC.tokenizer_path, model_id=SPEC.model_id,
                            dims=SPEC.dims, max_tokens=SPEC.max_tokens, query_model=lambda: copy)
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def copy_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = int8_copy(SPEC.onnx_path(), tmp_path_factory.mktemp("models"))
    assert path is not None and path.is_file()
    return path


def test_every_projection_and_embedding_table_is_rewritten() -> None:
    model = onnx.load(str(SPEC.onnx_path()))
    assert rewrite(model) == 6 * 6 + 2  # six projections per layer, word and position tables
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMulNBits") == 36 and "Cast" in ops
    weights = [t for t in model.graph.initializer if t.data_type == TensorProto.FLOAT
               and np.prod(t.dims) > 100_000]
    assert weights == []  # no float copy of any large weight is left in the file


def test_the_copy_stays_within_cosine_0999_of_the_float_path(copy_path: Path) -> None:
    copy, floats = _embedder(copy_path), _embedder(None)
    short = [t for t in TEXTS if len(t.split()) < 20]
    a = np.stack([copy.embed_query(t) for t in short])
    b = floats.embed(short)
    cos = (a * b).sum(axis=1)
    empty = short.index("")
    assert np.delete(cos, empty).min() > 0.999, cos
    assert cos[empty] > 0.998  # two tokens ([CLS] [SEP]): the least averaging of the noise
    assert not np.allclose(a, b, atol=1e-6)  # it is the copy that ran, not the float path
    # the meaning is kept: the paraphrase is nearer than the unrelated text
    q = copy.embed_query("what port does staging use?")
    assert q @ b[0] > q @ b[3] + 0.2


def test_only_short_queries_run_the_copy_and_memories_never_do(copy_path: Path) -> None:
    embedder, floats = _embedder(copy_path), _embedder(None)
    assert embedder._float is None  # loading loaded the copy only
    expected = floats.embed(TEXTS)
    assert np.allclose(embedder.embed_one(TEXTS[0]), expected[0], atol=1e-6)
    assert embedder._float is not None  # a memory's vector: the model itself, loaded now
    assert np.allclose(embedder.embed(TEXTS), expected, atol=1e-6)
    long = TEXTS[-1]
    assert len(embedder._model.tokenizer.encode(long).ids) > QUERY_COPY_MAX_TOKENS
    assert np.allclose(embedder.embed_query(long), expected[-1], atol=1e-6)
    assert not np.allclose(embedder.embed_query(TEXTS[1]), expected[1], atol=1e-6)


def test_the_copy_is_written_once_and_reused(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(SPEC.onnx_path().read_bytes())
    first = int8_copy(source, tmp_path / "cache")
    assert first is not None
    stamp = first.stat().st_mtime_ns
    monkeypatch.setitem(sys.modules, "onnx", None)  # reuse needs no onnx
    assert int8_copy(source, tmp_path / "cache") == first
    assert first.stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.name]  # no stray temp file
    monkeypatch.delitem(sys.modules, "onnx")
    os.utime(source, ns=(stamp + 10**9, stamp + 10**9))  # a changed model gets a new copy
    second = int8_copy(source, tmp_path / "cache")
    assert second is not None and second != first


def test_without_onnx_queries_run_the_float_path(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert int8_copy(SPEC.onnx_path(), tmp_path) is None
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    embedder = OnnxEmbedder.preset("minilm-int8")
    embedder.load()
    floats = _embedder(None)
    assert np.allclose(embedder.embed_query(TEXTS[1]), floats.embed_one(TEXTS[1]), atol=1e-6)


def test_an_unwritable_cache_falls_back_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache directory would be")
    with caplog.at_level(logging.WARNING, logger="memoryd.embed.onnx_int8"):
        assert int8_copy(SPEC.onnx_path(), blocked / "models") is None
    assert "float path" in caplog.text


def test_a_model_without_int8_weights_is_left_alone(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.ones((32, 4), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    source = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph), str(source))
    assert rewrite(onnx.load(str(source))) == 0
    assert int8_copy(source, tmp_path / "cache") is None
    assert not (tmp_path / "cache").exists()


def test_a_copy_that_does_not_load_leaves_queries_on_the_float_path(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING, logger="memoryd.embed.onnx"):
        embedder = _embedder(broken)
    assert "float path" in caplog.text
    floats = _embedder(None)
    assert np.allclose(embedder.embed_query(TEXTS[1]), floats.embed_one(TEXTS[1]), atol=1e-6)


class _Held:
    """A session stand-in that counts its runs and, while ``hold`` is set, waits inside run()
    until ``release`` is set (so another call can arrive while this one is in progress)."""

    def __init__(self, session: Any, *, hold: bool = False, fail: bool = False) -> None:
        self._session, self.hold, self.fail = session, hold, fail
        self.runs = 0
        self.entered, self.release = threading.Event(), threading.Event()

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        self.entered.set()
        if self.hold:
            assert self.release.wait(30)
        if self.fail:
            raise RuntimeError("the runtime gave up")
        return self._session.run(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def test_a_lone_query_takes_two_threads_and_overlapping_ones_keep_one(copy_path: Path) -> None:
    embedder = _embedder(copy_path)
    model = embedder._model
    if (os.cpu_count() or 1) < 2:
        assert model.lone is None
        pytest.skip("one core: every query runs on the one-thread session")
    assert model.lone is not None
    one_thread = _embedder(copy_path)
    one_thread._model = dataclasses.replace(one_thread._model, lone=None)
    expected = [one_thread.embed_query(t) for t in TEXTS[:2]]
    lone, single = _Held(model.lone, hold=True), _Held(model.session)
    embedder._model = dataclasses.replace(model, lone=lone, session=single)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(embedder.embed_query, TEXTS[0], alone=True)
        assert lone.entered.wait(30)
        # The caller thinks it is alone, but an inference is in progress: one thread.
        second = embedder.embed_query(TEXTS[1], alone=True)
        assert (lone.runs, single.runs) == (1, 1)
        lone.release.set()
        vectors = [first.result(30), second]
    assert np.allclose(vectors, expected, atol=1e-6)  # the same vectors either way
    assert embedder._running == 0
    embedder.embed_query(TEXTS[1], alone=True)  # alone again: two threads
    assert (lone.runs, single.runs) == (2, 1)
    embedder.embed_query(TEXTS[1])  # another search is running (alone=False): one thread
    assert (lone.runs, single.runs) == (2, 2)
    embedder.embed_query(TEXTS[-1], alone=True)  # past the copy's token limit: the float path
    assert (lone.runs, single.runs) == (2, 2)


def test_a_failed_query_leaves_the_next_one_alone(copy_path: Path) -> None:
    embedder = _embedder(copy_path)
    if embedder._model.lone is None:
        pytest.skip("one core: no two-thread session")
    lone = _Held(embedder._model.lone, fail=True)
    embedder._model = dataclasses.replace(embedder._model, lone=lone)
    with pytest.raises(EmbeddingError, match="gave up"):
        embedder.embed_query(TEXTS[0], alone=True)
    assert embedder._running == 0  # the failure is not counted as running for ever
    lone.fail = False
    embedder.embed_query(TEXTS[0], alone=True)
    assert lone.runs == 2


def test_one_core_gets_no_two_thread_session(copy_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    embedder = _embedder(copy_path)
    assert embedder._model.lone is None
    floats = _embedder(None)
    assert embedder.embed_query(TEXTS[1]) @ floats.embed_one(TEXTS[1]) > 0.999
