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


def imports(module: str) -> list[tuple[str, str]]:
    """(the project module, the name as written) for every import in ``module``, at any depth:
    an import inside a function is an edge too, so none can hide a cycle."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    """The README's python -m numeric.verify, its path before numeric/checks/: it crashed on the
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
