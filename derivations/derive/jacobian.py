r"""The Jacobian for a symbolic number of entries n, and for explicit n.

The entry :math:`J_{ik} = \partial y_i / \partial x_k` is obtained by
differentiating the definition, with every statistic written as a sum over
the n entries, with respect to the indexed entry ``x[k]``; SymPy produces the
Kronecker deltas.  The sums are then reduced and rewritten in the layer's
statistics (see `derivations.derive.sums`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import singledispatch

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Layer
from derivations.core.proof import DerivationError, equal
from derivations.derive.sums import explicit_means, reduce_sums
from derivations.symbols import J, delta, i, k, n, ones, tau, x


@singledispatch
@derived
def entry(layer: Layer) -> sp.Expr:
    """J_ik in x[i], x[k], KroneckerDelta(i, k) and the layer's statistics."""
    derivative = sp.diff(layer.entry(i), x[k])
    return layer.express(reduce_sums(derivative))


@derived
def at_degenerate(layer: Layer) -> sp.Expr:
    """Limit of J_ik as the input tends to the degenerate one, along ``layer.approach``.

    The path scales the spread by tau -> 0+ and leaves the direction free;
    a limit that no longer depends on the direction is the Jacobian there.
    """
    path = sp.cancel(sp.together(entry(layer).xreplace(dict(layer.approach))))
    numerator, denominator = sp.fraction(path)
    # Along the path the entry is a rational function of tau; once cancelled,
    # a denominator that does not vanish at 0 makes the limit a substitution.
    at_zero = denominator.subs(tau, 0)
    limit = sp.cancel(numerator.subs(tau, 0) / at_zero) if at_zero != 0 else sp.limit(path, tau, 0, "+")
    if limit.has(sp.nan, sp.zoo, sp.oo, layer.spread) or limit.atoms(sp.Indexed):
        raise DerivationError(f"{layer.key}: J has no direction-free limit at the degenerate input: {limit}")
    return sp.factor(limit)


@singledispatch
@derived
def is_symmetric(layer: Layer) -> bool:
    """Whether J_ik = J_ki for every i, k: proved by cancelling the difference."""
    swapped = entry(layer).xreplace({i: k, k: i})
    return sp.cancel(sp.together(entry(layer) - swapped)) == 0


def _vector(factor: sp.Expr, index: sp.Symbol) -> sp.MatrixExpr:
    """The n-vector whose entry at ``index`` is ``factor``."""
    if factor == 1:
        return ones
    if isinstance(factor, sp.Indexed) and factor.indices == (index,):
        return sp.MatrixSymbol(str(factor.base), n, 1)
    if factor.is_Pow and factor.exp.is_Integer and isinstance(factor.base, sp.Indexed):
        # x_k**3 is entry k of the entry-wise (Hadamard) power of x.
        return sp.HadamardPower(_vector(factor.base, index), factor.exp)
    if factor.is_Mul and all(isinstance(f, sp.Indexed) for f in factor.args):
        # m_k x_k is entry k of the entry-wise (Hadamard) product m * x.
        return sp.HadamardProduct(*(_vector(f, index) for f in factor.args))
    raise DerivationError(f"no vector has entry {factor} at {index}")


@singledispatch
def matrix_form(layer: Layer) -> sp.MatrixExpr:
    """J as a combination of I and outer products u v^T."""
    return _matrix_form(layer)


@singledispatch
def proof(layer: Layer, name: str) -> str:
    """How J was shown equal to what the layer states as ``name`` (empty where nothing is stated)."""
    if name not in layer.stated:
        return ""
    # Compare entry by entry: the stated matrix form indexed at (i, k),
    # with its named matrices written out, against the derived entry.
    bases = {str(subset.indicator.label): subset.indicator for subset in layer.subsets}
    return equal(layer.to_display(entry(layer)), entry_of(layer.stated[name], bases), f"{layer.key}.{name}")


@derived
def _matrix_form(layer: Layer) -> sp.MatrixExpr:
    return _matrix(layer, entry(layer))


def _matrix(layer: Layer, element: sp.Expr) -> sp.MatrixExpr:
    r"""The matrix whose (i, k) entry is ``element``.

    In display notation the entry is a polynomial in delta_ik and in entries
    at i and at k; a term a * delta_ik is a*I and a term a * u_i v_k is
    a * u v^T.
    """
    shown = layer.to_display(element).subs(sp.KroneckerDelta(i, k), delta)
    scalars: dict[tuple[sp.Expr, sp.Expr], sp.Expr] = {}
    for part in sp.Add.make_args(sp.expand(shown)):
        rest, at_i = part.as_independent(i, as_Add=False)
        scalar, at_k = rest.as_independent(k, as_Add=False)
        if delta in scalar.free_symbols:
            if at_i != 1 or at_k != 1:
                # delta_ik f(x_i) is diag(f(x)), not a multiple of I: no term of this form.
                raise DerivationError(f"{layer.key}: J has a diagonal term {part} that is not a multiple of I")
            key = (delta, delta)
            scalar = scalar / delta
        else:
            key = (at_i, at_k)
        scalars[key] = scalars.get(key, 0) + scalar
    terms = []
    for (at_i, at_k), scalar in scalars.items():
        matrix = sp.Identity(n) if at_i == delta else _vector(at_i, i) * _vector(at_k, k).T
        terms.append(sp.factor(scalar) * matrix)
    return sp.MatAdd(*terms)


