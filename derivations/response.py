"""The response along the layer's input pattern, its slope, and its limits."""

from __future__ import annotations

from functools import cache

import sympy as sp

from derivations._formula import Established, Formula
from derivations._layer import Layer
from derivations._symbols import t


def _u(layer: Layer) -> sp.Expr:
    return sp.Function(f"u_{layer.coordinate + 1}")(t)


def _pattern(layer: Layer) -> str:
    return "(" + ", ".join(map(str, layer.pattern)) + ")"


@cache
def response(layer: Layer) -> sp.Expr:
    """Coordinate ``layer.coordinate`` of the layer applied to its pattern in t."""
    return sp.factor_terms(layer.on_pattern())


@cache
def slope(layer: Layer) -> sp.Expr:
    """d response / dt over a common denominator."""
    return sp.factor(sp.together(sp.diff(response(layer), t)))


@cache
def slope_at_zero(layer: Layer) -> sp.Expr:
    # The slope is smooth at t = 0 for every epsilon > 0, so substituting is
    # the same as taking the limit.
    return sp.factor(sp.together(slope(layer).subs(t, 0)))


@cache
def asymptote(layer: Layer) -> tuple[sp.Expr, sp.Expr]:
    """Limits of the response as t -> +oo and t -> -oo."""
    return sp.limit(response(layer), t, sp.oo), sp.limit(response(layer), t, -sp.oo)


def formulas(layer: Layer) -> list[Formula]:
    u = _u(layer)
    size = f"n = {len(layer.pattern)}, input {_pattern(layer)}"
    common = (r"epsilon > 0", f"input {_pattern(layer)}")
    upper, lower = asymptote(layer)
    return [
        Formula(
            "response",
            f"Coordinate {layer.coordinate + 1} of {layer.key} on the input {_pattern(layer)}.",
            sp.Eq(u, response(layer)),
            common,
            Established.EXPLICIT_N,
            size,
            layer.prove_stated("response", response(layer)),
            layer.key,
        ),
        Formula(
            "slope",
            "Derivative of the response with respect to the input amplitude t.",
            sp.Eq(sp.Derivative(u, t), slope(layer)),
            common,
            Established.EXPLICIT_N,
            size,
            layer.prove_stated("slope", slope(layer)),
            layer.key,
        ),
        Formula(
            "slope_at_zero",
            "Slope of the response at t = 0, where the input is constant.",
            sp.Eq(sp.Subs(sp.Derivative(u, t), t, 0), slope_at_zero(layer)),
            common,
            Established.EXPLICIT_N,
            size,
            layer.prove_stated("slope_at_zero", slope_at_zero(layer)),
            layer.key,
        ),
        Formula(
            "asymptote",
            "Limits of the response as t goes to plus and minus infinity.",
            sp.And(sp.Eq(sp.Limit(u, t, sp.oo), upper), sp.Eq(sp.Limit(u, t, -sp.oo), lower)),
            common,
            Established.LIMIT,
            "t -> +oo and t -> -oo",
            layer.prove_stated("asymptote", upper),
            layer.key,
        ),
    ]
