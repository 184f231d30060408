r"""Homogeneity: how every result scales when x and sqrt(epsilon) scale together.

Scaling the input by m > 0 and epsilon by m**2 (by m where epsilon is
added to a standard deviation) scales each statistic by a
power of m (the mean by m, a variance by m**2, a standard deviation by m),
and each result by m**p: the response, the output and the slope at zero
compare like with like, so p = 0 for them and p = -1 for slopes and the
Jacobian.  The degree p is read off the ratio f(m x, m**2 eps) / f(x, eps),
which must simplify to a pure power of m.  (It is called p, not d, because
papers write d for the number of features.)

This identity is the numerically stable form used by `numeric`: at the
scale m = max(|x|, sqrt(epsilon)) every input is at most 1 in size, so no
square overflows or underflows, and

.. math:: f(x, \varepsilon) = m^{d} f(x/m, \varepsilon/m^2).
"""

from __future__ import annotations

from functools import singledispatch

import sympy as sp

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Layer
from derivations.core.proof import DerivationError
from derivations.derive.sums import Mean, p
from derivations.symbols import epsilon, i, j, k, t, x

m = sp.Symbol("m", positive=True)


def _structural(expr: sp.Basic, degrees: dict[sp.Basic, sp.Rational]) -> sp.Rational | None:
    """The degree of ``expr`` read off its tree, when every sum's terms share a degree: each atom's
    from ``degrees`` (0 if absent), a product's the sum of its factors', a power's its base's times
    the exponent.  None where the tree does not show one (a sum whose terms may cancel, a function
    of a scaled argument): the caller simplifies the ratio instead."""
    if expr.is_Number:
        return sp.Integer(0)
    if expr.is_Symbol or isinstance(expr, sp.Indexed):
        return degrees.get(expr, sp.Integer(0))
    if isinstance(expr, (sp.Add, sp.Max, sp.Min)):
        found = {_structural(arg, degrees) for arg in expr.args}
        return found.pop() if len(found) == 1 else None
    if isinstance(expr, sp.Mul):
        total = sp.Integer(0)
        for arg in expr.args:
            part = _structural(arg, degrees)
            if part is None:
                return None
            total += part
        return total
    if isinstance(expr, sp.Pow):
        base = _structural(expr.base, degrees)
        if base is None:
            return None
        if base == 0:  # m**0 to any power, the exponent's own symbols (n, say) unscaled
            return base if _structural(expr.exp, degrees) == 0 else None
        return base * expr.exp if expr.exp.is_Rational else None
    if isinstance(expr, (sp.Abs, Mean)):  # |m a| = m |a|; a mean takes m out of its monomial
        return _structural(expr.args[0], degrees)
    if isinstance(expr, (sp.Function, sp.KroneckerDelta)):  # a function of unscaled arguments is
        return sp.Integer(0) if all(_structural(a, degrees) == 0 for a in expr.args) else None
    return None


def _degree(expr: sp.Expr, values: dict[sp.Basic, sp.Expr], what: str) -> int:
    """The degree p with expr.xreplace(values) = m**p expr: from the tree where it shows one, else
    from the simplified ratio (`power_of_m`), which also gives the error for a non-homogeneous one."""
    degrees = {atom: _atom_degree(atom, scaled, what) for atom, scaled in values.items()}
    found = _structural(expr, degrees)
    if found is not None and found.is_Integer:
        return int(found)
    return power_of_m(expr.xreplace(values) / expr, what)


def _atom_degree(atom: sp.Basic, scaled: sp.Expr, what: str) -> sp.Rational:
    """d for an atom scaled as m**d * atom (how `scaled` writes each), read off without simplifying."""
    coefficient, power = scaled.as_coeff_exponent(m)
    if coefficient == atom and power.is_Rational:
        return power
    return sp.Integer(power_of_m(scaled / atom, what))


def power_of_m(ratio: sp.Expr, what: str) -> int:
    """The exponent p of a ratio that simplifies to m**p, or an error."""
    ratio = sp.powsimp(sp.cancel(sp.together(ratio)), force=True)
    if ratio == 1:
        return 0
    if ratio == m:
        return 1
    if ratio.is_Pow and ratio.base == m and ratio.exp.is_Integer:
        return int(ratio.exp)
    raise DerivationError(f"{what} is not homogeneous in (x, sqrt(epsilon)): ratio {ratio}")


@derived
def statistic_degrees(layer: Layer) -> dict[sp.Symbol, int]:
    """Each statistic's degree: the mean's summand scaled, or the derived value."""
    degrees: dict[sp.Symbol, int] = {}
    for stat in layer.statistics:
        scaled = {x[j]: m * x[j], **{s: m**d * s for s, d in degrees.items()}}
        degrees[stat.symbol] = power_of_m(stat.summand.xreplace(scaled) / stat.summand, f"{layer.key}.{stat.symbol}")
    return degrees


