"""Numeric confirmation of a counterexample: the claim re-evaluated with the lambdified functions.

A counterexample from `derivations.claims` gives values of n, epsilon, t and
the layer's statistics.  Here each derived quantity the claim names is
computed again by the layer's NumPy functions (the spectral norm also by
``numpy.linalg.norm`` of the lambdified Jacobian) on an input vector with
those statistics, and the claim is evaluated with those numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from derivations.claim_language import Relation
from derivations.claims import Vocabulary
from numeric._layer import NumericLayer

# A fixed input pattern with mean 0 and mean square 1, scaled to the statistics asked for.
_FEATURES = 4


def _pattern(size: int) -> np.ndarray:
    z = np.linspace(-1.0, 1.0, size) + np.linspace(0.0, 0.3, size) ** 2
    z -= z.mean()
    return z / np.sqrt(np.mean(z**2))


def _input(layer: NumericLayer, example: dict[str, Any]) -> np.ndarray:
    """A vector whose statistic named in ``example`` has the value given there."""
    z = _pattern(int(example.get("n", _FEATURES)))
    for name, value in layer.statistics(z).items():
        if str(name) in example and value > 0:
            # Statistics are homogeneous in x; their degree is read off z -> 2z.
            degree = np.log2(layer.statistics(2 * z)[name] / value)
            return z * (example[str(name)] / value) ** (1 / degree)
    return z


def _value(name: str, layer: NumericLayer, example: dict[str, Any], eps: float) -> tuple[float, str]:
    """The quantity ``name`` computed numerically, and how."""
    key = layer.layer.key
    if name in ("response", "slope"):
        return float(getattr(layer, name)(example.get("t", 0.0), eps)), f"numeric.{key}.{name}(t, epsilon)"
    if name == "slope_at_zero":
        return float(layer.slope(0.0, eps)), f"numeric.{key}.slope(0, epsilon)"
    if name == "spectral_bound":
        gain = None if layer.layer.gain is None else np.full(_FEATURES, example.get("gamma_max", 1.0))
        return float(layer.bound(eps, gain) if gain is not None else layer.bound(eps)), f"numeric.{key}.bound(epsilon)"
    x = _input(layer, example)
    shown = np.array2string(x + 0.0, precision=4, separator=", ")  # + 0.0 turns -0. into 0.
    if name == "spectral_norm":
        value = float(layer.spectral_norm(x, eps))
        independent = float(np.linalg.norm(layer.jacobian(x, eps), 2))
        if not np.isclose(value, independent, rtol=1e-9, atol=0):
            raise ValueError(f"spectral_norm {value} disagrees with numpy.linalg.norm {independent}")
        return value, f"numeric.{key}.spectral_norm(x, epsilon) = numpy.linalg.norm(J, 2) with x = {shown}"
    if name.startswith("eigen_"):
        return float(layer.eigen_by_direction(x, eps)[name[len("eigen_") :]]), f"eigenvalue at x = {shown}"
    if name == "second_moment":
        return float(np.mean(layer.forward(x, eps) ** 2)), f"mean(forward(x)**2) with x = {shown}"
    raise KeyError(name)


def confirm(key: str, parsed: Relation, words: Vocabulary, example: dict[str, Any]) -> str:
    """Re-evaluate the claim at ``example`` with numeric values of its quantities."""
    layer = NumericLayer(key)
    eps = float(example.get("epsilon", 0.25))
    numbers: dict[sp.Basic, float] = {}
    notes = []
    for name, stand_in in words.placeholders.items():
        if not parsed.as_sympy().has(stand_in):
            continue
        try:
            numbers[stand_in], how = _value(name, layer, example, eps)
        except KeyError:
            return f"not confirmed numerically: no numeric function for {name}"
        notes.append(f"{name} = {numbers[stand_in]:.8g} by {how}")
    values = {symbol: example[str(symbol)] for symbol in words.symbols.values() if str(symbol) in example}
    values = {symbol: value for symbol, value in values.items() if isinstance(symbol, sp.Symbol)}
    sides = []
    known = {**{k: sp.Float(v, 17) for k, v in numbers.items()}, **{k: sp.Rational(v) for k, v in values.items()}}
    for side in (parsed.lhs, parsed.rhs):
        expr = sp.sympify(side).xreplace(known)
        try:
            sides.append(float(sp.N(expr, 17)))
        except TypeError:
            return "not confirmed numerically: the claim has symbols the counterexample does not fix"
    lhs, rhs = sides
    holds = {
        "==": np.isclose(lhs, rhs, rtol=1e-12, atol=0),
        "<=": lhs <= rhs,
        "<": lhs < rhs,
        ">=": lhs >= rhs,
        ">": lhs > rhs,
    }
    verdict = "confirmed numerically" if not holds[parsed.op] else "NOT confirmed numerically"
    return f"{verdict} ({'; '.join(notes) or 'no derived quantity'}): lhs = {lhs:.8g}, rhs = {rhs:.8g}"
