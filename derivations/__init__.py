"""Symbolic derivations of what epsilon does inside normalization layers.

Each result is a `Formula`, derived by SymPy from a `Layer` definition and
proved equal to what the layer states.
"""

from derivations._formula import Established, Formula
from derivations._layer import Direction, Layer, Statistic
from derivations._proof import DerivationError
from derivations.catalog import LAYERS, formula, formulas

__all__ = [
    "LAYERS",
    "DerivationError",
    "Direction",
    "Established",
    "Formula",
    "Layer",
    "Statistic",
    "formula",
    "formulas",
]