def entry_of(matrix: sp.MatrixExpr, bases: Mapping[str, sp.IndexedBase] | None = None) -> sp.Expr:
    """Entry (i, k) of a matrix expression in I, 1 and named n-vectors (each a real
    IndexedBase of its name, unless ``bases`` gives another, such as an indicator)."""
    element = matrix[i, k]
    named = bases or {}

    def base(name: str) -> sp.IndexedBase:
        return named.get(name) or sp.IndexedBase(name, real=True)

    element = element.replace(
        lambda e: isinstance(e, MatrixElement),
        lambda e: sp.Integer(1) if e.parent == ones else base(e.parent.name)[e.i],
    )
    # Identity(n)[i, k] carries its index range; the bare delta is the same here.
    return element.replace(
        lambda e: isinstance(e, sp.KroneckerDelta), lambda e: sp.KroneckerDelta(e.args[0], e.args[1])
    )


def explicit(layer: Layer, size: int) -> sp.Matrix:
    """The Jacobian of the layer with ``size`` explicit entries, by Matrix.jacobian."""
    entries = [x[m] for m in range(size)]
    outputs = sp.Matrix([layer.explicit_entry(size, m) for m in range(size)])
    return outputs.jacobian(entries)


@singledispatch
def explicit_agrees(layer: Layer, size: int) -> str:
    """Prove the symbolic-n entry, at n = ``size``, equal to `explicit` entry by entry."""
    direct = explicit(layer, size)
    general = entry(layer)
    explicit_equal(
        layer,
        size,
        (
            (general.xreplace({i: row, k: column}), direct[row, column], f"jacobian[{row}, {column}]")
            for row in range(size)
            for column in range(size)
        ),
    )
    return f"{size}x{size} entries: symbolic-n entry equals Matrix.jacobian"


def explicit_equal(layer: Layer, size: int, pairs: Iterable[tuple[sp.Expr, sp.Expr, str]]) -> None:
    """Prove each symbolic-n expression (statistics, means), at n = ``size``, equal to its
    explicit counterpart in x[0] .. x[size-1]."""
    values = layer.explicit_statistics(size)
    # Name the square root of each radicand, up to a constant factor (both
    # sides write it out differently: sqrt(2 q) on one, sqrt(x0^2/2 - ...) on
    # the other), so both sides become rational functions and cancel() decides.
    # A radicand here is a sum of squares plus epsilon, hence positive, so
    # rad**(m/2) = content**(m/2) * R**m with R = sqrt(primitive part) > 0.
    roots: dict[sp.Expr, sp.Dummy] = {}

    def is_root(e: sp.Basic) -> bool:
        return bool(e.is_Pow and e.exp.is_Rational and e.exp.q == 2 and not e.base.is_Number)

    def name(power: sp.Pow) -> sp.Expr:
        content, primitive = sp.expand(power.base).as_content_primitive()
        root = roots.setdefault(primitive, sp.Dummy(positive=True))
        return content**power.exp * root ** (2 * power.exp)

    def rational(expr: sp.Expr) -> sp.Expr:
        # An even power of sech (an elementwise layer's derivative) as the polynomial in tanh
        # that differentiating tanh gives on the explicit side: 1 - tanh**2 per sech**2.
        expr = expr.replace(
            lambda e: e.is_Pow and isinstance(e.base, sp.sech) and e.exp.is_even,
            lambda e: (1 - sp.tanh(e.base.args[0]) ** 2) ** (e.exp / 2),
        )
        return expr.replace(is_root, name)

    for general, direct, what in pairs:
        at = explicit_means(general.xreplace({n: size}), size).xreplace(values)
        numerator, _ = sp.fraction(sp.together(rational(at) - rational(direct)))
        # A root R named above may also meet its own square, the radicand,
        # written out: reduce the numerator modulo R**2 - radicand.
        numerator = sp.expand(numerator)
        for primitive, root in roots.items():
            numerator = sp.expand(sp.rem(numerator, root**2 - primitive, root))
        if numerator != 0:
            raise DerivationError(f"{layer.key}.{what} at n = {size}: symbolic-n form differs from the explicit one")


def jacobian_formula(layer: Layer, _: object, name: str) -> Formula:
    how = proof(layer, name)
    stated = layer.stated.get(name) if how else None
    return Formula(
        name,
        f"Jacobian of {layer.key} for a symbolic number of features n"
        + (f", where {layer.spread} > 0." if layer.approach else "."),
        sp.Eq(J, matrix_form(layer)),
        ("epsilon > 0", "n >= 2"),
        Established.ALL_N,
        "symbolic n: diff of the indexed definition, sums reduced",
        how,
        layer.key,
        None if stated is None else sp.Eq(J, stated),
    )


def degenerate_formula(layer: Layer, _: object, name: str) -> Formula:
    shown, how = layer.proved(name, at_degenerate(layer))
    return Formula(
        name,
        f"Jacobian where {layer.spread} = 0: {layer.spread} is not differentiable there, but J has "
        "the same limit along every path, so the layer is differentiable with this Jacobian.",
        sp.Eq(J, _matrix(layer, at_degenerate(layer))),
        ("epsilon > 0", "n >= 2", f"{layer.spread} -> 0+"),
        Established.LIMIT,
        f"tau -> 0+ along {', '.join(f'{a} = {b}' for a, b in layer.approach.items())}",
        how,
        layer.key,
        sp.Eq(J, _matrix(layer, shown)),
    )
