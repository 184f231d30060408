"""The layout's rules, read from the sources with `ast`: no import cycle, even through an import
inside a function, and the layers' contracts (what may import what)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from derivations.catalog import DEFINITIONS, PACKAGE

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("derivations", "numeric", "figures")


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _module(name: str) -> str | None:
    """The project module ``name`` is, or is in (an imported name resolves to its module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node that runs: all of them but the body of an ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        out.append(node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return out


def imports(module: str, runtime: bool = False) -> list[tuple[str, str]]:
    """(the project module, the name as written) for every import in ``module``, at any depth:
    an import inside a function is an edge too, so none can hide a cycle.  ``runtime``: only
    the imports that run (not those for a type checker)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _runtime_nodes(tree) if runtime else ast.walk(tree):
        if isinstance(node, ast.Import):
            written = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            written = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        out.extend((found, name) for name in written if (found := _module(name)) and found != module)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


GRAPH = {module: {found for found, _ in imports(module)} for module in MODULES}


def test_the_graph_reads_the_imports_it_should():
    """The reader itself: module-level, relative and function-level imports are edges."""
    assert "derivations.quantities" in GRAPH["derivations.catalog"]
    assert "derivations.cli" in GRAPH["derivations.catalog"]  # imported inside a function
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_modules():
    assert cycles(GRAPH) == []


LAYER_MODULES = [f"{PACKAGE}.{key}" for key in DEFINITIONS]
FORBIDDEN = {
    "a layer definition": (LAYER_MODULES, ("derivations.claims", "derivations.codegen", "numeric", "figures")),
    "numeric": ([m for m in MODULES if m.startswith("numeric")], ("derivations.claims", "figures")),
    "derivations": ([m for m in MODULES if m.startswith("derivations")], ("figures",)),
}


@pytest.mark.parametrize("who", sorted(FORBIDDEN))
def test_what_may_import_what(who):
    modules, forbidden = FORBIDDEN[who]
    assert modules
    broken = [
        f"{module} imports {name}"
        for module in modules
        for found, name in imports(module)
        if any(found == f or found.startswith(f + ".") for f in forbidden)
    ]
    assert broken == []


def reach(module: str) -> set[str]:
    """Every project module that importing ``module`` can run: its imports that run, at any
    depth, each with the packages that hold it (importing a module runs their __init__)."""
    seen: set[str] = set()
    pending = [module]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        parts = current.split(".")
        pending.extend(".".join(parts[:end]) for end in range(1, len(parts)) if ".".join(parts[:end]) in MODULES)
        pending.extend(found for found, _ in imports(current, runtime=True))
    return seen


# What importing a module may run, at any depth.  numeric reads user definitions with the claim
# grammar (`language`) in the sandbox (`bounded`), never the checker.
SHARED_CLAIMS = {"derivations.claims", "derivations.claims.language", "derivations.claims.bounded"}
UNREACHABLE = {
    "a layer definition": (LAYER_MODULES, ("derivations.claims", "derivations.codegen", "numeric", "figures"), set()),
    "numeric": ([m for m in MODULES if m.startswith("numeric")], ("derivations.claims", "figures"), SHARED_CLAIMS),
}


@pytest.mark.parametrize("who", sorted(UNREACHABLE))
def test_what_importing_a_module_may_run(who):
    modules, forbidden, allowed = UNREACHABLE[who]
    broken = sorted(
        f"{module} runs {found}"
        for module in modules
        for found in reach(module)
        if any(found == f or found.startswith(f + ".") for f in forbidden) and found not in allowed
    )
    assert broken == []


def test_reach_follows_imports_through_other_modules_and_their_packages():
    """A scratch copy of the rules: a layer that imports `derivations.definition` (which imports
    the claim grammar) runs derivations.claims; with the checker's names imported eagerly in
    derivations/claims/__init__.py, so would numeric."""
    assert "derivations.claims.language" in reach("derivations.definition")
    assert "derivations.claims" in reach("derivations.claims.language")  # the package runs first
    assert "derivations.claims.checker" not in reach("derivations.definition")
    assert "derivations.claims.checker" in reach("derivations.claims.files")


def test_an_old_layer_core_or_kernel_path_imports_the_moved_module():
    """derivations.layernorm (now derivations/layers/), derivations._layer (now
    derivations/core/layer.py) and numeric._rescale (now numeric/kernels/) still import, as the
    same module objects."""
    import derivations
    import numeric

    assert {key.rpartition(".")[2] for key in LAYER_MODULES} == derivations.LAYER_FILES
    pairs = [(f"derivations.{key}", f"derivations.layers.{key}") for key in sorted(derivations.LAYER_FILES)]
    pairs += [(f"derivations.{old}", f"derivations.core.{new}") for old, new in derivations.CORE_MODULES.items()]
    pairs += [(f"numeric._{name}", f"numeric.kernels.{name}") for name in sorted(numeric.KERNELS)]
    assert len(pairs) == len(LAYER_MODULES) + 3 + 7
    for old, new in pairs:
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists(), old
        assert importlib.import_module(old) is importlib.import_module(new), old


def _private(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


def test_figures_imports_only_public_names_of_the_other_packages():
    broken = [
        f"{module} imports {name}"
        for module in MODULES
        if module.startswith("figures")
        for found, name in imports(module)
        if not found.startswith("figures") and _private(name)
    ]
    assert broken == []


def test_no_private_name_crosses_a_package_boundary():
    """derivations, numeric and figures use only each other's public names (a module or name with
    a leading underscore stays in its own package)."""
    broken = [
        f"{module} imports {name}"
        for module in MODULES
        for found, name in imports(module)
        if found.split(".")[0] != module.split(".")[0] and _private(name)
    ]
    assert broken == []


def test_the_machinerys_old_module_paths_import_the_moved_modules():
    """derivations/derive/ holds the machinery; derivations.jacobian and the like, its modules'
    paths before the move, still import, as the same module objects."""
    import derivations

    assert {"jacobian", "backward", "sums", "affine"} <= derivations.MOVED
    for name in sorted(derivations.MOVED):
        assert not (ROOT / "derivations" / f"{name}.py").exists(), name
        assert importlib.import_module(f"derivations.{name}") is importlib.import_module(f"derivations.derive.{name}")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("derivations.not_a_module")
    # Imported by an old path, a module keeps its own spec: a reload runs its file again (in a
    # child: a reload here would give the other tests' sums new classes).
    assert importlib.import_module("derivations.sums").__spec__.name == "derivations.derive.sums"
    reload = "import importlib, derivations.sums as m; m.Mean = None; importlib.reload(m); print(m.Mean.__name__)"
    done = subprocess.run([sys.executable, "-c", reload], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "Mean", done.stderr


def test_an_old_path_runs_with_python_m():
    """docs/getting-started.md's python -m numeric.verify, its path before numeric/checks/: it crashed on the
    finder (no get_code)."""
    done = subprocess.run([sys.executable, "-m", "numeric.verify", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")


def test_the_checks_old_module_paths_import_the_moved_modules():
    """numeric/checks/ holds verify, accuracy and agreement; numeric.verify and the like still import."""
    import numeric

    assert {"verify", "accuracy", "agreement"} <= numeric.CHECKS
    for name in sorted(numeric.CHECKS):
        assert not (ROOT / "numeric" / f"{name}.py").exists(), name
        assert importlib.import_module(f"numeric.{name}") is importlib.import_module(f"numeric.checks.{name}")


def test_every_package_folder_is_installed():
    """A wheel holds only the packages pyproject.toml lists: one left out (derivations.core, when
    it was new) imports in the editable checkout and fails in a plain pip install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for package in PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
    }
    assert folders == listed


