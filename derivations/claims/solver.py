r"""A decision procedure for the algebraic fragment: z3's nonlinear real arithmetic.

A claim whose sides, once the domain has put in what it knows, are built from
numbers, symbols, + - * /, integer powers, square roots, ``abs``, ``max``,
``min`` and cases (Piecewise) is a sentence of real arithmetic.  Each root is a
new variable r with r >= 0 and r**2 equal to its radicand, each ``abs``,
``max`` and case an if-then-else: the translation is exact.  A root's and a
denominator's side conditions hold only where the case they are read in is
taken.  The domain is
translated as an over-approximation only (n is a real number >= 2, the
statistics independent coordinates in their own ranges), so that

- "no point of the domain violates the claim" (unsat) is a proof;
- "no point satisfies the assumptions" (unsat) makes a claim vacuous;
- a violation z3 finds (sat) is only a candidate: its point is decided again,
  exactly, by the sampler before anything is refuted.

Anything outside the fragment (tanh, exp, a sum over symbolic n, a limit left
unevaluated) is `Outside`, with the part that is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy as sp

# Milliseconds z3 may take for one question; past it the answer is "unknown".
TIMEOUT_MS = 2000


class Outside(Exception):
    """A term outside the algebraic fragment; the message names it."""


@dataclass(frozen=True)
class Answer:
    """What z3 said: "unsat", "sat" (with a point) or "unknown"."""

    status: str
    point: dict[sp.Basic, sp.Expr] | None = None


class _Translation:
    """SymPy terms as z3 terms, with the side conditions their new variables carry."""

    def __init__(self, opaque: tuple[type, ...] = ()) -> None:
        import z3

        self.z3 = z3
        # Terms read as real variables of their own (a sum over the entries, a matrix norm): an
        # over-approximation, so that unsat is still a proof and sat says nothing.
        self.opaque = opaque
        self.variables: dict[sp.Basic, Any] = {}
        self.extra: list[Any] = []
        self.roots: dict[tuple[sp.Basic, int], Any] = {}
        # The case a term is read in (None: every point).  A denominator's or a root's side
        # condition holds only there: 1/(a - 1) in a case a != 1 says nothing at a = 1.
        self.guard: Any = None

    def require(self, condition: Any) -> None:
        """A side condition of the term being read, where its case holds."""
        self.extra.append(condition if self.guard is None else self.z3.Implies(self.guard, condition))

    def variable(self, symbol: sp.Basic) -> Any:
        if symbol not in self.variables:
            z3 = self.z3
            name = f"v{len(self.variables)}"
            made = z3.Real(name)
            self.variables[symbol] = made
            if symbol.is_positive:
                self.extra.append(made > 0)
            elif symbol.is_nonnegative:
                self.extra.append(made >= 0)
            elif symbol.is_negative:
                self.extra.append(made < 0)
            elif symbol.is_nonpositive:
                self.extra.append(made <= 0)
            if symbol.is_nonzero and not (symbol.is_positive or symbol.is_negative):
                self.extra.append(made != 0)
            if getattr(symbol, "name", "") == "n" and symbol.is_integer:
                self.extra.append(made >= 2)
        return self.variables[symbol]

    def term(self, expr: sp.Basic) -> Any:
        z3 = self.z3
        if expr.is_Rational:
            return z3.RealVal(f"{expr.p}/{expr.q}")
        if self.opaque and isinstance(expr, self.opaque):
            return self.variable(expr)
        if expr.is_Symbol or isinstance(expr, sp.Indexed):
            if not expr.is_real and not isinstance(expr, sp.Indexed):
                raise Outside(f"{expr} is not known to be real")
            return self.variable(expr)
        if isinstance(expr, sp.Add):
            return z3.Sum([self.term(a) for a in expr.args])
        if isinstance(expr, sp.Mul):
            return z3.Product([self.term(a) for a in expr.args])
        if isinstance(expr, sp.Pow):
            return self.power(expr)
        if isinstance(expr, sp.Abs):
            inner = self.term(expr.args[0])
            return z3.If(inner >= 0, inner, -inner)
        if isinstance(expr, (sp.Max, sp.Min)):
            values = [self.term(a) for a in expr.args]
            out = values[0]
            for value in values[1:]:
                out = z3.If(value > out, value, out) if isinstance(expr, sp.Max) else z3.If(value < out, value, out)
            return out
        if isinstance(expr, sp.Piecewise):
            return self.cases(expr)
        if isinstance(expr, sp.sign):
            inner = self.term(expr.args[0])
            return z3.If(inner > 0, z3.RealVal(1), z3.If(inner < 0, z3.RealVal(-1), z3.RealVal(0)))
        raise Outside(f"{type(expr).__name__} ({sp.sstr(expr)[:60]})")

    def power(self, expr: sp.Pow) -> Any:
        z3 = self.z3
        base, exponent = expr.args
        if not exponent.is_Rational:
            raise Outside(f"the power {sp.sstr(expr)[:60]}")
        if exponent.is_Integer:
            if exponent == 0:
                return z3.RealVal(1)
            value = self.term(base)
            magnitude = int(abs(exponent))
            if magnitude > 12:
                raise Outside(f"the power {sp.sstr(expr)[:60]}")
            product = z3.Product([value] * magnitude) if magnitude > 1 else value
            if exponent < 0:
                self.require(product != 0)
                return 1 / product
            return product
        # base**(p/q) = r**p with r >= 0 and r**q = base: exact where base >= 0, which the domain
        # requires of an even root; an odd root of a base of either sign is complex in SymPy.
        degree = int(exponent.q)
        if degree > 4 or (degree % 2 and not base.is_nonnegative):
            raise Outside(f"the root {sp.sstr(expr)[:60]}")
        key = (base, degree)  # one root of each degree of each radicand
        if key not in self.roots:
            self.roots[key] = z3.Real(f"r{len(self.roots)}")
        root = self.roots[key]
        self.require(z3.And(root >= 0, z3.Product([root] * degree) == self.term(base)))
        return self._root_power(root, int(exponent.p))

    def _root_power(self, root: Any, exponent: int) -> Any:
        z3 = self.z3
        if exponent == 0:
            return z3.RealVal(1)
        product = z3.Product([root] * abs(exponent)) if abs(exponent) > 1 else root
        if exponent < 0:
            self.require(product != 0)
            return 1 / product
        return product

    def cases(self, expr: sp.Piecewise) -> Any:
        """An if-then-else, each case's value read where that case is the one taken: where its
        condition holds and no earlier one does."""
        z3 = self.z3
        outer = self.guard
        earlier: list[Any] = []
        values = []
        try:
            for value, condition in expr.args:
                self.guard = self._within(outer, *earlier)
                holds = self.relation(condition)
                self.guard = self._within(outer, *earlier, holds)
                values.append((self.term(value), holds))
                earlier.append(z3.Not(holds))
        finally:
            self.guard = outer
        if expr.args[-1][1] is not sp.true:
            # No "otherwise": the points no case covers are excluded by the domain already.
            self.require(z3.Or(*[holds for _, holds in values]))
        out = values[-1][0]
        for value, holds in reversed(values[:-1]):
            out = z3.If(holds, value, out)
        return out

    def _within(self, *conditions: Any) -> Any:
        present = [c for c in conditions if c is not None]
        return self.z3.And(*present) if present else None

    def relation(self, relation: sp.Basic) -> Any:
        z3 = self.z3
        if relation is sp.true:
            return z3.BoolVal(True)
        if relation is sp.false:
            return z3.BoolVal(False)
        if isinstance(relation, sp.And):
            return z3.And(*[self.relation(r) for r in relation.args])
        if isinstance(relation, sp.Or):
            return z3.Or(*[self.relation(r) for r in relation.args])
        if isinstance(relation, sp.Not):
            return z3.Not(self.relation(relation.args[0]))
        if isinstance(relation, sp.Contains):
            return self.contains(relation)
        if not isinstance(relation, sp.core.relational.Relational):
            raise Outside(f"the condition {sp.sstr(relation)[:60]}")
        left, right = self.term(relation.lhs), self.term(relation.rhs)
        return {
            sp.Eq: lambda: left == right,
            sp.Ne: lambda: left != right,
            sp.Le: lambda: left <= right,
            sp.Lt: lambda: left < right,
            sp.Ge: lambda: left >= right,
            sp.Gt: lambda: left > right,
        }[type(relation)]()

    def contains(self, relation: sp.Contains) -> Any:
        z3 = self.z3
        element, where = relation.args
        value = self.term(element)
        if isinstance(where, sp.Range) and where.step == 1:
            low = value >= self.term(where.inf)
            return low if where.sup == sp.oo else z3.And(low, value <= self.term(where.sup))
        if isinstance(where, sp.FiniteSet):
            return z3.Or(*[value == self.term(e) for e in where])
        raise Outside(f"the set {where}")


def _solve(constraints: Sequence[Any], translation: _Translation, timeout_ms: int) -> Answer:
    z3 = translation.z3
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*constraints, *translation.extra)
    status = solver.check()
    if status == z3.unsat:
        return Answer("unsat")
    if status != z3.sat:
        return Answer("unknown")
    model = solver.model()
    point = {}
    for symbol, variable in translation.variables.items():
        value = model.eval(variable, model_completion=True)
        point[symbol] = _rational(value)
    return Answer("sat", point)


def _rational(value: Any) -> sp.Rational:
    """A model's value as an exact rational: itself, or 40 digits of an algebraic number."""
    try:
        return sp.Rational(str(Fraction(value.as_fraction())))
    except (AttributeError, ValueError, TypeError):
        return sp.Rational(value.as_decimal(40).rstrip("?"))


