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

from derivations.cache import derived
from derivations.core.formula import Established, Formula
from derivations.core.layer import Layer
from derivations.core.proof import DerivationError, equal, less_equal
from derivations.derive import eigen, jacobian
from derivations.derive.sums import over_entries, reduce_sums
from derivations.symbols import delta, i, k, n, norm_J


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
    if not pairs:  # a user's directions, none of them an eigenvector of J
        raise DerivationError(f"{layer.key}: no direction it has is an eigenvector of J; no eigenvalue bounds its norm")
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


# --- a bound at each input, where J is not symmetric ------------------------------------


def _terms(layer: Layer) -> dict[tuple[sp.Expr, sp.Expr], sp.Expr]:
    """J_ik as coefficient per (entry at i, entry at k): (delta, delta) for the identity term."""
    shown = jacobian.entry(layer).subs(sp.KroneckerDelta(i, k), delta)
    terms: dict[tuple[sp.Expr, sp.Expr], sp.Expr] = {}
    for part in sp.Add.make_args(sp.expand(shown)):
        rest, at_i = part.as_independent(i, as_Add=False)
        scalar, at_k = rest.as_independent(k, as_Add=False)
        key = (delta, delta) if delta in scalar.free_symbols else (at_i, at_k)
        scalar = scalar / delta if key == (delta, delta) else scalar
        terms[key] = terms.get(key, sp.Integer(0)) + scalar
    return terms


def _length(layer: Layer, entry: sp.Expr, index: sp.Symbol) -> sp.Expr:
    """||u|| = sqrt(sum_k u_k**2) of the vector with entry ``entry`` at ``index``, in the statistics."""
    return sp.sqrt(sp.factor(layer.express(reduce_sums(over_entries(entry.xreplace({index: k}) ** 2, k)))))


@singledispatch
@derived
def triangle_bound(layer: Layer) -> sp.Expr:
    r"""A bound on ||J||_2 at the input: with J = a I + sum_t c_t u_t v_t^T (the derived terms),
    :math:`\|J\|_2 \le |a| + \sum_t |c_t| \|u_t\| \|v_t\|`, the triangle inequality and
    :math:`\|u v^\top\|_2 = \|u\| \|v\|`; each length written in the statistics.

    Derived where J is not symmetric and no bound over all inputs is derived: a bound, not the norm.
    """
    if jacobian.is_symmetric(layer):
        raise DerivationError(f"{layer.key}: J is symmetric; its norm is the largest |eigenvalue|")
    total = sp.Integer(0)
    for (at_i, at_k), scalar in _terms(layer).items():
        size = sp.Integer(1) if at_i == delta else _length(layer, at_i, i) * _length(layer, at_k, k)
        total += sp.Abs(sp.factor(scalar)) * size
    if total.has(sp.Abs) or total.atoms(sp.Indexed):
        raise DerivationError(f"{layer.key}: the triangle bound {total} is not a function of the statistics")
    return total


def _has_global_bound(layer: Layer) -> bool:
    try:
        bound_value(layer)
    except DerivationError:
        return False
    return True


def triangle_applies(layer: Layer, _: object) -> bool:
    """Whether the bound at each input is the layer's: J not symmetric, no bound over all inputs derived."""
    if jacobian.is_symmetric(layer) or _has_global_bound(layer):
        return False
    try:
        triangle_bound(layer)
    except DerivationError:
        return False
    return True


def triangle_formula(layer: Layer, _: object, name: str) -> Formula:
    shown, proof = layer.proved(name, layer.to_display(triangle_bound(layer)))
    return Formula(
        name,
        "A bound on the spectral norm at the input, not its value: J is not symmetric, so no eigenvalue "
        "gives ||J||_2, and no bound over all inputs is derived.",
        sp.Le(norm_J, layer.to_display(triangle_bound(layer))),
        ("epsilon > 0", "n >= 2"),
        Established.ALL_N,
        "triangle inequality over the derived terms of J: ||a I + sum c u v^T||_2 <= |a| + sum |c| ||u|| ||v||, "
        "each length reduced for symbolic n",
        proof,
        layer.key,
        sp.Le(norm_J, layer.to_display(shown)),
    )
