"""Proving a claim for every admissible value, case by case where a quantity is piecewise in n."""

from __future__ import annotations

import sympy as sp

from derivations._proof import DerivationError, is_zero, less_equal
from derivations.claims.language import Relation
from derivations.symbols import n


def n_range(conditions: list[sp.Basic]) -> sp.Set:
    allowed: sp.Set = sp.Range(2, sp.oo)
    for condition in conditions:
        if condition.free_symbols == {n}:
            allowed = allowed.intersect(condition.as_set())
    return allowed


def _normalize(where: sp.Set) -> sp.Set:
    """Range(2, oo) minus {2} as Range(3, oo): SymPy leaves such differences unevaluated."""
    if isinstance(where, sp.Complement) and isinstance(where.args[0], sp.Range):
        kept, removed = where.args
        while kept.size != 0 and kept.inf in removed:
            kept = sp.Range(kept.inf + 1, kept.sup + 1 if kept.sup != sp.oo else sp.oo)
        if kept.intersect(removed) == sp.EmptySet:
            return kept
    return where


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
        how = is_zero(lhs - rhs)
        return None if how is None else f"simplification to 0 ({how})"
    small, large = (lhs, rhs) if op in ("<=", "<") else (rhs, lhs)
    if op in ("<", ">"):
        difference = sp.factor(sp.together(large - small))
        return "the difference is positive under the assumptions" if difference.is_positive else None
    try:
        return f"reduced to a known-nonnegative form: {less_equal(small, large, 'claim')}"
    except DerivationError:
        return None


def strengthened(relation: Relation, conditions: list[sp.Basic]) -> Relation:
    """The relation with each symbol assumed positive (``q > 0``) replaced by a positive one,
    so that the proof tactics can use the assumption; other assumptions only restrict sampling."""
    swap = {}
    for condition in conditions:
        if isinstance(condition, sp.StrictGreaterThan) and condition.rhs == 0 and condition.lhs.is_Symbol:
            swap[condition.lhs] = sp.Dummy(str(condition.lhs), positive=True)
    return Relation(relation.lhs.xreplace(swap), relation.op, relation.rhs.xreplace(swap))


def prove(relation: Relation, allowed: sp.Set) -> str | None:
    """How the relation holds for every admissible value, or None."""
    pieces = []
    for where in _partition(relation.lhs - relation.rhs, allowed):
        how = _prove_case(_restrict(relation.lhs, where), relation.op, _restrict(relation.rhs, where))
        if how is None:
            return None
        pieces.append(f"{describe_n(where)}: {how}")
    return "; ".join(pieces)
