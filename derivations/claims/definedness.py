r"""Where a claim is defined, read off its unsimplified terms before SymPy cancels anything.

SymPy simplifies as it builds: ``q**-1 * q`` is 1 and ``0 * (2 t^2)^{-3/2}`` is 0
the moment they are formed, so a division by zero is visible only in the terms
themselves.  Three kinds of term leave a `Requirement`:

- each operation the claim itself writes, read at that node (`at_node`): a
  negative power ``b**-p`` or a division needs ``b != 0``, an even root
  ``b**(1/2)`` needs ``b >= 0``;
- the layer's definition, read whole (`requirements`): where it divides by
  zero (epsilon = 0 and q = 0), the layer and all it yields are undefined;
- a derived formula, read only for its cases (`gaps`): a derivative given on
  either side of a clamp's kink and not on it.  Its denominators are not read:
  a derived formula may divide by what vanishes where the quantity is still
  defined (``x x^T / ||x||`` in a Jacobian that is I/epsilon at x = 0).  A
  quantity of epsilon and the gains alone (a bound over all inputs, the slope
  at t = 0) is the exception, read whole: with no input to tend to a point in,
  it is undefined where its formula is (1/sqrt(epsilon) at epsilon = 0).

Within a case of a definition, a requirement holds only where that case is
taken.  The domain (`derivations.claims.domain`) then decides each: one that
always holds is dropped, one that never holds makes the claim undefined
everywhere, and any other excludes the points where it fails from the
verdict's quantifier ("for all t, where t != 0").

>>> from derivations.symbols import q, t
>>> [r.condition for r in requirements(q**-1 * t, "the claim")]
[Ne(q, 0)]
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from derivations.claims.language import Lim


@dataclass(frozen=True)
class Requirement:
    """A condition under which a term is defined, and what it comes from."""

    condition: sp.Basic
    origin: str
    # A layer at another input z: stand-ins for z's statistics (with the statistics' properties,
    # which hold at every input) and their values in x's.  A condition the stand-ins' properties
    # settle is judged so; any other is put in x's statistics first.
    stand_ins: tuple[tuple[sp.Symbol, sp.Expr], ...] = ()


def requirements(expr: sp.Basic, origin: str) -> list[Requirement]:
    """The conditions under which every term of ``expr`` is defined (`Requirement`)."""
    found: dict[sp.Basic, Requirement] = {}
    _walk(expr, origin, found)
    return list(found.values())


def at_node(expr: sp.Basic, origin: str) -> list[Requirement]:
    """The conditions one operation needs of its operands (a division, a power, a root), not
    those of the operands' own terms."""
    found: dict[sp.Basic, Requirement] = {}
    _node(expr, origin, found)
    return list(found.values())


def gaps(expr: sp.Basic, origin: str) -> list[Requirement]:
    """The conditions a derived formula's cases need: some case must hold (a kink is in none)."""
    found: dict[sp.Basic, Requirement] = {}
    for piecewise in expr.atoms(sp.Piecewise):
        if not piecewise.has(Lim) and not any(condition is sp.true for _, condition in piecewise.args):
            _add(found, sp.Or(*(condition for _, condition in piecewise.args)), origin)
    return list(found.values())


def _walk(expr: sp.Basic, origin: str, found: dict[sp.Basic, Requirement]) -> None:
    if isinstance(expr, Lim):
        # A limit's body need not be defined at the point it tends to; its own variable is bound.
        return
    _node(expr, origin, found)
    if isinstance(expr, sp.Piecewise):
        _cases(expr, origin, found)
        return
    for argument in expr.args:
        if isinstance(argument, sp.Basic):
            _walk(argument, origin, found)


def _node(expr: sp.Basic, origin: str, found: dict[sp.Basic, Requirement]) -> None:
    if isinstance(expr, sp.Pow):
        base, exponent = expr.args
        if exponent.is_negative:
            _add(found, sp.Ne(base, 0, evaluate=False), origin)
        if exponent.is_Rational and not exponent.is_Integer and exponent.q % 2 == 0:
            _add(found, sp.Ge(base, 0, evaluate=False), origin)


def _cases(expr: sp.Piecewise, origin: str, found: dict[sp.Basic, Requirement]) -> None:
    """A formula by cases: some case must hold, and each case's value is required only where that
    case is the one taken (x/||x|| needs ||x|| != 0 only outside the clamp)."""
    conditions = [condition for _, condition in expr.args]
    if not any(condition is sp.true for condition in conditions):
        _add(found, sp.Or(*conditions), origin)
    for position, (value, condition) in enumerate(expr.args):
        inner: dict[sp.Basic, Requirement] = {}
        _walk(value, origin, inner)
        _walk(condition, origin, inner)
        # Not taken: an earlier case holds, or this one does not.
        elsewhere = [*conditions[:position], sp.Not(condition)]
        for requirement in inner.values():
            _add(found, sp.Or(*elsewhere, requirement.condition), requirement.origin)


def _add(found: dict[sp.Basic, Requirement], condition: sp.Basic, origin: str) -> None:
    if not condition.free_symbols:
        condition = condition.func(*condition.args)  # a condition on numbers: decided now
    if condition is not sp.true and condition not in found:
        found[condition] = Requirement(condition, origin)
