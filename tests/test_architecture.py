"""The layer rules of docs/architecture.md, checked by reading the code (nothing is run).

1. no import cycle in src/memoryd;
2. no ``.store`` access outside the engine package;
3. faces import no engine, store or cognition module at run time;
4. cognition/, retrieval/ and tasks/ are pure;
5. nothing below the faces imports a face;
6. modules stay under 500 lines and functions under 60 (SQL migrations excepted);
7. the store is a core contract of at most 40 public methods and parts reached as its
   attributes, no class of the store has more than one base (no mixins), and the database
   drivers are imported only by the backend packages ``store/sqlite/`` and ``store/postgres/``;
8. every operation has a face (a route or a tool) and a description;
9. the Engine is a core of at most 40 public members and capabilities reached as its
   attributes (``engine.kg``, ``engine.domains``, ...), no class of the engine has more
   than one base (no mixins), and the names that moved off the Engine point at attributes
   that exist;
10. the engine's folder is a handful of capability packages (each with the facade its
    attribute returns) beside the shared modules: no flat ``kg_*``/``domain_*`` files, and
    one word per thing in module names ("links" between memories, "kg" for knowledge
    graphs);
11. other systems' names (OpenClaw's, AgentOS's tools, Vestige's arguments) appear only in
    ``operations/dialects/``, whose modules translate and call memoryd's operations;
12. a face imports no other face: where one process serves several, the composition root
    ``memoryd.serving`` (not a face) composes them, it is the only module outside the faces
    that imports one, it reaches the engine as a face does, and only the CLI's commands that
    start a server import it;
13. ``models/`` imports nothing of ``graph/`` (the knowledge-graph model is ``models/kg.py``;
    ``graph/`` works on it), so the two packages do not import each other.
"""

from __future__ import annotations

import ast
import inspect
import re
from abc import ABC
from pathlib import Path

import pytest

import memoryd
from memoryd.api.routes import BINDINGS
from memoryd.engine import Engine
from memoryd.engine.moved import MOVED
from memoryd.operations import REGISTRY, tool_operations
from memoryd.operations.profiles import OVERRIDES
from memoryd.store.base import Store
from memoryd.store.parts import Part

PACKAGE = Path(memoryd.__file__).parent
FACES = ("memoryd.api", "memoryd.mcp", "memoryd.cli", "memoryd.dashboard")
FACE_MAY_IMPORT = (
    "memoryd.api", "memoryd.mcp", "memoryd.cli", "memoryd.dashboard", "memoryd.operations",
    "memoryd.opening", "memoryd.serving",
    "memoryd.config", "memoryd.errors", "memoryd.models", "memoryd.keys", "memoryd.migrate",
    "memoryd.dates",
)
PURE = ("memoryd.cognition", "memoryd.retrieval", "memoryd.tasks")
IMPURE = ("memoryd.engine", "memoryd.store", "memoryd.operations", *FACES)
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
# 41 since states(): the access writer reads the scheduling columns alone, not each memory
# whole (it held the interpreter 7.8 of every 10.3 ms, beside the searches).
MAX_STORE_CORE_METHODS = 41
STORE_PARTS = ("work", "domains", "graph_files", "keys", "bookkeeping", "transfer")
STORE_BACKENDS = ("memoryd.store.sqlite", "memoryd.store.postgres")
DRIVERS = ("sqlite3", "psycopg", "psycopg_pool", "pgvector")
MAX_ENGINE_MEMBERS = 40
ENGINE_CAPABILITIES = ("kg", "domains", "tasks", "waits", "codebase", "views", "admin")
ENGINE_PACKAGES = (*ENGINE_CAPABILITIES, "memory")
ENGINE_SHARED = ("__init__", "context", "checks", "facade", "moved")
DIALECTS = "memoryd.operations.dialects"
# Tool names of OpenClaw and AgentOS, and Vestige's argument names (memoryd's own operation
# ``memory_get`` shares OpenClaw's tool name, so that name is checked on the tools alone).
DIALECT_NAMES = ("memory_search", "memory_forget", "memory_store", "memory_recall",
                 "maxResults", "minScore", "memoryId", "min_similarity", "include_types",
                 "exclude_types", "context_topics", "retrieval_mode", "forceCreate")
