r"""A layer applied entry by entry, with no statistics and no epsilon: :math:`y_i = f(x_i)`.

Dynamic Tanh (`derivations.layers.dyt`) is one: :math:`y = \gamma \odot \tanh(\alpha x) + \beta`.
Nothing couples two entries, so the Jacobian is diagonal,
:math:`J = \operatorname{diag}_k(\partial y_k / \partial x_k)`, proved from the
derived entry (every term carries :math:`\delta_{ik}`); it is symmetric, its
eigenvectors are the coordinate vectors :math:`e_k` with eigenvalue
:math:`J_{kk}`, and its norm is the largest :math:`|J_{kk}|`.  The eigenvalue
varies with k, so it is a function of the entry :math:`x_k`, not of any
statistic: the registrations below give the eigenpair, the norm and its bound
that the generic, statistics-based derivations cannot.

The layer's one scalar parameter (alpha) takes the place epsilon has in a
normalization layer: `Elementwise.scalars` names it, and numeric takes it as
the second argument (`numeric._elementwise`).

>>> from derivations import LAYERS
>>> from derivations.derive.spectral import bound_value
>>> bound_value(LAYERS["dyt"])
gamma_max*Abs(alpha)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import sympy as sp

from derivations.core.formula import Established, Formula
from derivations.core.layer import Direction, Layer, Pattern
from derivations.core.proof import DerivationError, equal, nonnegative
from derivations.derive import eigen, jacobian, response, spectral
from derivations.derive.affine import Affine
from derivations.symbols import gamma, gamma_max, i, k, n, norm_J, x

# Elementwise layers have no statistic that vanishes at a degenerate input; `Layer.spread`
# is this symbol, which no expression holds.
NO_SPREAD = sp.Symbol("no_statistic", nonnegative=True)

# The coordinate vector e_k, one direction per entry: named by its entry at k for printing.
COORDINATE = Direction("coordinate", sp.IndexedBase("e_k", real=True)[k], "each coordinate vector e_k, k = 1 .. n")


class Diagonal(sp.MatrixExpr):
    r"""The n x n diagonal matrix whose entry (k, k) is ``entry`` (an expression at index ``index``)."""

    def __new__(cls, entry: sp.Expr, index: sp.Symbol = k) -> Diagonal:
        return sp.Basic.__new__(cls, sp.sympify(entry), index)

    @property
    def shape(self) -> tuple[sp.Expr, sp.Expr]:
        return (n, n)

    def _entry(self, row: sp.Expr, column: sp.Expr, **_: object) -> sp.Expr:
        entry, index = self.args
        return sp.KroneckerDelta(row, column) * entry.xreplace({index: row})

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        entry, index = self.args
        return rf"\operatorname{{diag}}_{{{printer._print(index)}}}\left({printer._print(entry)}\right)"


class Largest(sp.Function):
    r"""The largest value over the entries of an expression at an index: :math:`\max_k e_k`.

    ``Largest(e)`` ranges over k, as the derivations write it; ``Largest(e, index)`` over
    ``index``.  The index is bound: `apart` renames it to `BOUND` wherever a Largest meets
    other expressions in k (a claim's J_ik, a product's sum over k), so that none captures it.
    """

    nargs = (1, 2)

    @property
    def index(self) -> sp.Symbol:
        return self.args[1] if len(self.args) == 2 else k

    def over(self, entry: int) -> sp.Expr:
        """The expression at ``entry`` of its index."""
        return self.args[0].xreplace({self.index: entry})

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        index = printer._print(self.index)
        return rf"\max_{{{index}}} {printer.parenthesize(self.args[0], sp.printing.precedence.PRECEDENCE['Mul'])}"


# The index of every Largest after `apart`: used by nothing else, so no other index can capture it.
BOUND = sp.Dummy("k", integer=True, nonnegative=True)


def apart(expr: sp.Expr) -> sp.Expr:
    """``expr`` with the index of each Largest in it renamed to `BOUND`."""
    return expr.replace(
        lambda e: isinstance(e, Largest) and e.index != BOUND,
        lambda e: Largest(e.args[0].xreplace({e.index: BOUND}), BOUND),
    )


@dataclass(frozen=True, eq=False)
class Elementwise(Layer):
    """``output`` in x[i] alone and the one scalar parameter ``parameter``, named ``name``."""

    parameter: sp.Symbol = field(kw_only=True)
    name: str = field(kw_only=True)

    @property
    def scalars(self) -> tuple[tuple[str, sp.Symbol], ...]:
        return ((self.name, self.parameter),)

    @property
    def named_symbols(self) -> dict[str, sp.Expr]:
        return {str(self.parameter): self.parameter}


@dataclass(frozen=True, eq=False)
class ElementwiseAffine(Affine, Elementwise):
    """``gain * base + bias`` over an elementwise base: still elementwise, J still diagonal."""

    @property
    def named_symbols(self) -> dict[str, sp.Expr]:
        return {**Affine.named_symbols.fget(self), **Elementwise.named_symbols.fget(self)}  # type: ignore[attr-defined]


def elementwise_affine(base: Elementwise, key: str, title: str, **keywords: object) -> ElementwiseAffine:
    """`derivations.derive.affine.affine` over an elementwise base, keeping its scalar parameter."""
    from derivations.derive.affine import affine

    made = affine(base, key, title, **keywords)  # type: ignore[arg-type]
    values = {f.name: getattr(made, f.name) for f in fields(made) if f.init}
    return ElementwiseAffine(**values, parameter=base.parameter, name=base.name)


def _in_sech(expr: sp.Expr) -> sp.Expr:
    """1 - tanh(u)**2 written sech(u)**2: positive by SymPy's assumptions, and computed
    without the cancellation 1 - tanh(u)**2 suffers where |u| is large."""
    expanded = sp.expand(expr)
    for tanh in expanded.atoms(sp.tanh):
        expanded = expanded.subs(tanh**2, 1 - sp.sech(tanh.args[0]) ** 2)
    return sp.factor_terms(sp.expand(expanded))


@jacobian.entry.register
def _(layer: Elementwise) -> sp.Expr:
    derivative = _in_sech(sp.diff(layer.entry(i), x[k]))
    diagonal(layer, derivative)  # every term carries delta_ik, proved before use
    return derivative


def diagonal(layer: Elementwise, entry: sp.Expr | None = None) -> sp.Expr:
    """J_kk at index k: J_ik is this times delta_ik, proved (entry by entry, symbolic n)."""
    entry = jacobian.entry(layer) if entry is None else entry
    delta = sp.KroneckerDelta(i, k)
    value = sp.expand(entry).xreplace({delta: 1}).xreplace({i: k})
    if sp.expand(entry - delta * value.xreplace({k: i})) != 0:
        raise DerivationError(f"{layer.key}: J_ik is not a diagonal entry times delta_ik: {entry}")
    return sp.factor_terms(value)


@jacobian.is_symmetric.register
def _(layer: Elementwise) -> bool:
    diagonal(layer)  # J = diag(J_kk): symmetric
    return True


@jacobian.matrix_form.register
def _(layer: Elementwise) -> sp.MatrixExpr:
    return Diagonal(diagonal(layer))


@eigen.eigenpairs.register
def _(layer: Elementwise) -> tuple[eigen.Eigen, ...]:
    # J e_k = J_kk e_k: the coordinate vectors, each with its own eigenvalue.
    return (eigen.Eigen(COORDINATE, diagonal(layer), sp.Integer(1)),)


@spectral.cases.register
def _(layer: Elementwise) -> tuple[tuple[int, sp.Expr], ...]:
    # The largest |J_kk|, factors free of k taken out of the max.
    magnitude = _magnitude(diagonal(layer))
    outside, inside = magnitude.as_independent(k, as_Add=False)
    return ((2, outside * Largest(inside) if inside != 1 else outside),)


@spectral.norm_formula.register
def _(layer: Elementwise, _: object, name: str) -> Formula:
    norm = spectral.spectral_norm(layer)
    proof = layer.prove_stated(name, norm)
    return Formula(
        name,
        "Spectral norm of the diagonal J: the largest |J_kk| over the entries.",
        sp.Eq(norm_J, norm),
        ("n >= 2",),
        Established.ALL_N,
        "J = diag_k(J_kk), so its eigenvalues are the J_kk",
        proof,
        layer.key,
        sp.Eq(norm_J, layer.stated[name]) if proof else None,
    )


@spectral.bound_value.register
def _(layer: Elementwise) -> sp.Expr:
    return supremum(layer)[0]


def _magnitude(value: sp.Expr) -> sp.Expr:
    """|value|, factor by factor: |alpha gamma_k| as |alpha| |gamma_k|."""
    return sp.Mul(*(sp.Abs(factor) for factor in sp.Mul.make_args(value)))


def supremum(layer: Elementwise) -> tuple[sp.Expr, str]:
    """max over x of max_k |J_kk|, with the proof: |J_kk| <= its value at x = 0, for every x_k."""
    magnitude = _magnitude(diagonal(layer))
    top = magnitude.xreplace({x[k]: 0})
    if top.has(k) and layer.parameters:
        top = top.xreplace({sp.Abs(gamma[k]): gamma_max})
    if top.has(k):
        raise DerivationError(f"{layer.key}: the largest |J_kk| at x = 0 depends on k: {top}")
    # |J_kk| at x_k = 0 minus |J_kk|, with sech(u)**2 = 1 - tanh(u)**2: a sum of squares times
    # nonnegative factors (|gamma_k| <= gamma_max where a gain enters).
    gap = top - magnitude.xreplace({sp.Abs(gamma[k]): gamma_max})
    gap = sp.expand(gap.replace(lambda e: isinstance(e, sp.sech), lambda e: sp.sqrt(1 - sp.tanh(e.args[0]) ** 2)))
    how = nonnegative(gap)
    if how is None:
        raise DerivationError(f"{layer.key}: cannot prove |J_kk| <= {top}")
    return top, f"|J_kk| <= {top} for every x_k: {how}; equality at x = 0"


@spectral.bound_formula.register
def _(layer: Elementwise, _: object, name: str) -> Formula:
    _, how = supremum(layer)
    shown, proof = layer.proved(name, spectral.bound_value(layer))
    assumptions = ("n >= 2", "gamma real") if layer.parameters else ("n >= 2",)
    return Formula(
        name,
        "Bound on the spectral norm of the diagonal J over all inputs, attained at x = 0.",
        sp.Le(norm_J, spectral.bound_value(layer)),
        (*assumptions, f"{layer.parameter} real"),
        Established.ALL_N,
        how,
        proof,
        layer.key,
        sp.Le(norm_J, shown),
    )


@spectral.bound_formula.register
def _(layer: ElementwiseAffine, item: object, name: str) -> Formula:
    # Not the affine wrapper's submultiplicative bound: J is diagonal, its norm is read off.
    return spectral.bound_formula.dispatch(Elementwise)(layer, item, name)


@spectral.bound_value.register
def _(layer: ElementwiseAffine) -> sp.Expr:
    base = spectral.bound_value(layer.base)
    value = supremum(layer)[0]
    # The affine wrapper's bound, gamma_max times the base's, is attained here: proved equal.
    equal(value, gamma_max * base, f"{layer.key}.spectral_bound = gamma_max {layer.base.key}.spectral_bound")
    return value


def _limit(expr: sp.Expr, side: int) -> sp.Expr:
    """sp.limit as t -> side * oo, term by term and with factors free of t taken out (a sum of finite
    limits is the limit of the sum); the whole expression where a term's limit is not finite."""
    t = response.t
    terms = sp.Add.make_args(expr)
    found = []
    for term in terms:
        constant, varying = term.as_independent(t, as_Add=False)
        value = constant * (varying if varying == 1 else sp.limit(varying, t, side * sp.oo))
        if not value.is_finite:
            return sp.limit(expr, t, side * sp.oo)
        found.append(value)
    return sp.Add(*found)


