r"""The backward pass for a symbolic number of entries n: J^T g, J v, the Hessian product.

With g the upstream gradient dL/dy, the input gradient is
:math:`(J^\top g)_k = \sum_i g_i J_{ik}`.  The derived entry J_ik (in the
statistics and the Kronecker delta) is multiplied by g_i and summed over i
like any other sum (`derivations.derive.sums`): the delta sifts out g_k, and what is
left are means such as :math:`\overline{g}` and :math:`\overline{g\,x}`, which
no statistic of x fixes and which stay named.  The forward-mode product
:math:`(J v)_k` is the same sum over the other index.

The Hessian product of :math:`\langle g, y(x)\rangle` applied to v is the
gradient of :math:`\langle g, J(x) v\rangle`: that scalar is reduced to
statistics and means, and differentiated by x_k through them, each
statistic's gradient being its definition as sums, differentiated and
reduced like J itself.

>>> from derivations import LAYERS
>>> vjp(LAYERS["rmsnorm"])
g[k]/sqrt(epsilon + r) - Mean(g[p]*x[p])*x[k]/(epsilon + r)**(3/2)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import singledispatch

import sympy as sp

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Direction, Layer
from derivations.core.proof import DerivationError, equal
from derivations.derive import jacobian
from derivations.derive.sums import Mean, PowerSum, as_means, over_entries, p, reduce_sums
from derivations.symbols import g, i, k, n, u, v, x

# What each product's left-hand side is called in the formulas.
DX = sp.Symbol(r"(J^{\top} g)_k")
JV = sp.Symbol(r"(J v)_k")
HV = sp.Symbol(r"(\mathcal{H} v)_k")  # H = sum_i g_i grad^2 y_i


def _express(layer: Layer, reduced: sp.Expr, grouped: bool = True) -> sp.Expr:
    """A reduced sum in the layer's statistics and the means of g and v, grouped by those means."""
    expr = layer.express(as_means(reduced))
    return _grouped(expr) if grouped else expr


def _grouped(expr: sp.Expr) -> sp.Expr:
    """Collected by the means (products of them included), each coefficient factored."""
    if isinstance(expr, sp.Piecewise):  # a layer with regimes: each regime's product grouped
        return sp.Piecewise(*((_grouped(value), condition) for value, condition in expr.args))
    groups: dict[sp.Expr, list[sp.Expr]] = {}
    # Products distributed, powers of sums left whole: expanding a denominator such as
    # (sigma + epsilon)**3 would only hand sp.factor a polynomial to factor again.
    for term in sp.Add.make_args(sp.expand_mul(expr)):
        key = sp.Mul(*(f for f in sp.Mul.make_args(term) if f.has(Mean)))
        groups.setdefault(key, []).append(term / key)
    return sp.Add(*(_factored(sp.Add(*terms)) * key for key, terms in groups.items()))


def _factored(expr: sp.Expr) -> sp.Expr:
    """sp.factor of a rational function, numerator and denominator factored apart first: the same
    result, without sp.factor's `together` over many unlike terms.  The last factor of the quotient,
    a single term, only cancels what the two share up to sign."""
    numerator, denominator = expr.as_numer_denom()
    return sp.factor(sp.factor(numerator) / sp.factor(denominator))


def transpose_times(layer: Layer, entry: sp.Expr) -> sp.Expr:
    """sum_i g_i M_ik for the matrix with entry ``entry`` (in i, k): an entry at k."""
    return _express(layer, reduce_sums(over_entries(g[i] * entry, i)))


def times(layer: Layer, entry: sp.Expr) -> sp.Expr:
    """sum_k M_ik v_k, written at index k like every product here."""
    return _express(layer, reduce_sums(over_entries(entry * v[k], k))).xreplace({i: k})


@singledispatch
@derived
def vjp(layer: Layer) -> sp.Expr:
    r"""The input gradient :math:`(J^\top g)_k`."""
    return transpose_times(layer, jacobian.entry(layer))


@singledispatch
@derived
def jvp(layer: Layer) -> sp.Expr:
    """The forward-mode product (J v)_k."""
    return times(layer, jacobian.entry(layer))


@derived
def vjp_at_degenerate(layer: Layer) -> sp.Expr:
    """J^T g at the degenerate input, from the derived limit of J there."""
    return transpose_times(layer, jacobian.at_degenerate(layer))


@derived
def jvp_at_degenerate(layer: Layer) -> sp.Expr:
    """J v at the degenerate input, from the derived limit of J there."""
    return times(layer, jacobian.at_degenerate(layer))


