"""Proving a claim for every admissible value, case by case where a quantity is piecewise in n."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import sympy as sp

from derivations.claims.language import Relation
from derivations.core.proof import DerivationError, is_zero, less_equal, same_domain
from derivations.symbols import n, t


def _normalize(where: sp.Set) -> sp.Set:
    """Range(2, oo) minus {2} as Range(3, oo): SymPy leaves such differences unevaluated."""
    if isinstance(where, sp.Complement) and isinstance(where.args[0], sp.Range):
        kept, removed = where.args
        for _ in range(_NORMALIZE_STEPS):  # a removed set that holds every n from some on has no end
            if kept.size == 0 or kept.inf not in removed:
                break
            kept = sp.Range(kept.inf + 1, kept.sup + 1 if kept.sup != sp.oo else sp.oo)
        if kept.size == 0 or kept.intersect(removed) == sp.EmptySet:
            return kept if kept.size else sp.EmptySet
        if kept.sup == sp.oo and removed.is_superset(sp.Interval(kept.inf, sp.oo)) is True:
            return sp.EmptySet
    return where


# How many smallest n `_normalize` takes out one by one before it looks at the rest as a whole.
_NORMALIZE_STEPS = 64


def _partition(expr: sp.Expr, allowed: sp.Set) -> list[sp.Set]:
    """The sets of n on which every Piecewise in ``expr`` keeps one branch."""
    parts = [allowed]
    for piecewise in expr.atoms(sp.Piecewise):
        refined = []
        for part in parts:
            rest = part
            for _, condition in piecewise.args:
                where = _normalize(rest if condition is sp.true else rest.intersect(condition.as_set()))
                if where != sp.EmptySet:
                    refined.append(where)
                rest = _normalize(rest - where)
        parts = refined
    return parts


def _restrict(expr: sp.Expr, where: sp.Set) -> sp.Expr:
    """``expr`` with each Piecewise replaced by its branch for n in ``where``."""

    def branch(piecewise: sp.Piecewise) -> sp.Expr:
        for value, condition in piecewise.args:
            if condition is sp.true or where.is_subset(condition.as_set()):
                return value
        raise DerivationError(f"no single branch of {piecewise} on {where}")

    return expr.replace(lambda e: isinstance(e, sp.Piecewise), branch)


def describe_n(where: sp.Set) -> str:
    """``n >= 3``, ``n = 2``, ... for a set of feature counts."""
    if isinstance(where, sp.Range) and where.sup == sp.oo:
        return f"n >= {where.inf}"
    if isinstance(where, (sp.Range, sp.FiniteSet)) and where.inf == where.sup:
        return f"n = {where.inf}"
    if isinstance(where, sp.Range):
        return f"{where.inf} <= n <= {where.sup}"
    if isinstance(where, sp.FiniteSet):
        return "n in {" + ", ".join(map(str, where)) + "}"
    return f"n in {where}"


def _prove_case(lhs: sp.Expr, op: str, rhs: sp.Expr) -> str | None:
    if op == "==":
        if lhs == rhs:
            return "both sides are the same expression"
        how = is_zero(lhs - rhs) if same_domain(lhs, rhs) else None
        return None if how is None else f"simplification to 0 ({how})"
    small, large = (lhs, rhs) if op in ("<=", "<") else (rhs, lhs)
    if op in ("<", ">"):
        return _prove_strict(small, large)
    if small.is_extended_nonpositive and large.is_extended_nonnegative:
        return "the smaller side is not positive and the larger not negative"
    try:
        return f"reduced to a known-nonnegative form: {less_equal(small, large, 'claim')}"
    except DerivationError:
        return None


def _prove_strict(small: sp.Expr, large: sp.Expr) -> str | None:
    """How ``small < large`` is proved under the symbols' assumptions, or None."""
    difference = sp.factor(sp.together(large - small))
    if difference.is_positive:
        return "the difference is positive under the assumptions"
    if large == sp.oo and small.is_finite:
        return "the smaller side is finite"
    if small.is_nonnegative and large.is_nonnegative:
        squares = sp.factor(sp.together(large**2 - small**2))
        numerator, denominator = sp.fraction(squares)
        if squares.is_positive or (denominator.is_positive and sp.expand(numerator).is_positive):
            return "squares compared: the difference of the squares is positive"
    if (small.is_extended_negative and large.is_extended_nonnegative) or (
        small.is_extended_nonpositive and large.is_extended_positive
    ):
        return "one side is negative, the other not"
    return None