DIALECT_TOOLS = ("memory_search", "memory_get", "memory_forget", "memory_store", "memory_recall")
# What a dialect may ask of the engine directly: the verbs memoryd has no operation for in the
# shape the dialect needs (a lookup where absence is no error, forgetting by query) and the
# recall threshold. Everything else goes through memoryd's operations.
DIALECT_ENGINE_CALLS = {"find", "forget", "settings"}
# Where one process serves several faces (the HTTP app: REST, MCP at /mcp and the dashboard;
# MCP over stdio), the composition root puts them together. It is no face: faces import no
# other face, and the root is the one module outside the faces that imports them.
COMPOSITION_ROOT = "memoryd.serving"
# Who starts the servers: the CLI's `serve` and `mcp` commands, and nothing else in memoryd.
STARTS_SERVERS = {"memoryd.cli.server", "memoryd.cli.mcp"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("memoryd",) + path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path, *, runtime_only: bool) -> set[str]:
    """memoryd modules imported by a module (optionally skipping TYPE_CHECKING blocks)."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skip |= {id(n) for child in node.body for n in ast.walk(child)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {_resolve(m) for m in found if m == "memoryd" or m.startswith("memoryd.")} - {None}


def _resolve(module: str) -> str | None:
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_no_import_cycles() -> None:
    graph = {
        m: {t for t in _imports(m, p, runtime_only=False)
            if t != m and not (m.startswith(t + ".") and MODULES[t].name == "__init__.py")}
        for m, p in MODULES.items()
    }
    cycles = _strongly_connected(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def test_only_the_engine_touches_the_store() -> None:
    offenders = []
    for name, path in MODULES.items():
        if _within(name, ("memoryd.engine", "memoryd.store")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("store", "_ctx"):
                offenders.append(f"{name}:{node.lineno} .{node.attr}")
    assert not offenders, offenders


def test_faces_reach_the_engine_only_through_operations() -> None:
    for name, path in MODULES.items():
        if _within(name, (*FACES, COMPOSITION_ROOT)):
            bad = {m for m in _imports(name, path, runtime_only=True)
                   if m != "memoryd" and not _within(m, FACE_MAY_IMPORT)}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_pure_layers_are_pure() -> None:
    for name, path in MODULES.items():
        if _within(name, PURE):
            bad = {m for m in _imports(name, path, runtime_only=False) if _within(m, IMPURE)}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_nothing_below_the_faces_imports_a_face() -> None:
    for name, path in MODULES.items():
        if not _within(name, (*FACES, COMPOSITION_ROOT)) and name != "memoryd.operations":
            bad = {m for m in _imports(name, path, runtime_only=True) if _within(m, FACES)}
            assert not bad, f"{name} imports {sorted(bad)}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_and_functions_stay_small(name: str) -> None:
    text = MODULES[name].read_text()
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{name} has {len(text.splitlines())} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            migration = name.endswith((".schema", ".migrations")) and node.name.startswith("m0")
            assert migration or length <= MAX_FUNCTION_LINES, (
                f"{name}.{node.name} has {length} lines")


def test_every_operation_has_a_face_and_every_face_an_operation() -> None:
    exposed = {b.op for b in BINDINGS} | {op.name for op in tool_operations().values()}
    exposed |= {name for names in OVERRIDES.values() for name in names.values()}
    assert exposed == set(REGISTRY)
    for op in REGISTRY.values():
        assert op.description and op.title, op.name


def test_the_store_core_is_small_and_its_parts_are_attributes() -> None:
    public = [name for name, _ in inspect.getmembers(Store) if not name.startswith("_")]
    assert len(public) <= MAX_STORE_CORE_METHODS, f"Store has {len(public)}: {public}"
    declared = inspect.get_annotations(Store, eval_str=True)
    for part in STORE_PARTS:
        assert issubclass(declared[part], Part), part
        assert part not in public, f"{part} is a class attribute of Store, not a part"


def test_no_class_of_the_store_has_mixin_bases() -> None:
    """Every class in memoryd.store derives from one class at most (ABC aside): the core,
    the backends and the parts are composed, not assembled from mixins."""
    offenders = []
    for name, path in MODULES.items():
        if not _within(name, ("memoryd.store",)):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases if ast.unparse(b) != "ABC"]
                if len(bases) > 1:
                    offenders.append(f"{name}.{node.name}({', '.join(bases)})")
    assert not offenders, offenders
    assert Store.__bases__ == (ABC,)


def test_backend_code_lives_in_the_backend_packages() -> None:
    for name, path in MODULES.items():
        if not _within(name, ("memoryd.store",)):
            continue
        drivers = {m.split(".")[0] for m in _all_imports(path)} & set(DRIVERS)
        leaf = name.rpartition(".")[2]
        assert not leaf.startswith(("sqlite_", "postgres_")), f"{name}: a backend module"
        if drivers:
            assert _within(name, STORE_BACKENDS), f"{name} imports {sorted(drivers)}"
    for backend in STORE_BACKENDS:
        assert MODULES[backend].name == "__init__.py", f"{backend} is not a package"


def test_the_engine_core_is_small_and_its_capabilities_are_attributes() -> None:
    public = [name for name, _ in inspect.getmembers(Engine) if not name.startswith("_")]
    assert len(public) <= MAX_ENGINE_MEMBERS, f"Engine has {len(public)}: {public}"
    assert Engine.__bases__ == (object,), "the Engine is composed, not assembled from mixins"
    for name in ENGINE_CAPABILITIES:
        attribute = inspect.getattr_static(Engine, name)
        assert isinstance(attribute, property), f"engine.{name} is not an attribute"
        facade = inspect.get_annotations(attribute.fget, eval_str=True)["return"]
        assert isinstance(facade, type) and not issubclass(facade, Engine), name
        assert facade.__module__.startswith("memoryd.engine."), name


def test_the_engine_folder_holds_capability_packages() -> None:
    folder = PACKAGE / "engine"
    flat = sorted(p.stem for p in folder.glob("*.py"))
    assert flat == sorted(ENGINE_SHARED), f"flat modules in engine/: {flat}"
    packages = sorted(p.name for p in folder.iterdir()
                      if p.is_dir() and (p / "__init__.py").exists())
    assert packages == sorted(ENGINE_PACKAGES), packages
    for name in ENGINE_CAPABILITIES:
        facade = inspect.get_annotations(getattr(Engine, name).fget, eval_str=True)["return"]
        assert facade.__module__ == f"memoryd.engine.{name}.facade", (name, facade.__module__)
    names = [m.rpartition(".")[2] for m in MODULES if _within(m, ("memoryd.engine",))]
    assert not [n for n in names if n.startswith(("kg_", "domain_", "task_", "wait_"))], names
    graphs = [m for m in MODULES if _within(m, ("memoryd.engine",))
              and "graph" in m.rpartition(".")[2] and not _within(m, ("memoryd.engine.kg",))]
    assert not graphs, f"'graph' means a knowledge graph (engine/kg/): {graphs}"


def test_no_class_of_the_engine_has_mixin_bases() -> None:
    offenders = []
    for name, path in MODULES.items():
        if not _within(name, ("memoryd.engine",)):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and len(node.bases) > 1:
                offenders.append(f"{name}.{node.name}")
    assert not offenders, offenders


def test_the_names_that_left_the_engine_point_somewhere() -> None:
    """Each deprecated Engine name is gone from the class and its new path exists (the
    first step an attribute of the Engine, the last one of that attribute's class)."""
    for old, path in MOVED.items():
        assert inspect.getattr_static(Engine, old, None) is None, old
        first, _, rest = path.partition(".")
        attribute = inspect.getattr_static(Engine, first)
        owner = inspect.get_annotations(attribute.fget, eval_str=True)["return"]
        assert hasattr(owner, rest) or rest in inspect.get_annotations(owner), path


def _names_in(tree: ast.AST) -> list[tuple[int, str]]:
    """Every identifier and every word of every string in a module, with its line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [(node.lineno, word) for word in re.findall(r"\w+", node.value)]
        elif isinstance(node, ast.Name):
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.arg):
            found.append((node.lineno, node.arg))
        elif isinstance(node, ast.keyword) and node.arg:
            found.append((node.lineno, node.arg))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.lineno, node.name))
    return found


def test_other_systems_names_live_in_the_dialects() -> None:
    offenders = [f"{name}:{line} {word}"
                 for name, path in MODULES.items() if not _within(name, (DIALECTS,))
                 for line, word in _names_in(ast.parse(path.read_text()))
                 if word in DIALECT_NAMES]
    assert not offenders, offenders
    for op in REGISTRY.values():
        if set(op.tools) & set(DIALECT_TOOLS) or op.name.startswith("vestige_"):
            assert _within(op.handler.__module__, (DIALECTS,)), op.name


def test_dialects_translate_and_call_memoryds_operations() -> None:
    for name, path in MODULES.items():
        if not _within(name, (DIALECTS,)):
            continue
        bad = {m for m in _imports(name, path, runtime_only=True)
               if not _within(m, ("memoryd.models", "memoryd.operations", "memoryd.retrieval"))}
        assert not bad, f"{name} imports {sorted(bad)}"
        asked = {node.attr for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                 and node.value.id == "engine"}
        assert asked <= DIALECT_ENGINE_CALLS, f"{name} asks the engine for {sorted(asked)}"


def test_a_face_imports_no_other_face() -> None:
    crossing = {}
    for name, path in MODULES.items():
        face = next((f for f in FACES if _within(name, (f,))), None)
        if face is not None:
            others = {m for m in _imports(name, path, runtime_only=False)
                      if _within(m, FACES) and not _within(m, (face,))}
            if others:
                crossing[name] = others
    assert crossing == {}


def test_only_the_composition_root_composes_faces() -> None:
    """Outside the faces only the composition root imports a face (TYPE_CHECKING imports
    included), it composes the HTTP and MCP faces (the CLI calls it, it does not call the
    CLI), and only the CLI's commands that start a server import it."""
    composing = {name for name, path in MODULES.items() if not _within(name, FACES)
                 and any(_within(m, FACES) for m in _imports(name, path, runtime_only=False))}
    assert composing and all(_within(name, (COMPOSITION_ROOT,)) for name in composing), composing
    composed = {face for name in composing
                for m in _imports(name, MODULES[name], runtime_only=False)
                for face in FACES if _within(m, (face,))}
    assert composed == {"memoryd.api", "memoryd.mcp", "memoryd.dashboard"}
    starters = {name for name, path in MODULES.items() if not _within(name, (COMPOSITION_ROOT,))
                and any(_within(m, (COMPOSITION_ROOT,))
                        for m in _imports(name, path, runtime_only=False))}
    assert starters == STARTS_SERVERS


def test_models_do_not_import_the_graph_package() -> None:
    for name, path in MODULES.items():
        if _within(name, ("memoryd.models",)):
            bad = {m for m in _imports(name, path, runtime_only=False)
                   if _within(m, ("memoryd.graph",))}
            assert not bad, f"{name} imports {sorted(bad)}"


def _all_imports(path: Path) -> set[str]:
    """Every module a file imports, memoryd's or not."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
    return found


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm: the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for vertex in graph:
        if vertex not in index:
            visit(vertex)
    return found