@singledispatch
@derived
def hvp(layer: Layer) -> sp.Expr:
    r""":math:`\big(\sum_i g_i \nabla^2 y_i(x)\, v\big)_k = \partial_{x_k} \langle g, J(x) v\rangle`."""
    # <g, J v> = sum_i g_i (J v)_i: a scalar in the statistics and means of g, v.
    pairing = _express(layer, reduce_sums(over_entries(g[i] * jvp(layer).xreplace({k: i}), i)), grouped=False)
    return _grouped(derivative(layer, pairing))


@derived
def hvp_along(layer: Layer, first: Direction, second: Direction) -> sp.Expr | None:
    """The Hessian product with g the unit vector along ``first`` and v the unit vector along
    ``second``, reduced in the statistics; None where the statistics do not fix it.

    The symbolic-n form is a sum of terms of size 1/s**3 that, along the centered
    input (or x itself), cancel to eps/s**5 when q >> eps; here SymPy does that
    cancellation exactly, so `numeric` evaluates the product along the explicit
    eigen directions from this form and only the rest from the general one.
    """
    at_p = {k: p}
    value = hvp(layer).xreplace(
        {g[k]: first.entry, v[k]: second.entry, g[p]: first.entry.xreplace(at_p), v[p]: second.entry.xreplace(at_p)}
    )
    # Each mean, now of a polynomial in x alone, as power sums over n.
    value = value.replace(lambda e: isinstance(e, Mean), lambda e: _power_sums(e.args[0]) / n)
    # Divided by |first| |second|, each |d|**2 = sum_k d_k**2 in the statistics: the unit
    # directions are what numeric splits g and v along, and the ratio is well scaled.
    lengths = [reduce_sums(over_entries(d.entry**2, k)) for d in (first, second)]
    try:
        value = layer.express(value, *first.constraints, *second.constraints)
        squared = [layer.express(length) for length in lengths]
    except DerivationError:
        return None
    return _cancel_roots(sp.together(value / sp.sqrt(squared[0] * squared[1])))


def _cancel_roots(value: sp.Expr) -> sp.Expr:
    """``value`` factored and cancelled, with each symbol's fractional powers as powers of one
    root of it: s**(a/q) = (s**(1/q))**a holds for the principal root of any s, so in the root w
    the value is a rational function, whose common factors (sqrt(r) + epsilon)**3 cancel.  Left
    as they are, the terms of such a factor leave the float range at every scale."""
    roots = {}
    for symbol in sorted(value.free_symbols, key=sp.default_sort_key):
        denominators = [power.exp.q for power in value.atoms(sp.Pow) if power.base == symbol and power.exp.is_Rational]
        order = math.lcm(1, *denominators)
        if order > 1:
            roots[symbol] = (sp.Dummy(f"root_{symbol}"), order)
    within = value.replace(
        lambda e: isinstance(e, sp.Pow) and e.base in roots and e.exp.is_Rational,
        lambda e: roots[e.base][0] ** (e.exp * roots[e.base][1]),
    ).xreplace({symbol: w**order for symbol, (w, order) in roots.items()})
    factored = sp.factor(sp.cancel(within))
    return factored.xreplace({w: symbol ** sp.Rational(1, order) for symbol, (w, order) in roots.items()})


def _power_sums(polynomial: sp.Expr) -> sp.Expr:
    """sum over p of ``polynomial`` (in x[p]), term by term, constants taken out."""
    total = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(polynomial)):
        constant, varying = term.as_independent(p, as_Add=False)
        total += constant * (n if varying == 1 else PowerSum(varying))
    return total


@derived
def statistic_gradients(layer: Layer) -> dict[sp.Symbol, sp.Expr]:
    """d s / d x_k for each statistic s: its definition as sums, differentiated and reduced."""
    return {
        stat.symbol: layer.express(reduce_sums(sp.diff(layer.as_sums(stat.symbol), x[k]))) for stat in layer.statistics
    }


def derivative(layer: Layer, expr: sp.Expr) -> sp.Expr:
    """d expr / d x_k for an expression in the statistics and means, by the chain rule.

    A mean of a monomial m has d mean(m) / d x_k = (d m / d x_p at p = k) / n.
    """
    means = sorted(expr.atoms(Mean), key=sp.default_sort_key)
    names = [sp.Dummy(f"mean{m}") for m in range(len(means))]
    plain = expr.xreplace(dict(zip(means, names, strict=True)))
    terms = [sp.diff(plain, symbol) * gradient for symbol, gradient in statistic_gradients(layer).items()]
    terms += [
        sp.diff(plain, name) * sp.diff(m.args[0], x[p]).xreplace({p: k}) / n
        for m, name in zip(means, names, strict=True)
    ]
    return sp.Add(*terms).xreplace(dict(zip(names, means, strict=True)))


