"""The registry of quantities: names spelled once, rows consumed generically, the catalog one source."""

import ast
from pathlib import Path

import pytest

import numeric
from derivations import CORE, LAYERS, QUANTITIES, formulas, quantities
from derivations.catalog import DEFINITIONS

ROOT = Path(__file__).resolve().parents[1]

# The registry itself, and the layer definitions, which state results by name.
LAYER_FILES = {ROOT / "derivations" / "layers" / f"{name}.py" for name in DEFINITIONS}
ALLOWED = {ROOT / "derivations" / "quantities.py"} | LAYER_FILES


def _quantity_names() -> set[str]:
    names = {quantity.stem for quantity in QUANTITIES}
    for layer in LAYERS.values():
        names |= set(quantities.names(layer))
    return names


def _spelled(path: Path, names: set[str], root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings
    ]


def test_no_module_spells_a_quantity_name_outside_the_registry():
    names = _quantity_names()
    sources = [p for folder in ("derivations", "numeric", "figures") for p in sorted((ROOT / folder).rglob("*.py"))]
    found = [hit for path in sources if path not in ALLOWED for hit in _spelled(path, names)]
    assert found == [], "quantity names spelled outside derivations/quantities.py:\n" + "\n".join(found)


def test_the_spelling_check_can_fail(tmp_path):
    module = tmp_path / "module.py"
    module.write_text('"""A docstring may mention spectral_norm."""\nNAME = "spectral_norm"\n')
    assert len(_spelled(module, _quantity_names(), root=tmp_path)) == 1


@pytest.mark.parametrize("key", list(LAYERS))
def test_every_formula_comes_from_a_registry_row(key):
    layer = LAYERS[key]
    expected = [quantity.name(item) for quantity, item in quantities.rows(layer) if quantity.formula]
    assert [f.name for f in formulas(key)] == expected


@pytest.mark.parametrize("key", list(LAYERS))
def test_every_layer_has_a_numeric_module(key):
    module = getattr(numeric, key)
    assert module.LAYER.key == key
    assert {"forward", "jacobian"} <= set(dir(module))
    assert __import__(f"numeric.{key}", fromlist=["LAYER"]).LAYER is module.LAYER
    assert key in numeric.__all__


def test_a_quantity_a_layer_lacks_is_refused_by_name():
    with pytest.raises(quantities.NotApplicable, match="layernorm_affine has no spectral_norm"):
        quantities.value(LAYERS["layernorm_affine"], "spectral_norm")
    with pytest.raises(ValueError, match="name must be a quantity"):
        quantities.value(LAYERS["layernorm"], "eigen_x")
    with pytest.raises(AttributeError, match="has no function 'spectral_norm'"):
        numeric.layernorm_affine.spectral_norm  # noqa: B018


def test_declared_directions_of_a_plain_layer_are_all_eigenvectors():
    """Only a wrapper may lose directions (to its gain); a plain layer's typo must not vanish silently."""
    from derivations.derive import eigen

    for key, layer in LAYERS.items():
        if not layer.requires:
            assert len(eigen.eigenpairs(layer)) == len(layer.directions), key


def test_every_display_rule_in_the_centred_input_writes_an_entry_as_itself():
    """A rule such as x_k -> c_k + mu rewrites every printed Jacobian, vjp, jvp and Hessian
    product: with c the centred input, c_m = x_m - mu, it must give back the entry it replaces
    (c_k - mu printed a J with an extra 2 mu c 1^T / (n sigma_b (sigma_b + epsilon)^2) term)."""
    import sympy as sp

    from derivations.symbols import c, mu, x

    def centred(expr: sp.Expr) -> sp.Expr:
        return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base == c, lambda e: x[e.indices] - mu)

    checked = 0
    for key, layer in LAYERS.items():
        for old, new in layer.display:
            if new.has(c):
                assert sp.expand(centred(new) - old) == 0, (key, old, new)
                checked += 1
    assert checked >= 6  # the three LayerNorms' x_i and x_k at least


