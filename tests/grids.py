"""The parameter grids the tests share; the sets of layers come from the catalog."""

import importlib
import zlib
from types import ModuleType
from typing import Any

import pytest

from derivations import CORE, LAYERS, symmetric
from derivations.derive.grouped import Grouped
from derivations.derive.reparametrized import Reparametrized

EPSILONS = (1e-6, 1e-3, 0.04, 0.25, 1.0, 100.0)
SIZES = (2, 3, 7, 64)

# The layers that normalize each row of x along its last axis as one block; a layer
# applied block by block (groups, a batch) is its base layer per block, tested in test_grouped.
# A layer whose parameters are stored as functions of others (Gemma's 1 + w) is its base
# at those parameters, tested in test_reparametrized.
# A layer without epsilon (Dynamic Tanh: alpha in its place) is tested in its own file, tests/test_dyt.py.
ROW_LAYERS = tuple(
    key for key, layer in LAYERS.items() if not isinstance(layer, (Grouped, Reparametrized)) and layer.has_epsilon
)
# Every such layer whose Jacobian is symmetric, so that its eigenstructure is derived,
# and whose functions take x and epsilon alone (ScaleNorm's gain: tests/test_regimes.py).
SYMMETRIC_LAYERS = tuple(key for key in symmetric() if key in ROW_LAYERS and not LAYERS[key].scalars)
# The layers whose statistic has a kink at the degenerate input.
KINKED_LAYERS = tuple(key for key in SYMMETRIC_LAYERS if LAYERS[key].approach)
# The layers whose derivations are their own.  A wrapper derived as another layer
# (`Layer.derived_as`: groups, a batch, Gemma's 1 + w) prints that layer's formulas
# restated, compared formula by formula in test_grouped and test_reparametrized, so a
# proof run for it would repeat its base's.
DERIVED_LAYERS = tuple(key for key, layer in LAYERS.items() if layer.derived_as is layer)


def module(key: str) -> ModuleType:
    """The ``numeric.<key>`` module."""
    return importlib.import_module(f"numeric.{key}")


# The two tiers.  `make test` runs every test function, at least at its first cases, and a
# layer-parametrized one on the core layer and one other layer (`one_other_layer`); a case
# marked slow repeats the same check at a larger size, on a grid against mpmath, or on
# another layer.  CI (.ci/run) and `make test-all` run both tiers.
SLOW = pytest.mark.slow


def slow(case: Any) -> Any:
    """One parameter case (a value, or a tuple for several names) in the slow tier."""
    return pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=SLOW)


def tiered(cases: Any, fast: int) -> list[Any]:
    """The first ``fast`` cases in the fast tier, the rest in the slow one."""
    return [case if m < fast else slow(case) for m, case in enumerate(cases)]


def core_fast(cases: list[tuple[str, str]]) -> list[Any]:
    """(layer, function) cases: the core layer's, and each function the core layer lacks on the
    first layer that has it, in the fast tier; the other layers' in the slow one."""
    measured = {name for key, name in cases if key == CORE}
    out = []
    for key, name in cases:
        out.append((key, name) if key == CORE or name not in measured else slow((key, name)))
        measured.add(name)
    return out


def one_other_layer(items: list[Any]) -> None:
    """Mark slow each case of a layer-parametrized test (its ``key``) on a layer other than the
    core one and the other layer this test function takes in make test.

    That layer is chosen among the function's own layers (those with a case not already slow)
    by a hash of the function's name (crc32: the same in every run and every worker), so that
    make test takes every function down the core layer's path and one other's, and the layers
    spread over the functions.  A layer no function's hash chose is taken by the first function
    (by name) that has it, so that every collected layer is in make test.  The choice is made
    over what is collected, before -k deselects: a -k selection gets the layers of the run it
    selects from, while one file or one case named by its id may take a layer the full run
    leaves slow.  make test-slow runs every other case.  (On two cores this took make test
    from 61-68 s to 57-61 s: a layer's first case in a function is most of its cost.)
    """
    layers: dict[str, set[str]] = {}
    for item in items:
        key = _layer(item)
        if key is not None and key != CORE and item.get_closest_marker("slow") is None:
            layers.setdefault(function_of(item), set()).add(key)
    taken: dict[str, set[str]] = {}
    for name, keys in layers.items():
        ordered = [key for key in LAYERS if key in keys]  # catalog order, whatever the collection order
        taken[name] = {ordered[zlib.crc32(name.encode()) % len(ordered)]}
    for key in LAYERS:
        if key != CORE and not any(key in chosen for chosen in taken.values()):
            having = sorted(name for name, keys in layers.items() if key in keys)
            if having:
                taken[having[0]].add(key)
    for item in items:
        key = _layer(item)
        if key is not None and key != CORE and key not in taken.get(function_of(item), set()):
            item.add_marker(SLOW)


def function_of(item: Any) -> str:
    """A test case's function: its node id without the parameters."""
    return item.nodeid.split("[")[0]


def _layer(item: Any) -> str | None:
    key = getattr(getattr(item, "callspec", None), "params", {}).get("key")
    return key if isinstance(key, str) and key in LAYERS else None