def parameter_gradient(layer: Layer, parameter: sp.IndexedBase) -> sp.Expr:
    r"""The gradient :math:`\partial \langle g, y\rangle / \partial \theta_k` of a per-feature parameter."""
    derivative = sp.diff(layer.entry(i), parameter[k])
    return _express(layer, reduce_sums(over_entries(g[i] * derivative, i)))


def pairing(layer: Layer, left: sp.IndexedBase, product: sp.Expr) -> sp.Expr:
    """<left, product>: sum over k of left_k times a product's entry at k, reduced (not grouped:
    it is only compared, never shown)."""
    return _express(layer, reduce_sums(over_entries(left[k] * product, k)), grouped=False)


def swap(expr: sp.Expr, one: sp.IndexedBase, other: sp.IndexedBase) -> sp.Expr:
    """``expr`` with the vectors ``one`` and ``other`` exchanged, inside means too."""
    return expr.xreplace({one: other, other: one})


def times_entrywise(expr: sp.Expr, vector: sp.IndexedBase, factor: sp.IndexedBase) -> sp.Expr:
    """``expr`` with every entry of ``vector`` multiplied by the same entry of ``factor``:
    the product for the upstream gradient factor * vector (entry by entry)."""
    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base == vector, lambda e: factor[e.indices[0]] * e)


# --- at explicit sizes ------------------------------------------------------------


@singledispatch
def explicit_agrees(layer: Layer, size: int) -> str:
    """Prove J^T g, J v and every parameter gradient, at n = ``size``, equal to the products
    of explicit vectors with `jacobian.explicit` (and the derivatives of <g, y>) entry by entry."""
    direct = jacobian.explicit(layer, size)
    gs = sp.Matrix([g[m] for m in range(size)])
    vs = sp.Matrix([v[m] for m in range(size)])
    dx, jv = direct.T * gs, direct * vs
    pairing = sum(g[m] * layer.explicit_entry(size, m) for m in range(size))
    pairs = [(vjp(layer).xreplace({k: m}), dx[m], f"vjp[{m}]") for m in range(size)]
    pairs += [(jvp(layer).xreplace({k: m}), jv[m], f"jvp[{m}]") for m in range(size)]
    for _, parameter in layer.parameters:
        gradient = parameter_gradient(layer, parameter)
        pairs += [
            (gradient.xreplace({k: m}), sp.diff(pairing, parameter[m]), f"d/d{parameter.label}[{m}]")
            for m in range(size)
        ]
    jacobian.explicit_equal(layer, size, pairs)
    return f"n = {size}: J^T g, J v and the parameter gradients equal the explicit products"


def explicit_hessian_agrees(layer: Layer, size: int) -> str:
    """Prove the Hessian product at n = ``size`` equal to sum_i g_i hessian(y_i) v, entry by entry."""
    entries = [x[m] for m in range(size)]
    pairing = sum(g[m] * layer.explicit_entry(size, m) for m in range(size))
    hessian = sp.hessian(pairing, entries)
    direct = hessian * sp.Matrix([v[m] for m in range(size)])
    jacobian.explicit_equal(layer, size, [(hvp(layer).xreplace({k: m}), direct[m], f"hvp[{m}]") for m in range(size)])
    return f"n = {size}: the Hessian product equals the explicit Hessian of <g, y> times v"


# --- proofs: the wrapper `derivations.derive.affine` registers its own ------------------


def _in_definitions(layer: Layer, stated: sp.Expr) -> sp.Expr:
    """A stated form with the display names (s for sqrt(q + epsilon)) replaced by what they name."""
    for old, new in layer.display:
        if isinstance(new, sp.Symbol):
            stated = stated.xreplace({new: old})
    return stated


def prove_stated(layer: Layer, name: str, derived: sp.Expr) -> str:
    """Prove a product equal to the form the layer states for ``name``, if it states one."""
    if name not in layer.stated:
        return ""
    return equal(derived, _in_definitions(layer, layer.stated[name]), f"{layer.key}.{name}")


@singledispatch
def vjp_proof(layer: Layer, name: str) -> str:
    return prove_stated(layer, name, vjp(layer))


@singledispatch
def jvp_proof(layer: Layer, name: str) -> str:
    stated = prove_stated(layer, name, jvp(layer))
    if not jacobian.is_symmetric(layer):
        return stated
    how = equal(jvp(layer), swap(vjp(layer), g, v), f"{layer.key}.{name} = J^T v")
    how = how.replace("derived - stated", "J v - J^T v")
    return "; ".join(filter(None, [stated, f"J symmetric, so J v equals the derived J^T g at g = v: {how}"]))


