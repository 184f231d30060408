"""The response along each of the layer's input patterns, its slope, and its limits.

>>> from derivations import LAYERS
>>> layer = LAYERS["layernorm_std_eps"]
>>> response(layer)
t/(epsilon + Abs(t))
>>> slope_at_zero(layer)  # from the left and from the right
(1/epsilon, 1/epsilon)
>>> asymptote(LAYERS["rmsnorm"])
(sqrt(6)/2, -sqrt(6)/2)
"""

from __future__ import annotations

from functools import singledispatch

import sympy as sp

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Layer, Pattern
from derivations.core.proof import DerivationError
from derivations.derive.sums import reduce_sums
from derivations.symbols import i, t, x


@singledispatch
@derived
def response(layer: Layer, pattern: Pattern | None = None) -> sp.Expr:
    """Coordinate ``pattern.coordinate`` of the layer applied to the pattern in t."""
    return sp.factor_terms(layer.on_pattern(pattern or layer.patterns[0]))


@singledispatch
@derived
def slope(layer: Layer, pattern: Pattern | None = None) -> sp.Expr:
    """d response / dt over a common denominator.

    d|t|/dt = sign(t) is written |t|/t so that t * sign(t) cancels to |t|;
    the result is continuous at t = 0, where sign(0) = 0 agrees with it.
    """
    derivative = sp.diff(response(layer, pattern), t).subs(sp.sign(t), sp.Abs(t) / t)
    return sp.factor(sp.together(derivative))


def _one_sided(expr: sp.Expr, side: int) -> sp.Expr:
    """Limit as t -> 0 from the side of ``side`` (+1 or -1).

    On that side |t| = side * t and sign(t) = side; what is left is built
    from t by arithmetic and roots of positive expressions, continuous at 0,
    so substituting t = 0 is the limit.  Anything else is SymPy's limit in
    h -> 0+ with t = side * h, h > 0, so that every case decided by the side of 0
    is decided before the limit is taken (SymPy takes a Piecewise at its switching
    point from the case that holds there).  A case h > 0 does not decide is refused
    rather than guessed.
    """
    branch = expr.subs({sp.Abs(t): side * t, sp.sign(t): side})
    if not branch.has(sp.Abs, sp.sign, sp.Piecewise, sp.Heaviside):
        value = sp.factor(sp.together(branch.subs(t, 0)))
        if not value.has(sp.nan, sp.zoo, sp.oo):
            return value
    h = sp.Dummy("h", positive=True)
    near = expr.subs(t, side * h)
    cases = [c for p in near.atoms(sp.Piecewise) for _, c in p.args] + [e.args[0] for e in near.atoms(sp.Heaviside)]
    if any(case.has(h) for case in cases):
        raise DerivationError(f"the slope at zero: a case of {expr} does not settle on one side of t = 0")
    return sp.limit(near, h, 0)  # from above, SymPy's default


@singledispatch
@derived
def slope_at_zero(layer: Layer, pattern: Pattern | None = None) -> tuple[sp.Expr, sp.Expr]:
    """One-sided limits of the slope as t -> 0- and t -> 0+.

    Where a statistic such as |t| has a kink the slope formula is not
    continuous there in general; the slope at zero exists when both agree.
    """
    derivative = slope(layer, pattern)
    return _one_sided(derivative, -1), _one_sided(derivative, 1)


def _continuous_value(expr: sp.Expr, at: sp.Symbol) -> sp.Expr | None:
    """``expr`` at ``at`` = 0, if it is built by +, * and rational powers and
    every node evaluates finitely there, which makes it continuous at 0."""
    if expr.atoms(sp.Function) or expr.has(sp.Piecewise):
        return None
    value = sp.factor(expr.subs(at, 0))
    return None if value.has(sp.nan, sp.zoo, sp.oo, sp.S.ComplexInfinity) else value


def _at_infinity(expr: sp.Expr, side: int) -> sp.Expr:
    """Limit as t -> side * oo: write t = side / h with h -> 0+ and substitute.

    Radicands are put over one denominator first, so that sqrt(a + b/h**2)
    becomes sqrt(a h**2 + b) / h and the powers of h cancel; where that does
    not give a continuous expression, SymPy's general limit decides.
    """
    h = sp.Dummy("h", positive=True)
    branch = expr.subs({sp.Abs(t): side * t, sp.sign(t): side}).subs(t, side / h)
    branch = branch.replace(
        lambda e: e.is_Pow and e.exp.is_Rational and not e.exp.is_Integer,
        lambda e: sp.Pow(sp.together(e.base), e.exp),
    )
    value = _continuous_value(sp.cancel(sp.together(branch)), h)
    return value if value is not None else sp.limit(expr, t, side * sp.oo)


@singledispatch
@derived
def asymptote(layer: Layer, pattern: Pattern | None = None) -> tuple[sp.Expr, sp.Expr]:
    """Limits of the response as t -> +oo and t -> -oo."""
    value = response(layer, pattern)
    return _at_infinity(value, 1), _at_infinity(value, -1)


