r"""Limits as a mathematician reads them: two-sided unless written one-sided, and pointwise.

A claim's ``limit(e, v, a)`` is taken here, after the domain has put in what
the assumptions fix and given each symbol the properties they guarantee
(``alpha > 0`` makes alpha positive, so tanh(alpha t) tends to 1).

- **Two-sided** unless a side is written: the limit is taken from the right and
  from the left, and where the two differ it does not exist (`Nonexistent`).
  A limit in epsilon is over epsilon > 0 only, so it is one-sided by nature.
- **Pointwise** in every other symbol: SymPy takes a limit for a generic value
  of the others, so ``limit(slope, epsilon, 0)`` is 0 for the t it imagines,
  while at t = 0 the slope is 1/sqrt(epsilon), which tends to oo.  Each symbol
  the body entangles with the variable (inside a root, a power, a function, a
  case) is split by its sign (< 0, = 0, > 0, as its domain allows) and at every
  real root of a denominator at the limit point; the limit is taken in each
  case, and the cases are one `Piecewise`.
- **Cases of the variable** (a clamp's regimes) are resolved first: the branch
  that holds near the point, from the limit of each condition's two sides.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp

from derivations.claims.language import LEFT, RIGHT, TWO_SIDED, ClaimError, Lim

# More cases than this and the limit is refused: each is a SymPy limit of its own.
MAX_CASES = 27
# Roots of a denominator at the limit point, per symbol, taken as cases of their own.
MAX_ROOTS = 4


@dataclass(frozen=True)
class Nonexistent:
    """A limit that does not exist where ``where`` holds (the two sides differ, say)."""

    where: sp.Basic
    what: str


def take(expr: sp.Basic) -> tuple[sp.Basic, list[Nonexistent]]:
    """``expr`` with every `Lim` taken, innermost first, and where each does not exist."""
    missing: list[Nonexistent] = []
    while True:
        pending = [node for node in expr.atoms(Lim) if not node.args[0].has(Lim)]
        if not pending:
            return expr, missing
        values = {}
        for node in pending:
            value, lost = _pointwise(node)
            values[node] = value
            missing += lost
        expr = expr.xreplace(values)


def _pointwise(node: Lim) -> tuple[sp.Expr, list[Nonexistent]]:
    body, variable, point, side = node.args
    cases = list(_cases(body, variable, point, node))
    if len(cases) > MAX_CASES:
        raise ClaimError(f"{node}: the limit depends on too many symbols to be taken pointwise")
    branches: list[tuple[sp.Expr, sp.Basic]] = []
    missing = []
    for where, substitution, back in cases:
        value = _one(body.xreplace(substitution), variable, point, side, node)
        if isinstance(value, Nonexistent):
            missing.append(Nonexistent(where, value.what))
            value = sp.nan
        branches.append((value.xreplace(back), where))
    values = {value for value, _ in branches}
    if len(values) == 1:
        return branches[0][0], missing
    # The special points (a root, zero) come first: a Piecewise takes the first that holds.
    ordered = sorted(branches, key=lambda branch: not branch[1].has(sp.Eq))  # has() counts the relation itself
    return sp.Piecewise(*ordered[:-1], (ordered[-1][0], True)), missing


def _cases(body: sp.Expr, variable: sp.Symbol, point: sp.Expr, node: Lim):
    """(condition, substitution, back-substitution) for each case of the symbols the body
    entangles with ``variable``: a sign each, and each root of a denominator at the point."""
    per_symbol = []
    for symbol in sorted(_entangled(body, variable), key=sp.default_sort_key):
        roots = _roots(body, variable, point, symbol, node)
        per_symbol.append(list(_symbol_cases(symbol, roots)))
    for combination in itertools.product(*per_symbol):
        where = sp.And(*(c for c, _, _ in combination))
        substitution = {key: value for _, s, _ in combination for key, value in s.items()}
        back = {key: value for _, _, b in combination for key, value in b.items()}
        yield where, substitution, back


def _entangled(body: sp.Expr, variable: sp.Symbol) -> set[sp.Basic]:
    """Symbols (and entries such as gamma[2]) that meet ``variable`` inside a root, a negative
    power, a function or a case: where their value can change the limit's form."""
    out: set[sp.Basic] = set()
    for node in sp.preorder_traversal(body):
        nonlinear = (
            isinstance(node, (sp.Function, sp.Piecewise))
            or (isinstance(node, sp.Pow) and not (node.exp.is_Integer and node.exp.is_positive))
        ) and not isinstance(node, Lim)
        if nonlinear and node.has(variable):
            out |= {s for s in _leaves(node) if s != variable}
    return out