def test_rows_derives_each_layer_in_the_worker_of_the_layer_it_is_built_on():
    """A wrapper of a wrapper (rmsnorm_gemma over rmsnorm_affine over rmsnorm) shares its root's task,
    so that its base is derived once; a layer whose base is not asked for is a task of its own."""
    from derivations.catalog import _tasks

    keys = ["rmsnorm", "layernorm", "rmsnorm_gemma", "groupnorm", "rmsnorm_affine", "dyt"]
    assert _tasks(keys) == [("rmsnorm", "rmsnorm_gemma", "rmsnorm_affine"), ("layernorm", "groupnorm"), ("dyt",)]
    assert _tasks(["rmsnorm_gemma", "rmsnorm_affine"]) == [("rmsnorm_gemma", "rmsnorm_affine")]
    assert _tasks(["rmsnorm_gemma"]) == [("rmsnorm_gemma",)]
    every = _tasks(list(LAYERS))
    assert sorted(key for task in every for key in task) == sorted(LAYERS)


@pytest.mark.parametrize(
    ("cores", "keys", "pool"),
    [
        (1, ["rmsnorm", "dyt"], None),
        (4, ["rmsnorm", "dyt"], 2),
        (2, ["rmsnorm", "dyt", "layernorm"], 2),
        (4, ["rmsnorm"], None),
    ],
)
def test_rows_forks_one_worker_a_core_and_never_more_than_the_tasks(monkeypatch, cores, keys, pool):
    """A worker count is speed, not output; pinned here all the same: as many as the cores, at most
    one a task, and none (the rows derived in this process) where that is fewer than two."""
    import multiprocessing

    from derivations import catalog

    sizes = []

    class Recorded:
        def __init__(self, workers, *args):
            sizes.append(workers)

        def __enter__(self):
            return self

        def __exit__(self, *args):
            return False

        def imap(self, function, tasks, chunksize=1):
            return map(function, tasks)

    class Context:
        Pool = Recorded

    monkeypatch.setattr(catalog.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Context())
    found = catalog.rows(keys)
    assert sizes == ([] if pool is None else [pool])
    assert sorted({str(row["layer"]) for row in found}) == sorted(keys)


def test_a_test_function_whose_every_case_is_slow_is_refused():
    """The collection check of conftest.py: make test runs every test function at least once."""
    from types import SimpleNamespace

    from conftest import functions_without_a_fast_case

    def item(nodeid, slow):
        return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if slow else None)

    items = [item("t.py::f[2]", False), item("t.py::f[3]", True), item("t.py::g[2]", True), item("t.py::h", False)]
    assert functions_without_a_fast_case(items) == ["t.py::g"]
    assert functions_without_a_fast_case(items[:2]) == []


def test_make_test_takes_each_layer_parametrized_function_on_the_core_layer_and_one_other():
    """grids.one_other_layer: the core layer's cases stay, one other layer per function stays (the
    same whatever else is collected), a case already slow stays slow, and a case without a layer is left."""
    from types import SimpleNamespace

    import grids

    def item(function, key, slow=False):
        marks = ["slow"] if slow else []
        return SimpleNamespace(
            nodeid=f"t.py::{function}[{key}]",
            callspec=SimpleNamespace(params={"key": key, "size": 2}),
            get_closest_marker=lambda name: object() if name in marks else None,
            add_marker=lambda mark: marks.append(mark.name),
            marks=marks,
        )

    others = [key for key in LAYERS if key != CORE]
    f = [item("f", key) for key in LAYERS]
    g = [item("g", key, slow=key != others[-1]) for key in others]  # only its last layer is fast so far
    single = [item(f"only{m}", key) for m, key in enumerate(others)]  # each takes its one layer
    plain = SimpleNamespace(nodeid="t.py::h", get_closest_marker=lambda name: None, marks=[])
    grids.one_other_layer([*f, *g, *single, plain])
    fast = {case.nodeid for case in (*f, *g) if "slow" not in case.marks}
    kept = [case for case in f if case.nodeid in fast]
    assert kept[0].callspec.params["key"] == CORE
    assert len(kept) == 2
    assert fast - {case.nodeid for case in f} == {f"t.py::g[{others[-1]}]"}
    assert plain.marks == []
    assert all(case.marks == [] for case in single)
    alone = [item("f", key) for key in LAYERS]
    single = [item(f"only{m}", key) for m, key in enumerate(others)]
    grids.one_other_layer([*alone[::-1], *single])  # another order: the same choice
    assert {case.nodeid for case in alone if "slow" not in case.marks} == {case.nodeid for case in kept}
    # A layer no function's hash took is taken by the first function (by name) that has it.
    many = {name: [item(name, key) for key in LAYERS] for name in ("b", "a", "c")}
    grids.one_other_layer([case for cases in many.values() for case in cases])
    fast_layers = {
        name: [c.callspec.params["key"] for c in cases if "slow" not in c.marks] for name, cases in many.items()
    }
    assert set().union(*fast_layers.values()) == set(LAYERS)
    assert len(fast_layers["b"]) == len(fast_layers["c"]) == 2
    assert set(fast_layers["a"]) >= set(LAYERS) - {fast_layers["b"][1], fast_layers["c"][1]}


