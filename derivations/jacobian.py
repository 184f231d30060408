r"""The Jacobian for a symbolic number of entries n, and for explicit n.

The entry :math:`J_{ik} = \partial y_i / \partial x_k` is obtained by
differentiating the definition, with every statistic written as a sum over
the n entries, with respect to the indexed entry ``x[k]``; SymPy produces the
Kronecker deltas.  The sums are then reduced and rewritten in the layer's
statistics (see `derivations._sums`).
"""

from __future__ import annotations

from functools import cache

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

from derivations._formula import Established, Formula
from derivations._layer import Layer
from derivations._proof import DerivationError, equal
from derivations._sums import reduce_sums
from derivations._symbols import J, delta, i, k, n, ones, x


@cache
def entry(layer: Layer) -> sp.Expr:
    """J_ik in x[i], x[k], KroneckerDelta(i, k) and the layer's statistics."""
    derivative = sp.diff(layer.entry(i), x[k])
    return layer.express(reduce_sums(derivative))


def is_symmetric(layer: Layer) -> bool:
    swapped = entry(layer).subs({i: k, k: i}, simultaneous=True)
    return sp.cancel(sp.together(entry(layer) - swapped)) == 0


def _vector(factor: sp.Expr, index: sp.Symbol) -> sp.MatrixExpr:
    """The n-vector whose entry at ``index`` is ``factor``."""
    if factor == 1:
        return ones
    if isinstance(factor, sp.Indexed) and factor.indices == (index,):
        return sp.MatrixSymbol(str(factor.base), n, 1)
    raise DerivationError(f"no vector has entry {factor} at {index}")


@cache
def matrix_form(layer: Layer) -> sp.MatrixExpr:
    r"""J as a combination of I and outer products u v^T, read off the entry.

    In display notation the entry is a polynomial in delta_ik and in entries
    at i and at k; a term a * delta_ik is a*I and a term a * u_i v_k is
    a * u v^T.
    """
    shown = layer.to_display(entry(layer)).subs(sp.KroneckerDelta(i, k), delta)
    scalars: dict[tuple[sp.Expr, sp.Expr], sp.Expr] = {}
    for part in sp.Add.make_args(sp.expand(shown)):
        rest, at_i = part.as_independent(i, as_Add=False)
        scalar, at_k = rest.as_independent(k, as_Add=False)
        if delta in scalar.free_symbols:
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


def entry_of(matrix: sp.MatrixExpr) -> sp.Expr:
    """Entry (i, k) of a matrix expression in I, 1 and named n-vectors."""
    element = matrix[i, k]
    element = element.replace(
        lambda e: isinstance(e, MatrixElement),
        lambda e: sp.Integer(1) if e.parent == ones else sp.IndexedBase(e.parent.name, real=True)[e.i],
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


def explicit_agrees(layer: Layer, size: int) -> str:
    """Prove the symbolic-n entry, at n = ``size``, equal to `explicit` entry by entry."""
    values = layer.explicit_statistics(size)
    # Name every square root of the same radicand (both sides write it out
    # differently), so both sides become rational functions and cancel() decides.
    radicands = {
        sp.expand(p.base) for p in entry(layer).subs(values).atoms(sp.Pow) if p.exp.is_Rational and p.exp.q == 2
    }
    roots = {radicand: sp.Dummy(positive=True) for radicand in radicands}

    def rational(expr: sp.Expr) -> sp.Expr:
        return expr.replace(
            lambda e: e.is_Pow and e.exp.is_Rational and e.exp.q == 2 and sp.expand(e.base) in roots,
            lambda e: roots[sp.expand(e.base)] ** (2 * e.exp),
        )

    direct = explicit(layer, size)
    general = entry(layer).subs(n, size).subs(values)
    for row in range(size):
        for column in range(size):
            at = rational(general.subs({i: row, k: column}))
            equal(at, rational(direct[row, column]), f"{layer.key}.jacobian[{row}, {column}] at n = {size}")
    return f"{size}x{size} entries: symbolic-n entry equals Matrix.jacobian"


def formulas(layer: Layer) -> list[Formula]:
    derived = matrix_form(layer)
    proof = ""
    if "jacobian" in layer.stated:
        # Compare entry by entry: the stated matrix form indexed at (i, k),
        # with its named matrices written out, against the derived entry.
        stated_entry = entry_of(layer.stated["jacobian"])
        proof = equal(layer.to_display(entry(layer)), stated_entry, f"{layer.key}.jacobian")
    return [
        Formula(
            "jacobian",
            f"Jacobian of {layer.key} for a symbolic number of features n.",
            sp.Eq(J, derived),
            ("epsilon > 0", "n >= 2"),
            Established.ALL_N,
            "symbolic n: diff of the indexed definition, sums reduced",
            proof,
            layer.key,
        )
    ]