def scale_parameter(layer: Layer) -> sp.Symbol:
    """The scalar that sets the layer's length scale: epsilon where the output holds it, else
    the layer's one scalar input that does (Dynamic Tanh's alpha, which sets 1/alpha)."""
    held = [symbol for _, symbol in layer.scalars if layer.output.has(symbol)]
    return held[0] if len(held) == 1 and not layer.output.has(epsilon) else epsilon


@singledispatch
@derived
def epsilon_degree(layer: Layer) -> int:
    """How epsilon must scale with x for the output to be homogeneous: as a variance
    (m**2, epsilon inside the root) or as a standard deviation (m, epsilon added to sigma).
    For a layer without epsilon, how its scale parameter must (alpha of tanh(alpha x): m**-1)."""
    # A variance, a standard deviation, then the higher power means a user may define,
    # then an inverse length (a parameter multiplying x).
    for candidate in (2, 1, *range(3, 9), -1):
        try:
            power_of_m(layer.output.xreplace(scaled(layer, candidate)) / layer.output, "the output")
        except DerivationError:
            continue
        return candidate
    raise DerivationError(f"{layer.key}: no scaling of epsilon makes the output homogeneous")


@derived
def translation_invariant(layer: Layer) -> bool:
    """Whether the output is unchanged when every entry of x is shifted by the same a.

    Each statistic is followed under x -> x + a 1: a mean of x itself moves
    by a, one unchanged by the shift stays; the output must then be unchanged.
    A layer that passes depends on x only through x - mean(x), so numeric
    code may subtract the mean exactly before anything else (centering an
    input with a large offset first keeps its signal).
    """
    a = sp.Dummy("a", real=True)
    shift: dict[sp.Basic, sp.Expr] = {x[j]: x[j] + a, x[i]: x[i] + a}
    for stat in layer.statistics:
        moved = sp.expand(stat.summand.xreplace(shift) - stat.summand)
        if moved == 0:
            continue
        if stat.mean and moved == a:
            shift[stat.symbol] = stat.symbol + a
            continue
        return False
    return sp.cancel(sp.together(layer.output.xreplace(shift) - layer.output)) == 0


def scaled(layer: Layer, eps_degree: int) -> dict[sp.Basic, sp.Expr]:
    # x at p is the entry inside a mean (of g x, say), which takes the factor out.
    values: dict[sp.Basic, sp.Expr] = {
        **{x[index]: m * x[index] for index in (i, k, p)},
        scale_parameter(layer): m**eps_degree * scale_parameter(layer),
        t: m * t,
    }
    values.update({s: m**d * s for s, d in statistic_degrees(layer).items()})
    return values


@derived
def degree_of(layer: Layer, expr: sp.Expr, what: str) -> int:
    """The degree p of ``expr`` under (x, t, eps) -> (m x, m t, m**e eps), e = `epsilon_degree`.

    Zero has every degree; it is given 0.  A piecewise expression must have
    one degree in every branch.
    """
    if expr == 0:
        return 0
    if isinstance(expr, sp.Piecewise):
        # A zero branch (a slope of 0 in one regime) has every degree.
        found = {degree_of(layer, value, what) for value, _ in expr.args if value != 0} or {0}
        if len(found) != 1:
            raise DerivationError(f"{layer.key}.{what}: branches scale unlike each other: {sorted(found)}")
        return found.pop()
    return _degree(expr, scaled(layer, epsilon_degree(layer)), f"{layer.key}.{what}")


def homogeneity_formula(layer: Layer, values: dict[str, sp.Expr], name: str) -> Formula:
    """The statement of how each of ``values`` (every result the registry derives for ``layer``,
    by name) scales with x and the layer's scale parameter."""
    found = {q: degree_of(layer, value, q) for q, value in values.items()}
    f = sp.Function("f")
    e = epsilon_degree(layer)
    statement = ", ".join(f"{q}: p = {d}" for q, d in found.items())
    scale = scale_parameter(layer)
    if scale == epsilon:
        root = {1: "epsilon", 2: "sqrt(epsilon)"}.get(e, f"epsilon**(1/{e})")
        # A partial mean's layer is rescaled by the entries its spread is a mean over.
        over = "".join(f" over {subset.meaning}" for subset in layer.subsets)
        evaluated = f"; numeric evaluates at m = max(|x|{over}, {root})"
        assumptions: tuple[str, ...] = ("m > 0", "epsilon > 0", "n >= 2")
    else:
        evaluated, assumptions = "", ("m > 0", f"{scale} real", "n >= 2")
    return Formula(
        name,
        f"Scaling x by m and {scale} by m**{e} scales each result by m**p ({statement}){evaluated}.",
        sp.Eq(f(m * x[i], m**e * scale), m ** sp.Symbol("p") * f(x[i], scale)),
        assumptions,
        Established.ALL_N,
        f"f(m x, m**e {'eps' if scale == epsilon else scale}) / f(x, {'eps' if scale == epsilon else scale}) "
        "simplified to m**p",
        "",
        layer.key,
    )