def holds_everywhere(
    lhs: sp.Expr,
    op: str,
    rhs: sp.Expr,
    conditions: Iterable[sp.Basic],
    timeout_ms: int = TIMEOUT_MS,
    opaque: tuple[type, ...] = (),
) -> Answer:
    """Whether ``lhs op rhs`` holds at every point that meets ``conditions``: "unsat" (it does:
    no violation exists), "sat" with a candidate violation, or "unknown".  `Outside` where a
    term is not in the fragment.  Terms of the ``opaque`` types are variables of their own
    (`_Translation`): then only "unsat" means anything."""
    translation = _Translation(opaque)
    claim = translation.relation(_relation(lhs, op, rhs))
    domain = [translation.relation(c) for c in conditions]
    return _solve([*domain, translation.z3.Not(claim)], translation, timeout_ms)


def satisfiable(conditions: Iterable[sp.Basic], timeout_ms: int = TIMEOUT_MS) -> Answer:
    """Whether some point meets every condition: "sat" (with it), "unsat" or "unknown"."""
    translation = _Translation()
    return _solve([translation.relation(c) for c in conditions], translation, timeout_ms)


def _relation(lhs: sp.Expr, op: str, rhs: sp.Expr) -> sp.Basic:
    return {"==": sp.Eq, "<=": sp.Le, "<": sp.Lt, ">=": sp.Ge, ">": sp.Gt}[op](lhs, rhs, evaluate=False)
