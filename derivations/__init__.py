"""Symbolic derivations of what epsilon does inside normalization layers.

Each result is a `Formula`, derived by SymPy from a `Layer` definition and
proved equal to what the layer states.  `QUANTITIES` is the registry of what
is derived; `LAYERS` the catalog of layers.
"""

from derivations._formula import Established, Formula
from derivations._layer import Direction, Layer, Pattern, Statistic
from derivations._proof import DerivationError
from derivations.affine import Affine, affine
from derivations.catalog import CORE, LAYERS, formula, formulas, symmetric
from derivations.quantities import QUANTITIES, NotApplicable, Quantity

__all__ = [
    "CORE",
    "LAYERS",
    "QUANTITIES",
    "Affine",
    "DerivationError",
    "Direction",
    "Established",
    "Formula",
    "Layer",
    "NotApplicable",
    "Pattern",
    "Quantity",
    "Statistic",
    "affine",
    "formula",
    "formulas",
    "symmetric",
]