def _leaves(expr: sp.Basic) -> set[sp.Basic]:
    entries = expr.atoms(sp.Indexed)
    inside = {s for e in entries for s in e.free_symbols}
    return (expr.free_symbols - inside) | entries


def _roots(body: sp.Expr, variable: sp.Symbol, point: sp.Expr, symbol: sp.Basic, node: Lim) -> list[sp.Expr]:
    """Real roots, in ``symbol`` alone, of each denominator (or root's radicand) of the body at
    the limit point, and of each case boundary there: where the generic limit may not hold.
    Where they cannot all be found (SymPy gives up, or finds a continuum or too many), the limit
    is refused: a root left out would be a point whose limit nobody took."""
    if point.is_infinite:
        return []
    # The body as written and over a common denominator, its common factors cancelled: in
    # t/((a - 1) t + t**2) the root a = 1 of the denominator hides behind the factor t.
    candidates = [
        node.base
        for form in (body, _cancelled(body))
        for node in sp.preorder_traversal(form)
        if isinstance(node, sp.Pow) and node.has(variable) and not (node.exp.is_Integer and node.exp.is_positive)
    ]
    for piecewise in body.atoms(sp.Piecewise):
        for _, condition in piecewise.args:
            if isinstance(condition, sp.core.relational.Relational) and condition.has(variable):
                candidates.append(condition.lhs - condition.rhs)
    found: set[sp.Expr] = set()
    stand_in = sp.Dummy("z", real=True)
    for candidate in candidates:
        at_point = candidate.xreplace({variable: point})
        if _leaves(at_point) != {symbol}:
            continue
        try:
            solutions = sp.solveset(at_point.xreplace({symbol: stand_in}), stand_in, sp.S.Reals)
        except (NotImplementedError, ValueError, TypeError):
            solutions = None
        if solutions is sp.S.EmptySet:
            continue
        if not isinstance(solutions, sp.FiniteSet) or len(solutions) > MAX_ROOTS:
            raise ClaimError(f"{node}: cannot find every {symbol} where {at_point} is 0, so not the limit there")
        found |= {root for root in solutions if _admits(symbol, root)}
    return sorted(found - {sp.Integer(0)}, key=sp.default_sort_key)


def _cancelled(body: sp.Expr) -> sp.Expr:
    try:
        return sp.cancel(sp.together(body))
    except sp.PolynomialError:  # a function by cases SymPy will not put over one denominator
        return body


def _admits(symbol: sp.Basic, value: sp.Expr) -> bool:
    if symbol.is_positive:
        return bool(value.is_positive)
    if symbol.is_nonnegative:
        return bool(value.is_nonnegative)
    return True


def _symbol_cases(symbol: sp.Basic, roots: list[sp.Expr]):
    """The cases of one symbol: its sign as its properties allow, and each root apart."""
    positive = sp.Dummy(f"{symbol}_pos", positive=True)
    if not symbol.is_positive:
        yield sp.Eq(symbol, 0), {symbol: sp.Integer(0)}, {}
    for root in roots:
        yield sp.Eq(symbol, root), {symbol: root}, {}
    apart = [sp.Ne(symbol, root) for root in roots]
    if not symbol.is_nonnegative:
        yield sp.And(symbol < 0, *apart), {symbol: -positive}, {positive: -symbol}
    yield sp.And(symbol > 0, *apart), {symbol: positive}, {positive: symbol}


