r"""The spectral norm of the Jacobian and its bound in epsilon.

For a symmetric J the spectral norm is the largest |eigenvalue| over the
eigenvalues that occur, i.e. whose multiplicity is positive.  The complement
of the explicit directions is empty for small n, so the norm is piecewise in n.

>>> from derivations import LAYERS
>>> spectral_norm(LAYERS["layernorm"])
Piecewise((epsilon/(epsilon + q)**(3/2), Eq(n, 2)), (1/sqrt(epsilon + q), n >= 3))
>>> bound_value(LAYERS["layernorm"])
1/sqrt(epsilon)
"""

from __future__ import annotations

import itertools
from functools import singledispatch

import sympy as sp

from derivations import eigen, jacobian
from derivations._cache import derived
from derivations._formula import Established, Formula
from derivations._layer import Layer
from derivations._proof import DerivationError, equal, less_equal
from derivations.symbols import n, norm_J


def _largest(values: list[sp.Expr], what: str) -> tuple[sp.Expr, list[str]]:
    """The value provably >= all the others, with the proofs."""
    for candidate in values:
        try:
            proofs = [less_equal(other, candidate, what) for other in values if other is not candidate]
        except DerivationError:
            continue
        return candidate, proofs
    raise DerivationError(f"{what}: no largest among {values}")


@singledispatch
@derived
def cases(layer: Layer) -> tuple[tuple[int, sp.Expr], ...]:
    """(smallest n of the case, spectral norm) for each range of n."""
    if not jacobian.is_symmetric(layer):
        raise DerivationError(f"{layer.key}: J is not symmetric; |eigenvalue| does not bound its norm")
    pairs = eigen.eigenpairs(layer)
    # Multiplicities are n - constant; a direction starts to exist at the n
    # where its multiplicity turns positive.
    starts = sorted(
        {max(2, int(sp.solve(sp.Eq(p.multiplicity, 1), n)[0])) if p.multiplicity.has(n) else 2 for p in pairs}
    )
    out = []
    for start in starts:
        present = [sp.Abs(p.value) for p in pairs if p.multiplicity.subs(n, start) > 0]
        largest, _ = _largest(present, f"{layer.key}.spectral_norm, n >= {start}")
        out.append((start, largest))
    return tuple(out)


@derived
def spectral_norm(layer: Layer) -> sp.Expr:
    pieces = cases(layer)
    if len(pieces) == 1:
        return pieces[0][1]
    branches = [
        (value, sp.Eq(n, start) if nxt == start + 1 else n < nxt)
        for (start, value), (nxt, _) in itertools.pairwise(pieces)
    ]
    branches.append((pieces[-1][1], n >= pieces[-1][0]))
    return sp.Piecewise(*branches)


@derived
def constant_input(layer: Layer) -> sp.Expr:
    """The spectral norm at the degenerate input (spread = 0): every case agrees."""
    values = {sp.factor(value.subs(layer.spread, 0)) for _, value in cases(layer)}
    if len(values) != 1:
        raise DerivationError(f"{layer.key}: cases disagree at {layer.spread} = 0: {values}")
    return values.pop()


@derived
def bound(layer: Layer) -> tuple[sp.Expr, list[str], sp.Set]:
    """The bound over all inputs (its value at spread = 0), proofs, and where it is attained."""
    top = constant_input(layer)
    proofs = [less_equal(value, top, f"{layer.key}.spectral_bound") for _, value in cases(layer)]
    attained = [
        sp.solveset(sp.numer(sp.together(top - value)), layer.spread, sp.Interval(0, sp.oo))
        for _, value in cases(layer)
    ]
    where = attained[0]
    if any(a != where for a in attained):
        raise DerivationError(f"{layer.key}: equality sets differ by case: {attained}")
    return top, proofs, where


def _members(name: str, where: sp.Set) -> str:
    if isinstance(where, sp.FiniteSet):
        return " or ".join(f"{name} = {value}" for value in where)
    return f"{name} in {where}"


@singledispatch
def bound_value(layer: Layer) -> sp.Expr:
    """The bound on ||J||_2 over all inputs."""
    return bound(layer)[0]


@singledispatch
def norm_formula(layer: Layer, _: object, name: str) -> Formula:
    norm = spectral_norm(layer)
    stated = layer.stated.get(name)
    proof = ""
    if stated is not None:
        proof = "; ".join(
            equal(layer.to_display(value), stated.subs(n, start), f"{layer.key}.{name}, n = {start}")
            for start, value in cases(layer)
        )
    return Formula(
        name,
        "Spectral norm of J: the largest |eigenvalue| of the symmetric J that occurs for that n.",
        sp.Eq(norm_J, layer.to_display(norm)),
        ("epsilon > 0", "n >= 2"),
        Established.ALL_N,
        f"eigenvalues compared; at {layer.spread} = 0 it is {constant_input(layer)}",
        proof,
        layer.key,
        None if stated is None else sp.Eq(norm_J, stated),
    )


@singledispatch
def bound_formula(layer: Layer, _: object, name: str) -> Formula:
    top, proofs, where = bound(layer)
    shown, proof = layer.proved(name, top)
    return Formula(
        name,
        f"Bound on the spectral norm over all inputs, with equality exactly when {_members(str(layer.spread), where)}.",
        sp.Le(norm_J, top),
        ("epsilon > 0", "n >= 2"),
        Established.ALL_N,
        "; ".join(proofs),
        proof,
        layer.key,
        sp.Le(norm_J, shown),
    )
