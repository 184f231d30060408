"""Numeric confirmation of a counterexample: the claim re-evaluated with the lambdified functions.

A counterexample from `derivations.claims` gives values of n, epsilon, t and
the layer's statistics.  Here each derived quantity the claim names is
computed again by the numeric function its registry row names, on an input
vector with those statistics, and, where the row names an independent
reference (``numpy.linalg.norm`` of the Jacobian, the mean square of the
output), by that too; the claim is then evaluated with those numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp

from derivations import quantities
from derivations.claims import Relation, Vocabulary
from numeric._layer import NumericLayer, facade

# A fixed input pattern with mean 0 and mean square 1, scaled to the statistics asked for.
_FEATURES = 4

# Independent computations a registry row may name as its ``reference``.
REFERENCES: dict[str, tuple[str, Callable[[NumericLayer, np.ndarray, float], float]]] = {
    "norm2_of_jacobian": (
        "numpy.linalg.norm(J, 2)",
        lambda layer, x, eps: float(np.linalg.norm(layer.jacobian(x, eps), 2)),
    ),
    "mean_square_of_output": (
        "mean(forward(x)**2)",
        lambda layer, x, eps: float(np.mean(layer.forward(x, eps) ** 2)),
    ),
}


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
    """The quantity ``name`` computed numerically by its row's strategy, and how."""
    quantity, item = quantities.names(layer.definition)[name]
    numeric = quantity.numeric_name(item)
    function = None if numeric is None else layer.function(numeric)
    if function is None:
        raise KeyError(name)
    call = f"numeric.{layer.key}.{numeric}"
    if quantity.evaluate == "of_t":
        return float(function(example.get("t", 0.0), eps)), f"{call}(t, epsilon)"
    if quantity.evaluate == "of_epsilon":
        return float(function(eps)), f"{call}(epsilon)"
    x = _input(layer, example)
    shown = np.array2string(x + 0.0, precision=4, separator=", ")  # + 0.0 turns -0. into 0.
    value = float(function(x, eps))
    how = f"{call}(x, epsilon) with x = {shown}"
    if quantity.reference is not None:
        what, reference = REFERENCES[quantity.reference]
        independent = reference(layer, x, eps)
        if not np.isclose(value, independent, rtol=1e-9, atol=0):
            raise ValueError(f"{name} {value} disagrees with {what} {independent}")
        how += f" = {what}"
    return value, how


def confirm(key: str, parsed: Relation, words: Vocabulary, example: dict[str, Any]) -> str:
    """Re-evaluate the claim at ``example`` with numeric values of its quantities."""
    layer = facade(key)
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