def reparametrized(condition: sp.Basic) -> tuple[sp.Symbol, list[sp.Expr], str] | None:
    """A bound on one symbol as substitutions that together meet it for every u >= 0 (or u > 0).

    ``s >= a`` is s = a + u; ``s <= b`` is s = b - u for a real s.  For a nonnegative s
    and b > 0 it is two cases, s = 0 and s = b/(1 + u), which together cover [0, b]
    (for a positive s, only the second): s = b/(1 + u) alone would leave out 0.
    """
    if not isinstance(condition, (sp.GreaterThan, sp.StrictGreaterThan, sp.LessThan, sp.StrictLessThan)):
        return None
    lhs, rhs = condition.lhs, condition.rhs
    flipped = False
    if rhs.is_Symbol and lhs.is_number:
        lhs, rhs, flipped = rhs, lhs, True
    if not (lhs.is_Symbol and rhs.is_number and rhs.is_real):
        return None
    strict = isinstance(condition, (sp.StrictGreaterThan, sp.StrictLessThan))
    above = isinstance(condition, (sp.GreaterThan, sp.StrictGreaterThan)) != flipped
    u = sp.Dummy("u", positive=True) if strict else sp.Dummy("u", nonnegative=True)
    if above:
        return lhs, [rhs + u], f"{lhs} = {rhs} + u"
    if lhs.is_positive and rhs > 0:
        return lhs, [rhs / (1 + u)], f"{lhs} = {rhs}/(1 + u)"
    if lhs.is_nonnegative and rhs > 0:
        return lhs, [sp.Integer(0), rhs / (1 + u)], f"{lhs} = 0 or {lhs} = {rhs}/(1 + u)"
    if not lhs.is_nonnegative:
        return lhs, [rhs - u], f"{lhs} = {rhs} - u"
    return None


def prove(relation: Relation, allowed: sp.Set, conditions: Sequence[sp.Basic] = ()) -> str | None:
    """How the relation holds for every admissible value, or None.

    Bounds on single symbols are used as substitutions (`reparametrized`);
    where t is free the two signs of t are proved apart (an odd response is
    bounded on one side by its sign).
    """
    regime = next(
        (
            p
            for p in sp.Tuple(relation.lhs, relation.rhs).atoms(sp.Piecewise)
            if any(condition.free_symbols - {n} for _, condition in p.args)
        ),
        None,
    )
    if regime is not None:
        # Regimes of the statistics (a clamp), not of n: proved in every branch, without its condition
        # (which is sound, every input being in one branch); else left to sampling.
        pieces = []
        for value, condition in regime.args:
            branch = {regime: value}
            how = prove(
                Relation(relation.lhs.xreplace(branch), relation.op, relation.rhs.xreplace(branch)), allowed, conditions
            )
            if how is None:
                return None
            pieces.append(f"{'otherwise' if condition is sp.true else f'where {condition}'}: {how}")
        return "; ".join(pieces)
    swaps: dict[sp.Basic, list[sp.Expr]] = {}
    used = []
    for condition in conditions:
        if condition.free_symbols == {n}:
            continue
        found = reparametrized(condition)
        if found is not None and found[0] not in swaps:
            swaps[found[0]] = found[1]
            used.append(found[2])
    pieces = []
    for values in itertools.product(*swaps.values()):
        swap = dict(zip(swaps, values, strict=True))
        how = _prove_swapped(relation.lhs.xreplace(swap), relation.op, relation.rhs.xreplace(swap), allowed)
        if how is None:
            return None
        pieces.append(how)
    prefix = f"with {', '.join(used)}; " if used else ""
    return prefix + "; ".join(dict.fromkeys(pieces))


def _prove_swapped(lhs: sp.Expr, op: str, rhs: sp.Expr, allowed: sp.Set) -> str | None:
    """One case of the substitutions: each sign of a free t apart, each case of n apart."""
    branches: list[tuple[str, dict[sp.Basic, sp.Expr]]] = [("", {})]
    free = [s for s in (lhs - rhs).free_symbols if s.name == t.name and s.is_nonnegative is None]
    if free:
        (variable,) = free
        u = sp.Dummy("u", positive=True) if variable.is_nonzero else sp.Dummy("u", nonnegative=True)
        sign = ">" if variable.is_nonzero else ">="
        branches = [(f"t {sign} 0", {variable: u}), (f"t {sign.replace('>', '<')} 0", {variable: -u})]
    pieces = []
    for label, branch in branches:
        for where in _partition(sp.Tuple(lhs, rhs), allowed):
            how = _prove_case(_restrict(lhs.xreplace(branch), where), op, _restrict(rhs.xreplace(branch), where))
            if how is None:
                return None
            pieces.append(f"{describe_n(where)}{', ' + label if label else ''}: {how}")
    return "; ".join(pieces)
