r"""Eigenstructure of the Jacobian along the layer's directions, for symbolic n.

For a direction v the product :math:`(Jv)_i = \sum_k J_{ik} v_k` is reduced
like any other sum; v is an eigenvector when the result divided by
:math:`v_i` no longer depends on the index i, and that quotient is the
eigenvalue.

>>> from derivations import LAYERS
>>> [(p.direction.name, p.value, p.multiplicity) for p in eigenpairs(LAYERS["rmsnorm"])]
[('x', epsilon/(epsilon + r)**(3/2), 1), ('complement', 1/sqrt(epsilon + r), n - 1)]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import singledispatch

import sympy as sp

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Direction, Layer
from derivations.core.proof import DerivationError, equal
from derivations.derive import jacobian
from derivations.derive.sums import over_entries, reduce_sums
from derivations.symbols import J, i, k, n, ones, x


@dataclass(frozen=True)
class Eigen:
    """An eigenvalue of J with the direction that carries it."""

    direction: Direction
    value: sp.Expr
    multiplicity: sp.Expr


def _vector(direction: Direction, layer: Layer) -> sp.MatrixExpr:
    if direction.entry == 1:
        return ones
    name = "w" if direction.complement else str(layer.to_display(direction.entry.xreplace({k: i})).base)
    return sp.MatrixSymbol(name, n, 1)


@derived
def _quotient(layer: Layer, direction: Direction) -> sp.Expr | None:
    """(J v)_i / v_i, where it does not depend on i (v is an eigenvector), else None."""
    product = reduce_sums(over_entries(jacobian.entry(layer) * direction.entry, k))
    try:
        product = layer.express(product, *direction.constraints)
    except DerivationError:
        return None  # J v involves sums that neither the statistics nor the constraints fix
    value = sp.factor(sp.cancel(product / direction.entry.xreplace({k: i})))
    if i in value.free_symbols or value.atoms(sp.Indexed):
        return None
    return value


@singledispatch
@derived
def eigenpairs(layer: Layer) -> tuple[Eigen, ...]:
    """The layer's directions that are eigenvectors of J, with their eigenvalues.

    A direction that is not one is left out: a gain breaks every eigenvector
    of the base layer except those with eigenvalue 0.
    """
    pairs = []
    for direction in layer.directions:
        value = _quotient(layer, direction)
        if value is not None:
            pairs.append(Eigen(direction, value, sp.Integer(1)))
    # The explicit directions are linearly independent, so the complement
    # has dimension n minus their number.
    explicit = sum(1 for p in pairs if not p.direction.complement)
    return tuple(Eigen(p.direction, p.value, n - explicit if p.direction.complement else p.multiplicity) for p in pairs)


class Incomplete(DerivationError):
    """Directions that are not a whole eigen-decomposition of J: ``direction`` is the one at
    fault, None where it is the set."""

    def __init__(self, direction: Direction | None, reason: str) -> None:
        super().__init__(reason)
        self.direction = direction


# An input at which a matrix in the statistics is evaluated exactly: distinct entries,
# none zero, so that no statistic is degenerate there.
# Inputs, of several sizes (the determinant may vanish at one n alone), at which no statistic of
# a usual layer is 0 by symmetry.
_SAMPLE = (1, -2, 4, 7, 11, -3, 13, 5)
_SIZES = (2, 3, 5, 8)


def complete(layer: Layer) -> tuple[Eigen, ...]:
    r"""The eigenpairs, once proved to decompose R^n for symbolic n, or `Incomplete`.

    Every direction is an eigenvector (`_quotient`: J v reduced, divided by
    v_i, free of i).  One is the complement W, the w with
    :math:`\sum_k a_{l,k} w_k = 0` for its constraints a_l; with as many
    constraints as other directions d and the matrix :math:`(a_l \cdot d)`
    nonsingular, W has dimension n - m and meets the span of the d only in 0,
    so the multiplicities (1 for each d, n - m for W) add up to n.  The matrix
    is nonsingular where its determinant is not 0; it is evaluated at an input
    of each size in `_SIZES` (`_SAMPLE`), for a determinant that vanishes at one n.
    """
    pairs = eigenpairs(layer)
    for direction in layer.directions:
        if not any(p.direction is direction for p in pairs):
            kind = "an eigenspace" if direction.complement else "an eigenvector"
            raise Incomplete(direction, f"not {kind} of J: (J v)_i / v_i is not one value for every i")
    complements = [d for d in layer.directions if d.complement]
    explicit = [d for d in layer.directions if not d.complement]
    if not complements:
        raise Incomplete(
            None,
            f"the multiplicities add up to {len(explicit)}, not n; give the complement of the others "
            "(a direction with complement = true)",
        )
    if len(complements) > 1:
        raise Incomplete(complements[1], "a second complement; one complement is what the others leave")
    _separated(layer, complements[0], explicit)
    return pairs


def _separated(layer: Layer, rest: Direction, explicit: list[Direction]) -> None:
    """Raise `Incomplete` unless the complement ``rest`` meets the span of the ``explicit``
    directions only in 0: as many constraints as directions, and their matrix nonsingular."""
    if len(rest.constraints) != len(explicit):
        raise Incomplete(
            rest,
            f"{_count(len(rest.constraints), 'constraint')} for {_count(len(explicit), 'other direction')}: "
            f"its dimension is not the n - {len(explicit)} they leave",
        )
    w_k = rest.entry
    rows = [sp.cancel(a / w_k) for a in rest.constraints]
    if any(row.has(w_k.base) for row in rows):
        raise Incomplete(rest, "each constraint must be linear in w[k], as x[k] * w[k]")
    try:
        matrix = sp.Matrix([[layer.express(reduce_sums(over_entries(a * d.entry, k))) for d in explicit] for a in rows])
    except DerivationError as error:
        raise Incomplete(
            rest, f"its constraints on the other directions are not functions of the statistics ({error})"
        ) from None
    determinant = matrix.det()
    singular = _singular_sizes(determinant)
    if singular:
        raise Incomplete(
            rest,
            "its constraints do not separate it from the other directions "
            f"(their matrix is singular at n = {singular[0]}: a factor of its determinant in n alone vanishes there)",
        )
    for size in _SIZES:
        sample = {x[m]: value for m, value in enumerate(_SAMPLE[:size])}
        at = determinant.xreplace(layer.explicit_statistics(size)).xreplace({n: size}).xreplace(sample)
        if not sp.N(at, 30).is_nonzero:
            raise Incomplete(
                rest,
                "its constraints do not separate it from the other directions "
                f"(their matrix is singular at n = {size}, x = {_SAMPLE[:size]})",
            )


def _singular_sizes(determinant: sp.Expr) -> list[int]:
    """The n >= 2 at which a factor of ``determinant`` in n alone (a polynomial) vanishes, for
    every input: there the constraints leave more than the complement.  Factors that depend on
    the input are left to the samples (`_SIZES`)."""
    numerator, _ = sp.fraction(sp.factor(sp.together(determinant)))
    sizes: set[int] = set()
    for factor, _ in sp.factor_list(numerator)[1]:
        if factor.free_symbols == {n} and factor.is_polynomial(n):
            sizes |= {int(root) for root in sp.Poly(factor, n).all_roots() if root.is_integer and root >= 2}
    return sorted(sizes)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def pair(layer: Layer, direction: Direction) -> Eigen | None:
    """The eigenpair of ``direction``, or None where it is not an eigenvector."""
    return next((p for p in eigenpairs(layer) if p.direction is direction), None)


@singledispatch
@derived
def spectral_form(layer: Layer) -> str:
    r"""Prove J = sum_d lambda_d Pi_d, the spectral decomposition numeric assembles J from.

    Pi_v = v v^T / (v^T v) for each explicit direction and the complement's
    projector is I minus their sum; the explicit directions are orthogonal.
    The identity is proved entry by entry against the derived J_ik.
    """
    pairs = eigenpairs(layer)
    explicit = [p for p in pairs if not p.direction.complement]
    projectors = []
    for pair in explicit:
        v_i, v_k = pair.direction.entry.xreplace({k: i}), pair.direction.entry
        length = layer.express(reduce_sums(over_entries(v_k**2, k)))
        projectors.append(v_i * v_k / length)
    for a, b in itertools.combinations(explicit, 2):
        inner = layer.express(reduce_sums(over_entries(a.direction.entry * b.direction.entry, k)))
        if sp.simplify(inner) != 0:
            raise DerivationError(
                f"{layer.key}: directions {a.direction.name} and {b.direction.name} are not orthogonal"
            )
    assembled = sum((p.value * pi for p, pi in zip(explicit, projectors, strict=True)), sp.Integer(0))
    for pair in pairs:
        if pair.direction.complement:
            assembled += pair.value * (sp.KroneckerDelta(i, k) - sum(projectors, sp.Integer(0)))
    return equal(assembled, jacobian.entry(layer), f"{layer.key}: J = sum of eigenvalue times projector")


def eigen_formula(layer: Layer, direction: Direction, name: str) -> Formula:
    found = pair(layer, direction)
    if found is None:
        raise DerivationError(f"{layer.key}: {direction.name} is not an eigenvector of J")
    derived = layer.to_display(found.value)
    shown, proof = layer.proved(name, derived)
    v = _vector(direction, layer)

    def times(value: sp.Expr) -> sp.MatrixExpr:
        return sp.ZeroMatrix(n, 1) if value == 0 else value * v

    assumptions: tuple[str, ...] = ("epsilon > 0", "n >= 2")
    if direction.complement:
        assumptions += ("w orthogonal to the other directions",)
    return Formula(
        name,
        f"J acting on {direction.meaning}: eigenvalue with multiplicity {found.multiplicity}.",
        sp.Eq(J * v, times(derived)),
        assumptions,
        Established.ALL_N,
        f"symbolic n: sum_k J_ik v_k reduced; multiplicity {found.multiplicity}",
        proof,
        layer.key,
        sp.Eq(J * v, times(shown)),
    )
