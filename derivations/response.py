"""The response along each of the layer's input patterns, its slope, and its limits."""

from __future__ import annotations

from functools import cache

import sympy as sp

from derivations._formula import Established, Formula
from derivations._layer import Layer, Pattern
from derivations._symbols import t


@cache
def response(layer: Layer, pattern: Pattern | None = None) -> sp.Expr:
    """Coordinate ``pattern.coordinate`` of the layer applied to the pattern in t."""
    return sp.factor_terms(layer.on_pattern(pattern or layer.patterns[0]))


@cache
def slope(layer: Layer, pattern: Pattern | None = None) -> sp.Expr:
    """d response / dt over a common denominator."""
    return sp.factor(sp.together(sp.diff(response(layer, pattern), t)))


@cache
def slope_at_zero(layer: Layer, pattern: Pattern | None = None) -> tuple[sp.Expr, sp.Expr]:
    """One-sided limits of the slope as t -> 0- and t -> 0+.

    Where a statistic such as |t| has a kink the slope formula is not
    continuous there in general; the slope at zero exists when both agree.
    """
    derivative = slope(layer, pattern)
    return sp.limit(derivative, t, 0, "-"), sp.limit(derivative, t, 0, "+")


@cache
def asymptote(layer: Layer, pattern: Pattern | None = None) -> tuple[sp.Expr, sp.Expr]:
    """Limits of the response as t -> +oo and t -> -oo."""
    value = response(layer, pattern)
    return sp.limit(value, t, sp.oo), sp.limit(value, t, -sp.oo)


def _formulas(layer: Layer, pattern: Pattern) -> list[Formula]:
    u = sp.Function(f"u_{pattern.coordinate + 1}")(t)
    size = f"n = {len(pattern.values)}, input {pattern}"
    common = ("epsilon > 0", f"input {pattern}")
    left, right = slope_at_zero(layer, pattern)
    if sp.simplify(left - right) != 0:
        raise ValueError(f"{layer.key}: slope has a jump at t = 0: {left} and {right}")
    upper, lower = asymptote(layer, pattern)
    note = layer.notes.get("slope_at_zero", "")
    names = [f"{stem}{pattern.suffix}" for stem in ("response", "slope", "slope_at_zero", "asymptote")]
    return [
        Formula(
            names[0],
            f"Coordinate {pattern.coordinate + 1} of {layer.key} on the input {pattern}.",
            sp.Eq(u, response(layer, pattern)),
            common,
            Established.EXPLICIT_N,
            size,
            layer.prove_stated(names[0], response(layer, pattern)),
            layer.key,
        ),
        Formula(
            names[1],
            "Derivative of the response with respect to the input amplitude t.",
            sp.Eq(sp.Derivative(u, t), slope(layer, pattern)),
            common,
            Established.EXPLICIT_N,
            size,
            layer.prove_stated(names[1], slope(layer, pattern)),
            layer.key,
        ),
        Formula(
            names[2],
            f"Slope of the response at t = 0, where the input is degenerate{note}.",
            sp.Eq(sp.Subs(sp.Derivative(u, t), t, 0), right),
            common,
            Established.LIMIT,
            "t -> 0- and t -> 0+ agree",
            layer.prove_stated(names[2], right),
            layer.key,
        ),
        Formula(
            names[3],
            "Limits of the response as t goes to plus and minus infinity.",
            sp.And(sp.Eq(sp.Limit(u, t, sp.oo), upper), sp.Eq(sp.Limit(u, t, -sp.oo), lower)),
            common,
            Established.LIMIT,
            "t -> +oo and t -> -oo",
            layer.prove_stated(names[3], upper),
            layer.key,
        ),
    ]


def formulas(layer: Layer) -> list[Formula]:
    return [f for pattern in layer.patterns for f in _formulas(layer, pattern)]