@singledispatch
def definition_formula(layer: Layer, _: object, name: str) -> Formula:
    """The layer's output as defined, with what each statistic is: the first thing a reader needs."""
    statistics = (
        "; ".join(
            f"{stat.symbol} = "
            + (f"mean({stat.summand})" if stat.mean else str(stat.summand))
            + (f" (introduced, not in the definition; written in it: {stat.introduced})" if stat.introduced else "")
            for stat in layer.statistics
        )
        or "none"
    )
    return Formula(
        name,
        f"{layer.title}: output entry i as defined.",
        sp.Eq(sp.Symbol("y_i"), layer.output),
        ("epsilon > 0",),
        Established.ALL_N,
        f"the definition; statistics, means over the entries j: {statistics}",
        "",
        layer.key,
    )


@derived
def at_constant(layer: Layer) -> sp.Expr:
    """Output entry i at the constant input x = t 1, for symbolic n: the statistics' sums
    of a constant are evaluated, so a centering layer's vanishes and an RMS layer's does not."""
    entry = layer.entry(i).replace(lambda e: isinstance(e, sp.Indexed) and e.base == x, lambda e: t)
    evaluated = entry.doit()
    if evaluated.has(sp.Sum):
        # Sums over a subset's indicator (a partial mean): reduced, and fixed by the statistics.
        evaluated = layer.express(reduce_sums(entry))
    if isinstance(evaluated, sp.Piecewise):
        # A clamped layer's regimes: each value simplified, the conditions kept as derived
        # (simplify on the whole also rewrites the conditions, at 20 times the cost).
        return sp.Piecewise(*((sp.factor_terms(sp.simplify(value)), where) for value, where in evaluated.args))
    return sp.factor_terms(sp.simplify(evaluated))


def constant_formula(layer: Layer, _: object, name: str) -> Formula:
    y = sp.Function("y_i")(t * sp.Symbol(r"\mathbf{1}"))
    value = at_constant(layer)
    shown, proof = layer.proved(name, value)
    return Formula(
        name,
        f"Output entry i of {layer.key} at the constant input x = t 1, for every n: what it does "
        "where the spread vanishes.",
        sp.Eq(y, value),
        ("epsilon > 0", "n >= 2", "t real"),
        Established.ALL_N,
        "symbolic n: every x_j = t in the sums of the statistics, the sums evaluated",
        proof,
        layer.key,
        sp.Eq(y, shown),
    )


def _common(pattern: Pattern) -> tuple[sp.Function, tuple[str, ...], str]:
    u = sp.Function(f"u_{pattern.coordinate + 1}")(t)
    return u, ("epsilon > 0", f"input {pattern}"), f"n = {len(pattern.values)}, input {pattern}"


def response_formula(layer: Layer, pattern: Pattern, name: str) -> Formula:
    u, common, size = _common(pattern)
    shown, proof = layer.proved(name, response(layer, pattern))
    return Formula(
        name,
        f"Coordinate {pattern.coordinate + 1} of {layer.key} on the input {pattern}.",
        sp.Eq(u, response(layer, pattern)),
        common,
        Established.EXPLICIT_N,
        size,
        proof,
        layer.key,
        sp.Eq(u, shown),
    )


def slope_formula(layer: Layer, pattern: Pattern, name: str) -> Formula:
    u, common, size = _common(pattern)
    shown, proof = layer.proved(name, slope(layer, pattern))
    return Formula(
        name,
        "Derivative of the response with respect to the input amplitude t.",
        sp.Eq(sp.Derivative(u, t), slope(layer, pattern)),
        common,
        Established.EXPLICIT_N,
        size,
        proof,
        layer.key,
        sp.Eq(sp.Derivative(u, t), shown),
    )


def slope_at_zero_formula(layer: Layer, pattern: Pattern, name: str) -> Formula:
    u, common, _ = _common(pattern)
    left, right = slope_at_zero(layer, pattern)
    if sp.simplify(left - right) != 0:
        raise DerivationError(f"{layer.key}: slope has a jump at t = 0: {left} and {right}")
    note = layer.notes.get(name.removesuffix(pattern.suffix) if pattern.suffix else name, "")
    at_zero = sp.Subs(sp.Derivative(u, t), t, 0)
    shown, proof = layer.proved(name, right)
    return Formula(
        name,
        f"Slope of the response at t = 0, where the input is degenerate{note}.",
        sp.Eq(at_zero, right),
        common,
        Established.LIMIT,
        "t -> 0- and t -> 0+ agree",
        proof,
        layer.key,
        sp.Eq(at_zero, shown),
    )


def asymptote_formula(layer: Layer, pattern: Pattern, name: str) -> Formula:
    u, common, _ = _common(pattern)
    upper, lower = asymptote(layer, pattern)
    shown, proof = layer.proved(name, upper)
    return Formula(
        name,
        "Limits of the response as t goes to plus and minus infinity.",
        sp.And(sp.Eq(sp.Limit(u, t, sp.oo), upper), sp.Eq(sp.Limit(u, t, -sp.oo), lower)),
        common,
        Established.LIMIT,
        "t -> +oo and t -> -oo",
        proof,
        layer.key,
        sp.And(sp.Eq(sp.Limit(u, t, sp.oo), shown), sp.Eq(sp.Limit(u, t, -sp.oo), lower)),
    )
