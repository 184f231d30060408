"""Figures, each drawn from `numeric` only, each after verification passed.

`FIGURES` (the figure modules, in order) is imported when first used, so that
``python -m figures`` finds a set it drew before (`figures.__main__`) without
importing matplotlib, NumPy or SymPy.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# One module per figure, named after its output file.
NAMES = ("layer_normalization_epsilon_response", "conventions", "spectrum")


def __getattr__(name: str) -> tuple[ModuleType, ...]:
    if name != "FIGURES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    modules = tuple(importlib.import_module(f"{__name__}.{module}") for module in NAMES)
    globals()["FIGURES"] = modules
    return modules


__all__ = ["FIGURES", "NAMES"]
