r"""Homogeneity: how every result scales when x and sqrt(epsilon) scale together.

Scaling the input by m > 0 and epsilon by m**2 (by m where epsilon is
added to a standard deviation) scales each statistic by a
power of m (the mean by m, a variance by m**2, a standard deviation by m),
and each result by m**d: the response, the output and the slope at zero
compare like with like, so d = 0 for them and d = -1 for slopes and the
Jacobian.  The degree d is read off the ratio f(m x, m**2 eps) / f(x, eps),
which must simplify to a pure power of m.

This identity is the numerically stable form used by `numeric`: at the
scale m = max(|x|, sqrt(epsilon)) every input is at most 1 in size, so no
square overflows or underflows, and

.. math:: f(x, \varepsilon) = m^{d} f(x/m, \varepsilon/m^2).
"""

from __future__ import annotations

from functools import cache

import sympy as sp

from derivations import eigen, response, spectral
from derivations._formula import Established, Formula
from derivations._layer import Layer
from derivations._proof import DerivationError
from derivations._symbols import epsilon, i, j, k, t, x

m = sp.Symbol("m", positive=True)


def _power_of_m(ratio: sp.Expr, what: str) -> int:
    """The exponent d of a ratio that simplifies to m**d, or an error."""
    ratio = sp.powsimp(sp.cancel(sp.together(ratio)), force=True)
    if ratio == 1:
        return 0
    if ratio == m:
        return 1
    if ratio.is_Pow and ratio.base == m and ratio.exp.is_Integer:
        return int(ratio.exp)
    raise DerivationError(f"{what} is not homogeneous in (x, sqrt(epsilon)): ratio {ratio}")


@cache
def statistic_degrees(layer: Layer) -> dict[sp.Symbol, int]:
    """Each statistic's degree: the mean's summand scaled, or the derived value."""
    degrees: dict[sp.Symbol, int] = {}
    for stat in layer.statistics:
        scaled = {x[j]: m * x[j], **{s: m**d * s for s, d in degrees.items()}}
        degrees[stat.symbol] = _power_of_m(stat.summand.xreplace(scaled) / stat.summand, f"{layer.key}.{stat.symbol}")
    return degrees


@cache
def epsilon_degree(layer: Layer) -> int:
    """How epsilon must scale with x for the output to be homogeneous: as a variance
    (m**2, epsilon inside the root) or as a standard deviation (m, epsilon added to sigma)."""
    for candidate in (2, 1):
        try:
            _power_of_m(layer.output.xreplace(_scaled(layer, candidate)) / layer.output, "output")
        except DerivationError:
            continue
        return candidate
    raise DerivationError(f"{layer.key}: no scaling of epsilon makes the output homogeneous")


def _scaled(layer: Layer, eps_degree: int) -> dict[sp.Basic, sp.Expr]:
    values: dict[sp.Basic, sp.Expr] = {x[i]: m * x[i], x[k]: m * x[k], epsilon: m**eps_degree * epsilon, t: m * t}
    values.update({s: m**d * s for s, d in statistic_degrees(layer).items()})
    return values


@cache
def degrees(layer: Layer) -> dict[str, int]:
    """The degree of each numeric result of the layer under (x, eps) -> (m x, m**2 eps)."""
    scaled = _scaled(layer, epsilon_degree(layer))

    def degree(expr: sp.Expr, what: str) -> int:
        return _power_of_m(expr.xreplace(scaled) / expr, f"{layer.key}.{what}")

    # A derivative with respect to x (or t) lowers the degree by one: from
    # f(m x) = m**d f(x), the chain rule gives m f'(m x) = m**d f'(x).
    out = {"response": degree(response.response(layer), "response"), "output": degree(layer.output, "output")}
    out["slope"] = out["response"] - 1
    out["jacobian"] = out["output"] - 1
    pairs = [p for p in eigen.eigenpairs(layer) if p.value != 0]
    if layer.base is None and pairs:
        eigen_degrees = {degree(p.value, f"eigen_{p.direction.name}") for p in pairs}
        norm_degrees = {degree(value, "spectral_norm") for _, value in spectral.cases(layer)}
        if len(eigen_degrees | norm_degrees) != 1:
            raise DerivationError(f"{layer.key}: eigenvalues scale unlike each other: {eigen_degrees | norm_degrees}")
        out["eigenvalues"] = out["spectral_norm"] = eigen_degrees.pop()
    return out


def formulas(layer: Layer) -> list[Formula]:
    found = degrees(layer)
    f = sp.Function("f")
    e = epsilon_degree(layer)
    statement = ", ".join(f"{name}: d = {d}" for name, d in found.items())
    root = "sqrt(epsilon)" if e == 2 else "epsilon"
    return [
        Formula(
            "homogeneity",
            f"Scaling x by m and epsilon by m**{e} scales each result by m**d "
            f"({statement}); numeric evaluates at m = max(|x|, {root}).",
            sp.Eq(f(m * x[i], m**e * epsilon), m ** sp.Symbol("d") * f(x[i], epsilon)),
            ("m > 0", "epsilon > 0", "n >= 2"),
            Established.ALL_N,
            "f(m x, m**e eps) / f(x, eps) simplified to m**d; derivatives lower d by one (chain rule)",
            "",
            layer.key,
        )
    ]
