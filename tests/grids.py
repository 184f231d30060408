"""The parameter grids the tests share."""

import importlib
from types import ModuleType

EPSILONS = (1e-6, 1e-3, 0.04, 0.25, 1.0, 100.0)
SIZES = (2, 3, 7, 64)

# Every layer whose Jacobian is symmetric, so that its eigenstructure is derived.
SYMMETRIC_LAYERS = ("layernorm", "layernorm_std_eps", "rmsnorm", "rmsnorm_eps_outside")
# The layers whose statistic has a kink at the degenerate input.
KINKED_LAYERS = ("layernorm_std_eps", "rmsnorm_eps_outside")


def module(key: str) -> ModuleType:
    """The ``numeric.<key>`` module."""
    return importlib.import_module(f"numeric.{key}")