def _at_infinity_by_sign(expr: sp.Expr, side: int) -> sp.Expr | None:
    """Limit as t -> side * oo where SymPy needs the sign of a real parameter: taken for
    the parameter positive, negative and zero, and written with sign() where that is exact."""
    t = response.t
    unknown = sorted(
        (s for s in expr.free_symbols if isinstance(s, sp.Symbol) and s != t and s.is_positive is None),
        key=sp.default_sort_key,
    )
    for symbol in unknown:
        positive = sp.Dummy(positive=True)
        try:
            above = _limit(expr.xreplace({symbol: positive}), side).xreplace({positive: symbol})
            below = _limit(expr.xreplace({symbol: -positive}), side).xreplace({positive: -symbol})
            at_zero = _limit(expr.xreplace({symbol: 0}), side)
        except NotImplementedError:
            continue
        centre, half = sp.expand((above + below) / 2), sp.expand((above - below) / 2)
        if not (above.has(sp.Limit) or below.has(sp.Limit)) and sp.expand(centre.xreplace({symbol: 0}) - at_zero) == 0:
            return centre + sp.sign(symbol) * half
    return None


@response.slope.register
def _(layer: Elementwise, pattern: Pattern | None = None) -> sp.Expr:
    # d/dt of the response with 1 - tanh**2 as sech**2, as in J: no cancellation at large |t|.
    return _in_sech(sp.diff(response.response(layer, pattern), response.t))


@response.asymptote.register
def _(layer: Elementwise, pattern: Pattern | None = None) -> tuple[sp.Expr, sp.Expr]:
    value = response.response(layer, pattern)
    found = [_at_infinity_by_sign(value, side) for side in (1, -1)]
    if any(f is None for f in found):
        raise DerivationError(f"{layer.key}: no limit of {value} as t -> +-oo")
    return found[0], found[1]