# The dataclasses that are records made to be filled in or amended (reports and their findings, a
# review's rows and readers, a claim's domain and usage as it is read, a verdict before its audit,
# an accuracy result, a running child); every other one is a value, frozen: derivations are cached
# and shared between callers, so a value changed by one would change for every other. A class
# that moves between the two is a decision made here, not a side effect.
MUTABLE = {
    "derivations.claims.audit.Finding",
    "derivations.claims.audit.Report",
    "derivations.claims.audit.evaluate.Point",
    "derivations.claims.bounded._Child",
    "derivations.claims.checker.Verdict",
    "derivations.claims.checker._Sides",
    "derivations.claims.domain.Domain",
    "derivations.claims.semantics.Usage",
    "derivations.review.classify.Context",
    "derivations.review.classify.Entry",
    "derivations.review.document.Document",
    "derivations.review.document._Reader",
    "derivations.review.identify.Identification",
    "derivations.review.notation.Notation",
    "numeric.checks.accuracy.Result",
}


def test_every_dataclass_is_a_frozen_value_but_those_built_up_in_place():
    import dataclasses
    import inspect

    found = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and dataclasses.is_dataclass(cls):
                found[f"{name}.{cls.__qualname__}"] = cls.__dataclass_params__.frozen
    assert len(found) >= 60
    assert {name for name, frozen in found.items() if not frozen} == MUTABLE