@singledispatch
def hvp_proof(layer: Layer, name: str) -> str:
    return "; ".join(filter(None, [prove_stated(layer, name, hvp(layer)), symmetry(layer)]))


@derived
def symmetry(layer: Layer) -> str:
    """Prove <u, H v> = <v, H u> for H = sum_i g_i grad^2 y_i."""
    uhv = pairing(layer, u, hvp(layer))
    how = equal(uhv, swap(uhv, u, v), f"{layer.key}: <u, H v> = <v, H u>")
    return f"H symmetric, <u, H v> = <v, H u>: {how.replace('derived - stated', '<u, H v> - <v, H u>')}"


@singledispatch
def gradient_proof(layer: Layer, parameter: sp.IndexedBase, name: str) -> str:
    return prove_stated(layer, name, parameter_gradient(layer, parameter))


# --- formulas -------------------------------------------------------------------


def _shown(layer: Layer, expr: sp.Expr) -> sp.Expr:
    """In the notation of the statements: the display names at k and inside the means too
    (x_p = c_p + mu), and the statistic under a named root written through it (q = s**2 - epsilon)."""
    inside: dict[sp.Expr, sp.Expr] = {}
    through: dict[sp.Expr, sp.Expr] = {}
    statistics = {stat.symbol for stat in layer.statistics}
    for old, new in layer.display:
        if isinstance(old, sp.Indexed):
            inside[old.base[p]] = new.xreplace({old.indices[0]: p})
        elif isinstance(new, sp.Symbol) and old.is_Pow and old.exp == sp.Rational(1, 2):
            (statistic,) = old.base.free_symbols & statistics
            (value,) = sp.solve(old.base - new**2, statistic)
            through[statistic] = value
    shown = layer.to_display(expr).xreplace({m: m.func(m.args[0].xreplace(inside)) for m in expr.atoms(Mean)})
    return _grouped(shown.xreplace(through))


def _by_sums(by: str) -> str:
    return f"symbolic n: the derived entry of J times {by}, summed with the deltas sifted; means of {by} stay named"


def _formula(layer: Layer, name: str, lhs: sp.Expr, value: sp.Expr, statement: str, proof: str, detail: str) -> Formula:
    return Formula(
        name,
        statement,
        # A stated form proved equal to the derived one is what is printed.
        sp.Eq(lhs, _shown(layer, layer.stated[name] if proof and name in layer.stated else value)),
        ("epsilon > 0", "n >= 2"),
        Established.ALL_N,
        detail,
        proof,
        layer.key,
    )


def vjp_formula(layer: Layer, _: object, name: str) -> Formula:
    return _formula(
        layer,
        name,
        DX,
        vjp(layer),
        f"Input gradient of {layer.key}, J^T g for the upstream gradient g, for symbolic n "
        "(a bar is the mean over the n entries).",
        vjp_proof(layer, name),
        _by_sums("g"),
    )


def jvp_formula(layer: Layer, _: object, name: str) -> Formula:
    return _formula(
        layer,
        name,
        JV,
        jvp(layer),
        f"Forward-mode product J v of {layer.key} for a direction v, for symbolic n.",
        jvp_proof(layer, name),
        _by_sums("v"),
    )


def hvp_formula(layer: Layer, _: object, name: str) -> Formula:
    return _formula(
        layer,
        name,
        HV,
        hvp(layer),
        f"Second order for {layer.key}: H = sum_i g_i grad^2 y_i, the Hessian of <g, y(x)>, applied to v "
        "(what double backward computes).",
        hvp_proof(layer, name),
        "symbolic n: <g, J v> reduced, then d/dx_k by the chain rule through the statistics and means",
    )


def gradient_formula(parameter: sp.IndexedBase) -> Callable[[Layer, object, str], Formula]:
    """The formula maker of the gradient of ``parameter``, for a registry row."""

    def make(layer: Layer, _: object, name: str) -> Formula:
        return _formula(
            layer,
            name,
            sp.Symbol(rf"\partial \langle g, y\rangle / \partial {sp.latex(parameter[k])}"),
            parameter_gradient(layer, parameter),
            f"Gradient of {layer.key}'s {parameter.label} per example; a batch sums it over every leading axis.",
            gradient_proof(layer, parameter, name),
            f"symbolic n: sum_i g_i d y_i / d {parameter.label}_k, deltas sifted",
        )

    return make


# The index every product is written at, and the one inside a mean.
INDEX, MEAN_INDEX = k, p