def _one(body: sp.Expr, variable: sp.Symbol, point: sp.Expr, side: sp.Integer, node: Lim) -> sp.Expr | Nonexistent:
    """The limit of a body with no other symbol's sign in doubt: from ``side``, or from both."""
    if point.is_infinite or side == RIGHT or (side == TWO_SIDED and variable.is_nonnegative):
        return _sided(body, variable, point, "+", node)
    if side == LEFT:
        return _sided(body, variable, point, "-", node)
    right = _sided(body, variable, point, "+", node)
    left = _sided(body, variable, point, "-", node)
    if right == left:
        return right
    difference = sp.simplify(right - left) if not (right.is_infinite or left.is_infinite) else None
    if difference == 0:
        return right
    if difference is not None and difference.free_symbols and difference.is_zero is not False:
        raise ClaimError(f"{node}: cannot tell whether the limits from the left ({left}) and right ({right}) agree")
    return Nonexistent(sp.true, f"the limit does not exist: from the left {left}, from the right {right}")


def _sided(body: sp.Expr, variable: sp.Symbol, point: sp.Expr, side: str, node: Lim) -> sp.Expr:
    body = sp.piecewise_fold(_near(body, variable, point, side, node))
    if isinstance(body, sp.Piecewise):
        # Cases of other symbols (n = 2, n >= 3): the limit of each branch.
        return sp.Piecewise(*((_sided(value, variable, point, side, node), case) for value, case in body.args))
    try:
        value = sp.limit(body, variable, point, side)
    except (NotImplementedError, ValueError, TypeError, AttributeError, RecursionError) as error:
        raise ClaimError(f"{node}: SymPy cannot take this limit ({type(error).__name__})") from None
    if value.has(sp.Limit, sp.AccumBounds, sp.nan) or value.is_extended_real is False:
        raise ClaimError(f"{node}: SymPy cannot take this limit")
    return value


def _near(body: sp.Expr, variable: sp.Symbol, point: sp.Expr, side: str, node: Lim) -> sp.Expr:
    """Each case (Piecewise) of ``variable`` replaced by the branch that holds near the point."""

    def branch(piecewise: sp.Piecewise) -> sp.Expr:
        for value, condition in piecewise.args:
            holds = _holds_near(condition, variable, point, side)
            if holds is None:
                raise ClaimError(f"{node}: a regime switches at the limit point; take the limit of each regime")
            if holds:
                return value
        return sp.nan

    return body.replace(lambda e: isinstance(e, sp.Piecewise) and _cases_of(e).has(variable), branch)


def _cases_of(piecewise: sp.Piecewise) -> sp.Basic:
    return sp.Tuple(*(condition for _, condition in piecewise.args))


def _holds_near(condition: sp.Basic, variable: sp.Symbol, point: sp.Expr, side: str) -> bool | None:
    if condition in (sp.true, sp.false):
        return bool(condition)
    if isinstance(condition, (sp.And, sp.Or)):
        parts = [_holds_near(c, variable, point, side) for c in condition.args]
        if isinstance(condition, sp.And):
            return False if False in parts else (None if None in parts else True)
        return True if True in parts else (None if None in parts else False)
    if not isinstance(condition, sp.core.relational.Relational):
        return None
    gap = sp.limit(condition.lhs - condition.rhs, variable, point, side)
    if isinstance(condition, (sp.Eq, sp.Ne)):
        # Near the point the two sides are apart, or the case is undecided here.
        return isinstance(condition, sp.Ne) if gap.is_zero is False and gap.is_extended_real else None
    if gap.is_extended_positive:
        return isinstance(condition, (sp.StrictGreaterThan, sp.GreaterThan))
    if gap.is_extended_negative:
        return isinstance(condition, (sp.StrictLessThan, sp.LessThan))
    return None