def test_the_catalog_is_a_collection_of_the_built_in_layers_then_the_registered_ones():
    """len, iteration, membership, repr and the README's count agree, before and after a layer is
    registered and removed; an unknown key is refused by name, and the built-in ones stay."""
    import dataclasses
    import re

    from derivations.catalog import Catalog, UnknownLayer

    catalog = Catalog(DEFINITIONS)
    assert len(catalog) == len(list(catalog)) == len(DEFINITIONS) == len(set(DEFINITIONS))
    assert list(catalog) == list(DEFINITIONS)
    assert all(key in catalog for key in DEFINITIONS)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"the definitions of (\d+) layers", readme)
    assert stated is not None
    assert int(stated.group(1)) == len(DEFINITIONS)
    extra = dataclasses.replace(catalog[CORE], key="mine")
    catalog["mine"] = extra
    assert len(catalog) == len(DEFINITIONS) + 1
    assert list(catalog)[-1] == "mine"
    assert "mine" in catalog
    assert catalog["mine"] is extra
    assert repr(catalog).startswith(f"<Catalog of {len(DEFINITIONS) + 1} layers: {CORE}, ")
    del catalog["mine"]
    assert len(catalog) == len(DEFINITIONS)
    assert "mine" not in catalog
    assert "nope" not in catalog
    with pytest.raises(UnknownLayer) as refused:
        catalog["nope"]
    assert isinstance(refused.value, KeyError)
    assert refused.value.args == ("nope",)  # a KeyError's argument is the key, and only the key


@pytest.mark.parametrize("key", list(DEFINITIONS))
def test_a_conventions_column_names_the_first_item_of_its_quantity(key):
    """The slope column is headed (−t, 0, t): it names the first pattern's slope, not the uniform
    one's, which has the same value for RMSNorm and would print the same cell."""
    assert LAYERS[key].patterns[0].suffix == ""  # the (−t, 0, t) pattern: slope_at_zero
    names = [name for name, _ in quantities.columns(LAYERS[key])["slope at 0 on (−t, 0, t)"]]
    assert names == ["slope_at_zero"]


def test_a_catalog_layer_comes_back_from_the_derivation_cache_as_the_very_same_object():
    """A stored result names the catalog's layers (and their patterns) by reference, not by a copy:
    loaded back it holds the layer itself (layers compare by identity), for each layer built."""
    from derivations import cache

    layer = LAYERS["rmsnorm"]
    assert any(built is layer for built in LAYERS.loaded())
    back = cache.loads(cache.dumps((layer, layer.patterns[0], layer.statistics[-1])))
    assert back[0] is layer
    assert back[1] is layer.patterns[0]
    assert back[2] is layer.statistics[-1]


@pytest.mark.parametrize("key", [key for key, layer in LAYERS.items() if layer.parameters and layer.statistics])
def test_a_layer_with_parameters_says_why_it_has_no_second_moment_and_no_spectral_norm(key):
    """The rows a normalization with a gain lacks, with the reason `derivations` prints for a defined
    layer: the mean square of the output needs the gain's sums, and J with a gain is not symmetric."""
    why = dict(quantities.left_out(LAYERS[key]))
    assert why["second_moment"] == "the gain's sums enter, which the statistics of x do not fix"
    assert why["spectral_norm"] == "J is not symmetric, so its 2-norm is not its largest |eigenvalue|"
