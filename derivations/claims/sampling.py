"""Sampling a claim that was not proved: grids of values, exact evaluation, relative margins."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

import mpmath
import sympy as sp

from derivations.symbols import epsilon, gamma_max, n, t

# Sample grids, nicest values first so that the first violation found reads well.
_GRID: dict[str, tuple[sp.Rational, ...]] = {
    "n": tuple(map(sp.Integer, (2, 3, 4, 5, 8, 64, 768))),
    "epsilon": tuple(map(sp.Rational, ("1/4", "1", "1/100", "4", "1/100000", "100", "1/100000000"))),
    "stat": tuple(map(sp.Rational, ("1", "0", "1/4", "4", "1/1000000", "1/100", "100", "1000000"))),
    "t": tuple(map(sp.Rational, ("1", "0", "-1", "1/2", "-1/10", "3", "-3", "1000", "-1000"))),
    "gain": tuple(map(sp.Rational, ("1", "-2", "1/2", "3", "-1/10"))),
}
_MAX_POINTS = 3000
_DIGITS = 30
# Relative size of a difference taken as a violation at 30 digits.
_TOLERANCE = sp.Rational(1, 10**15)


def _grid_for(symbol: sp.Basic) -> tuple[sp.Expr, ...]:
    if symbol == n:
        return _GRID["n"]
    if symbol == epsilon:
        return _GRID["epsilon"]
    if symbol == t:
        return _GRID["t"]
    if symbol in (gamma_max,):
        return tuple(abs(g) for g in _GRID["gain"] if g != 0)
    if isinstance(symbol, sp.Indexed):
        return _GRID["gain"]
    return _GRID["stat"]


def points(symbols: list[sp.Basic], conditions: list[sp.Basic]) -> Iterator[dict[sp.Basic, sp.Expr]]:
    grids = [_grid_for(symbol) for symbol in symbols]
    for count, values in enumerate(itertools.product(*grids)):
        if count >= _MAX_POINTS:
            return
        point = dict(zip(symbols, values, strict=True))
        if all(bool(condition.xreplace(point)) for condition in conditions):
            yield point


def evaluate(expr: sp.Expr, point: Mapping[sp.Basic, sp.Expr]) -> mpmath.mpf | None:
    try:
        value = sp.N(expr.xreplace(dict(point)), _DIGITS)
    except (ZeroDivisionError, TypeError, ValueError):
        return None
    if not value.is_real or not value.is_finite:
        return None
    return value


def margin(lhs: sp.Expr, op: str, rhs: sp.Expr) -> sp.Expr:
    """How far the relation is from failing, relative to the sides' size; < 0 means it fails."""
    scale = sp.Max(1, abs(lhs), abs(rhs))
    if op == "==":
        return _TOLERANCE - abs(lhs - rhs) / scale
    if op in ("<=", ">="):
        gap = (rhs - lhs) if op == "<=" else (lhs - rhs)
        return gap / scale + _TOLERANCE
    gap = (rhs - lhs) if op == "<" else (lhs - rhs)
    return gap / scale - _TOLERANCE


def name(symbol: sp.Basic) -> str:
    return str(symbol.base) if isinstance(symbol, sp.Indexed) else str(symbol)


def as_number(value: sp.Expr) -> int | float:
    return int(value) if value.is_Integer else float(value)
