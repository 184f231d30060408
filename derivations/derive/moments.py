"""Moments of the normalized output u = layer(x), for symbolic n.

>>> from derivations import LAYERS
>>> second_moment(LAYERS["rmsnorm"])
r/(epsilon + r)
"""

from __future__ import annotations

from functools import singledispatch

import sympy as sp

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Layer
from derivations.derive.sums import over_entries, reduce_sums
from derivations.symbols import i, n


@singledispatch
@derived
def second_moment(layer: Layer) -> sp.Expr:
    """mean(u^2) over the entries, in the layer's statistics."""
    total = reduce_sums(over_entries(layer.entry(i) ** 2, i))
    return sp.factor(sp.cancel(layer.express(total) / n))


def second_moment_formula(layer: Layer, _: object, name: str) -> Formula:
    u2 = sp.Symbol(r"\overline{u^2}")
    shown, proof = layer.proved(name, second_moment(layer))
    return Formula(
        name,
        "Mean of the squared output entries.",
        sp.Eq(u2, second_moment(layer)),
        ("epsilon > 0", "n >= 2"),
        Established.ALL_N,
        "symbolic n: sum of squared entries reduced",
        proof,
        layer.key,
        sp.Eq(u2, shown),
    )
