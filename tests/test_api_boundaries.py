"""Layer boundaries: the faces (api, mcp) hold no logic and reach the engine only through the
operation registry; the engine never imports a face; every operation has a face."""

from __future__ import annotations

import ast
from pathlib import Path

import memoryd
from memoryd.api.routes import BINDINGS
from memoryd.operations import REGISTRY, tool_operations

PACKAGE = Path(memoryd.__file__).parent
FACE_MAY_IMPORT = {
    "memoryd",
    "memoryd.api",
    "memoryd.mcp",
    "memoryd.operations",
    "memoryd.keys",
    "memoryd.config",
    "memoryd.errors",
}
FACES = ("memoryd.api", "memoryd.mcp", "memoryd.operations", "memoryd.cli")


def _runtime_imports(path: Path) -> set[str]:
    """Modules imported outside `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for child in node.body for n in ast.walk(child)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return {m for m in out if m == "memoryd" or m.startswith("memoryd.")}


def _package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def test_faces_reach_the_engine_only_through_operations():
    for sub in ("api", "mcp"):
        for path in (PACKAGE / sub).glob("*.py"):
            bad = {m for m in _runtime_imports(path) if _package_of(m) not in FACE_MAY_IMPORT}
            assert not bad, f"{path.name} imports {sorted(bad)}"


def test_engine_layers_never_import_a_face():
    paths = [PACKAGE / "opening.py", PACKAGE / "models.py"]
    for sub in ("engine", "store", "cognition", "retrieval", "embed"):
        paths += list((PACKAGE / sub).glob("*.py"))
    for path in paths:
        bad = {m for m in _runtime_imports(path) if m.startswith(FACES)}
        assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"


def test_every_operation_has_a_face_and_every_face_an_operation():
    exposed = {b.op for b in BINDINGS} | {op.name for op in tool_operations().values()}
    assert exposed == set(REGISTRY)
    for op in REGISTRY.values():
        assert op.description and op.title, op.name
