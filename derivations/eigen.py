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

from derivations import jacobian
from derivations._cache import derived
from derivations._formula import Established, Formula
from derivations._layer import Direction, Layer
from derivations._proof import DerivationError, equal
from derivations.sums import over_entries, reduce_sums
from derivations.symbols import J, i, k, n, ones


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
