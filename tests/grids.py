"""The parameter grids the tests share; the sets of layers come from the catalog."""

import importlib
from types import ModuleType
from typing import Any

import pytest

from derivations import CORE, LAYERS, symmetric
from derivations.grouped import Grouped
from derivations.reparametrized import Reparametrized

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


# The two tiers.  `make test` runs every test function, at least at its first cases; a case
# marked slow repeats the same check at a larger size, on a grid against mpmath, or on a
# layer another case already takes down the same path.  CI (.ci/run) and `make test-all`
# run both tiers.
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
