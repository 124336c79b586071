"""An int8-arithmetic copy of an ONNX model whose weights are stored in int8, for short calls.

The packaged MiniLM stores each projection as int8 weights with a scale per output column
(``Cast(W_q) -> Mul(scale) -> MatMul``). ONNX Runtime folds those into float32 as the session
loads, so every inference reads about 42 MB of float weights: a one-text query is bound by
that memory traffic, not by arithmetic. The copy made here keeps the same int8 weights and
scales and lets the runtime compute on them:

- each projection becomes ``MatMulNBits`` (8 bits, blocks of 32 along the input, accuracy
  level 4: the activations are quantised to int8 per block of 32 as they are computed); the
  stored scale of a column is repeated for each of its blocks, so the weights are exactly
  the packaged ones;
- each embedding table is gathered in int8 and scaled after the lookup
  (``Gather(W_q) -> Cast -> Mul(Gather(scale))``), the same numbers without a 47 MB float
  table.

Its vectors agree with the float path's to a cosine of at least 0.999 (the bar for sharing a
model id, see memoryd.embed.onnx); bench/results/embed_query_int8.md measures them and the
recall of questions embedded by the copy. The copy is written once, next to nothing else, in
memoryd's cache directory, keyed by the source file's path, size and modification time; the
``onnx`` package is needed to write it, never to load it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: Bump when the rewrite changes, so an old copy is not reused.
REWRITE_VERSION = 1
#: Input positions per activation block: 32 keeps every vector within cosine 0.999 of the
#: float path (64 and 128 are a little faster and do not).
BLOCK = 32
#: MatMulNBits' accuracy level 4: int8 activations (the level that uses VNNI/AMX).
ACCURACY_INT8 = 4


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/memoryd/models`` (``~/.cache/memoryd/models`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memoryd" / "models"


def int8_copy(source: Path, cache_dir: Path) -> Path | None:
    """The int8-arithmetic copy of ``source``: the cached file, written now if missing.

    None when the model has no int8 weight chains to rewrite, when the ``onnx`` package is
    not installed, or when the copy cannot be written (the caller then runs ``source``).
    """
    target = cache_dir / f"{source.stem}-int8q-{_key(source)}.onnx"
    if target.is_file():
        return target
    try:
        import onnx
    except ImportError:
        log.info("onnx is not installed: short embedding calls run the float path")
        return None
    try:
        model = onnx.load(str(source))
        if not rewrite(model):
            return None
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Written beside the target and renamed into place: a reader never sees half a file,
        # and two processes writing at once each leave a whole one.
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=target.stem, suffix=".tmp")
        os.close(fd)
        try:
            onnx.save(model, tmp)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except Exception as exc:  # noqa: BLE001 - the float path still serves every call
        log.warning("could not write the int8 copy of %s (%s): short embedding calls run "
                    "the float path", source, exc)
        return None
    return target


def _key(source: Path) -> str:
    stat = source.stat()
    ident = f"{source.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{REWRITE_VERSION}|{BLOCK}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def rewrite(model: Any) -> int:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place; returns how many weight chains
    were rewritten (0: nothing to do, the model is left as it was)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {out: n for n in graph.node for out in n.output}
    readers: dict[str, list[Any]] = {}
    for n in graph.node:
        for name in n.input:
            readers.setdefault(name, []).append(n)

    replaced: dict[int, list[Any]] = {}  # id(node) -> the nodes standing in its place
    dropped: set[int] = set()
    added: list[Any] = []
    for node in graph.node:
        chain = _weight_chain(node, producer, readers, inits)
        if chain is None:
            continue
        cast, scale_mul = chain
        weights = numpy_helper.to_array(inits[cast.input[0]])
        scale = numpy_helper.to_array(inits[scale_mul.input[1]]).astype(np.float32)
        name = cast.input[0]
        if node.op_type == "MatMul" and _per_column(weights, scale):
            tensors, new = _matmul_nbits(node, name, weights, scale, helper, numpy_helper)
        elif node.op_type == "Gather" and _axis(node) == 0 and _per_row(weights, scale):
            tensors, new = _gather_int8(node, name, scale_mul.input[1], helper)
        else:
            continue
        added += tensors
        replaced[id(node)] = new
        dropped |= {id(cast), id(scale_mul)}
    if not replaced:
        return 0
    nodes = []
    for n in graph.node:
        if id(n) in replaced:
            nodes += replaced[id(n)]
        elif id(n) not in dropped:
            nodes.append(n)
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for n in graph.node for name in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(replaced)


def _weight_chain(node: Any, producer: dict[str, Any], readers: dict[str, list[Any]],
                  inits: dict[str, Any]) -> tuple[Any, Any] | None:
    """``(cast, mul)`` when ``node`` reads ``Mul(Cast(int8 initialiser), scale initialiser)``
    and nothing else reads the chain."""
    if node.op_type not in ("MatMul", "Gather"):
        return None
    slot = 1 if node.op_type == "MatMul" else 0
    mul = producer.get(node.input[slot])
    if mul is None or mul.op_type != "Mul" or mul.input[1] not in inits:
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in inits:
        return None
    if inits[cast.input[0]].data_type != 3:  # TensorProto.INT8
        return None
    if len(readers[mul.output[0]]) != 1 or len(readers[cast.output[0]]) != 1:
        return None
    return cast, mul


def _axis(node: Any) -> int:
    return next((a.i for a in node.attribute if a.name == "axis"), 0)


def _per_column(weights: np.ndarray, scale: np.ndarray) -> bool:
    return weights.ndim == 2 and scale.shape == (1, weights.shape[1]) \
        and weights.shape[0] % BLOCK == 0


def _per_row(weights: np.ndarray, scale: np.ndarray) -> bool:
    return weights.ndim == 2 and scale.shape == (weights.shape[0], 1)


def _matmul_nbits(node: Any, name: str, weights: np.ndarray, scale: np.ndarray,
                  helper: Any, numpy_helper: Any) -> tuple[list[Any], list[Any]]:
    """``MatMul(x, W_q * scale)`` as MatMulNBits on the same int8 weights (stored as uint8
    with zero point 128, column by column, ``BLOCK`` rows per block)."""
    k, n = weights.shape
    blocks = k // BLOCK
    packed = (weights.astype(np.int16) + 128).astype(np.uint8).T.reshape(n, blocks, BLOCK)
    scales = np.repeat(scale.reshape(n, 1), blocks, axis=1).reshape(-1)
    zero = np.full(n * blocks, 128, dtype=np.uint8)
    tensors = [numpy_helper.from_array(np.ascontiguousarray(packed), f"{name}_nbits"),
               numpy_helper.from_array(scales, f"{name}_nbits_scale"),
               numpy_helper.from_array(zero, f"{name}_nbits_zero")]
    new = helper.make_node(
        "MatMulNBits",
        [node.input[0], f"{name}_nbits", f"{name}_nbits_scale", f"{name}_nbits_zero"],
        list(node.output), name=f"{node.name or name}_nbits", domain="com.microsoft",
        K=k, N=n, bits=8, block_size=BLOCK, accuracy_level=ACCURACY_INT8)
    return tensors, [new]


def _gather_int8(node: Any, name: str, scale_name: str, helper: Any) -> tuple[list[Any], list[Any]]:
    """``Gather(W_q * scale, ids)`` as the int8 rows and their scales gathered, then multiplied."""
    ids = node.input[1]
    rows, wide, scales = f"{name}_rows", f"{name}_rows_f", f"{name}_rows_scale"
    new = [helper.make_node("Gather", [name, ids], [rows], name=f"{name}_gather_q"),
           helper.make_node("Cast", [rows], [wide], name=f"{name}_cast", to=1),
           helper.make_node("Gather", [scale_name, ids], [scales], name=f"{name}_gather_scale"),
           helper.make_node("Mul", [wide, scales], list(node.output), name=f"{name}_scale")]
    return [], new
