"""Proof tactics: each returns how it succeeded or raises `DerivationError`."""

from __future__ import annotations

from collections.abc import Callable

import sympy as sp


class DerivationError(RuntimeError):
    """A derivation could not prove what its layer states."""


# Cheapest first: most identities here close under expansion or cancellation,
# and full ``simplify`` costs tenfold more.
_ZERO_TACTICS: tuple[tuple[str, Callable[[sp.Expr], sp.Expr]], ...] = (
    ("expand", sp.expand),
    ("cancel", lambda e: sp.cancel(sp.together(e))),
    ("radsimp", lambda e: sp.expand(sp.radsimp(sp.together(e)))),
    # A difference of two functions defined by cases (a clamped layer's
    # regimes): folded into one Piecewise, each branch cancelled.
    ("piecewise_fold", lambda e: _by_branch(e) if e.has(sp.Piecewise) else e),
    ("simplify", sp.simplify),
)


def _by_branch(expr: sp.Expr) -> sp.Expr:
    folded = sp.piecewise_fold(expr)
    if not isinstance(folded, sp.Piecewise):
        return sp.cancel(sp.together(folded))
    branches = [sp.cancel(sp.together(value)) for value, _ in folded.args]
    return sp.Integer(0) if all(b == 0 for b in branches) else folded


def is_zero(expr: sp.Expr) -> str | None:
    """The name of the first tactic that reduces ``expr`` to exactly 0, or None."""
    for name, tactic in _ZERO_TACTICS:
        if tactic(expr) == 0:
            return name
    return None


def defined(expr: sp.Expr) -> sp.Basic:
    """Where ``expr`` is defined: some case of each function by cases in it holds (`sp.true`
    where it has none).  A tactic that folds a difference of two such functions proves it 0
    only where both are defined."""
    return sp.And(*(sp.Or(*(condition for _, condition in p.args)) for p in expr.atoms(sp.Piecewise)))


def same_domain(one: sp.Expr, other: sp.Expr) -> bool:
    """Whether ``one`` and ``other`` are provably defined at the same points."""
    a, b = defined(one), defined(other)
    return a == b or sp.simplify(sp.Xor(a, b)) == sp.false


def equal(derived: sp.Expr, stated: sp.Expr, what: str) -> str:
    """Prove ``derived == stated`` for all admissible symbol values: equal wherever both are
    defined, and defined at the same points (a slope stated at a kink where it does not exist
    is refused)."""
    how = is_zero(derived - stated)
    if how is not None and not same_domain(derived, stated):
        raise DerivationError(
            f"{what}: derived {derived} is defined where {defined(derived)}, stated {stated} where {defined(stated)}"
        )
    if how is not None:
        return f"{how}(derived - stated) = 0"
    raise DerivationError(f"{what}: derived {derived} is not provably equal to stated {stated}")


def nonnegative(expr: sp.Expr) -> str | None:
    """Show ``expr >= 0`` from the symbols' assumptions, or return None."""
    together = sp.factor(sp.together(expr))
    if together.is_nonnegative:
        return "factor(together(.)) is nonnegative under the assumptions"
    numerator, denominator = sp.fraction(together)
    if denominator.is_positive and sp.expand(numerator).is_nonnegative:
        return "expanded numerator is a sum of nonnegative terms over a positive denominator"
    return None


def less_equal(small: sp.Expr, large: sp.Expr, what: str) -> str:
    """Prove ``small <= large``; for nonnegative sides, by comparing their squares."""
    how = nonnegative(large - small)
    if how:
        return how
    # Both sides are nonnegative, so comparing their squares is equivalent and
    # removes the square roots that assumption queries cannot see through.
    if small.is_nonnegative and large.is_nonnegative:
        how = nonnegative(large**2 - small**2)
        if how:
            return f"squares compared: {how}"
    raise DerivationError(f"{what}: cannot prove {small} <= {large}")
