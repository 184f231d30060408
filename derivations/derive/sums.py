r"""Sums over a symbolic number of entries, reduced to power sums.

A layer is defined through means over its n entries.  After differentiation
those means become sums such as :math:`\sum_j \delta_{jk} x_j` or
:math:`\sum_j (x_j - \mu)(\delta_{jk} - 1/n)`.  `reduce_sums` evaluates every
such sum by linearity, by the sifting property of the Kronecker delta, and by
naming what is left as a `PowerSum` :math:`\sum_p m(p)` of a monomial ``m``.
`power_sum_values` then solves the layer's own definitions for those power
sums, so the result is written in the layer's statistics again.  A power sum
that involves a vector besides x (the upstream gradient g, a direction v) is
not fixed by the statistics; `as_means` names it as the `Mean` of its
monomial, :math:`\overline{g\,x}` say, which the backward pass computes.

A partial mean (over the first k entries, say) is a mean of the summand times
an `Indicator` m, a 0/1 vector over the entries: each entry is its own
square, so `reduce_sums` writes :math:`m_p^2` as :math:`m_p`, and
:math:`\sum_p m_p` is a power sum like any other, which the layer fixes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import sympy as sp

from derivations.core.proof import DerivationError
from derivations.symbols import n, x

# The canonical summation index inside a PowerSum, so that the same sum met
# under different dummy indices is one and the same object.
p = sp.Symbol("p", integer=True, nonnegative=True)


class Indicator(sp.IndexedBase):
    r"""A 0/1 vector over the entries (the entries a partial mean runs over): :math:`m_p^2 = m_p`."""


def _idempotent(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every positive integer power of an `Indicator` entry written as the entry."""
    return expr.replace(
        lambda e: (
            e.is_Pow
            and isinstance(e.base, sp.Indexed)
            and isinstance(e.base.base, Indicator)
            and e.exp.is_Integer
            and e.exp > 0
        ),
        lambda e: e.base,
    )


class PowerSum(sp.Function):
    r"""The unevaluated sum :math:`\sum_{p=0}^{n-1} m(p)` of a monomial ``m``."""

    nargs = 1

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        return r"\sum_{p} " + printer._print(self.args[0])


class Mean(sp.Function):
    r"""The mean :math:`\frac{1}{n}\sum_{p} m(p)` of a monomial ``m`` in entries at ``p``.

    A factor that does not depend on p is taken out, so that a mean is always
    of the varying part alone (scaling x by m turns ``Mean(g x)`` into ``m Mean(g x)``).
    """

    nargs = 1

    @classmethod
    def eval(cls, monomial: sp.Expr) -> sp.Expr | None:
        expanded = sp.expand(monomial)
        if expanded.is_Add:  # the mean is linear
            return sp.Add(*(cls(term) for term in expanded.args))
        constant, varying = expanded.as_independent(p, as_Add=False)
        if constant != 1:
            return constant * cls(varying)
        return None

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        plain = self.args[0].replace(
            lambda e: isinstance(e, sp.Indexed) and e.indices == (p,), lambda e: sp.Symbol(str(e.base))
        )
        return r"\overline{" + printer._print(plain) + "}"


def over_entries(summand: sp.Expr, index: sp.Symbol) -> sp.Sum:
    """The sum of ``summand`` over ``index`` = 0 .. n-1."""
    return sp.Sum(summand, (index, 0, n - 1))


def _is_delta_of(factor: sp.Expr, index: sp.Symbol) -> bool:
    base = factor.base if factor.is_Pow else factor
    return isinstance(base, sp.KroneckerDelta) and index in base.free_symbols


def _reduce_one(total: sp.Sum) -> sp.Expr:
    ((index, low, high),) = total.limits
    if low != 0 or high != n - 1:
        raise DerivationError(f"sum over {index} must run over 0 .. n-1, not {low} .. {high}")
    reduced = []
    for term in sp.Add.make_args(sp.expand(total.function)):
        constant, varying = term.as_independent(index, as_Add=False)
        if varying == 1:
            reduced.append(constant * n)
            continue
        factors = sp.Mul.make_args(varying)
        deltas = [f for f in factors if _is_delta_of(f, index)]
        if deltas:
            # Sifting: sum_j delta_{jk} f(j) = f(k), since k also runs over 0 .. n-1.
            # A delta squared is the delta itself.
            first = deltas[0].base if deltas[0].is_Pow else deltas[0]
            other = first.args[1] if first.args[0] == index else first.args[0]
            rest = sp.Mul(*(f for f in factors if f is not deltas[0]))
            reduced.append(constant * rest.xreplace({index: other}))
            continue
        reduced.append(constant * PowerSum(varying.xreplace({index: p})))
    return sp.Add(*reduced)


def reduce_sums(expr: sp.Expr) -> sp.Expr:
    """Replace every `Sum` in ``expr``, innermost first, by power sums."""
    # ``replace`` works bottom-up, so nested means are reduced before the sum
    # that contains them, and the outer summand is then a polynomial.  An
    # indicator's powers are the indicator itself, inside a sum and out.
    return _idempotent(expr.replace(lambda e: isinstance(e, sp.Sum), lambda e: _reduce_piecewise(_idempotent(e))))


def _reduce_piecewise(total: sp.Sum) -> sp.Expr:
    """A sum whose summand is by cases (a clamp's regimes) is the sum of each case's summand, under
    its condition, where no condition depends on the index summed over; otherwise `_reduce_one`."""
    if not total.function.has(sp.Piecewise):
        return _reduce_one(total)
    folded = sp.piecewise_fold(total.function)
    if not isinstance(folded, sp.Piecewise):
        return _reduce_one(sp.Sum(folded, *total.limits))
    ((index, _, _),) = total.limits
    if any(index in condition.free_symbols for _, condition in folded.args):
        raise DerivationError(f"a sum over {index} of {folded}, whose cases depend on {index}, is not reduced")
    return sp.Piecewise(*((reduce_sums(sp.Sum(value, *total.limits)), where) for value, where in folded.args))


def power_sum_values(equations: Iterable[sp.Eq]) -> dict[sp.Expr, sp.Expr]:
    """Solve equations that are linear in power sums for those power sums."""
    equations = list(equations)
    unknowns = sorted(set().union(*(e.atoms(PowerSum) for e in equations)), key=sp.default_sort_key)
    if not unknowns:
        return {}  # a layer without statistics fixes no power sum
    # The definitions are linear in the power sums (the statistics enter as
    # known symbols), so a unique solution exists exactly when they fix them.
    solutions = sp.linsolve(equations, unknowns)
    if len(solutions) != 1:
        raise DerivationError(f"power sums {unknowns} are not determined by {equations}")
    (values,) = solutions
    if any(v.free_symbols & set(unknowns) for v in values if hasattr(v, "free_symbols")):
        raise DerivationError(f"power sums {unknowns} are not determined by {equations}")
    return dict(zip(unknowns, values, strict=True))


class Unfixed(DerivationError):
    """Power sums that a layer's statistics do not fix, named in ``power_sums``."""

    def __init__(self, power_sums: Iterable[sp.Expr]) -> None:
        self.power_sums = tuple(sorted(power_sums, key=sp.default_sort_key))
        super().__init__(f"power sums {sorted(map(str, self.power_sums))} are not fixed by the layer's statistics")


def in_statistics(expr: sp.Expr, values: dict[sp.Expr, sp.Expr]) -> sp.Expr:
    """Rewrite the power sums of a reduced expression by their values."""
    rewritten = expr.xreplace(values)
    left = rewritten.atoms(PowerSum)
    if not left:
        return rewritten
    # A power sum that the equations leave free, where ``expr`` does not depend on it (a zero-sum
    # constraint fixes a combination of sums, not each): any value of it gives the same, so 0.
    free = {power: sp.Dummy() for power in left}
    plain = rewritten.xreplace(free)
    if any(sp.cancel(sp.expand(sp.diff(plain, dummy))) != 0 for dummy in free.values()):
        raise Unfixed(left)
    return plain.xreplace(dict.fromkeys(free.values(), sp.Integer(0)))


def unfixed(equations: Iterable[sp.Eq], wanted: Iterable[sp.Expr] = ()) -> tuple[sp.Expr, ...]:
    """The power sums, among ``wanted`` and those the ``equations`` hold, that the equations (linear
    in power sums, as a layer's `relations`) do not determine: each one whose value, solved for,
    still holds a power sum, in the order of `sp.default_sort_key`.

    >>> from derivations.symbols import mu
    >>> one, two, three = (PowerSum(x[p] ** d) for d in (1, 2, 3))
    >>> unfixed([sp.Eq(n * mu, one)], [two, three])
    (PowerSum(x[p]**2), PowerSum(x[p]**3))
    >>> unfixed([sp.Eq(n * mu, one), sp.Eq(n * mu**2, two)], [two])
    ()
    """
    equations = list(equations)
    unknowns = sorted(set(wanted).union(*(e.atoms(PowerSum) for e in equations)), key=sp.default_sort_key)
    if not unknowns:
        return ()
    solutions = sp.linsolve(equations, unknowns) if equations else sp.FiniteSet(tuple(unknowns))
    if len(solutions) != 1:
        # Means of x always exist together: no solution means a relation among the statistics
        # themselves (h = mean(2 x) beside mu = mean(x)), named by the fewest definitions that hold it.
        tied = next(
            (
                group
                for size in range(2, len(equations))
                for group in itertools.combinations(equations, size)
                if len(sp.linsolve(list(group), unknowns)) != 1
            ),
            equations,
        )
        names = ", ".join(str(e.lhs / n) for e in tied)
        raise DerivationError(
            f"{names} are not independent: one is a function of the others; define it as one "
            '(as sigma = "sqrt(r)"), not as a mean'
        )
    (values,) = solutions
    return tuple(unknown for unknown, value in zip(unknowns, values, strict=True) if value.atoms(PowerSum))


def as_means(expr: sp.Expr) -> sp.Expr:
    """Name each power sum that involves a vector besides x as n times the `Mean` of its monomial."""

    def involves(e: sp.Basic) -> bool:
        return isinstance(e, PowerSum) and any(a.base != x for a in e.atoms(sp.Indexed))

    return expr.replace(involves, lambda e: n * Mean(e.args[0]))


def mean(summand: sp.Expr, index: sp.Symbol) -> sp.Expr:
    """The mean over ``index`` of ``summand``, reduced, in `Mean` s of the vectors besides x."""
    return as_means(reduce_sums(over_entries(summand, index)) / n)


def explicit_means(expr: sp.Expr, size: int) -> sp.Expr:
    """Each `Mean` written out over ``size`` explicit entries 0 .. size-1."""
    return expr.replace(
        lambda e: isinstance(e, Mean), lambda e: sp.Add(*(e.args[0].xreplace({p: m}) for m in range(size))) / size
    )


def opaque(expr: sp.Expr, *varying: sp.Expr) -> tuple[sp.Expr, dict[sp.Dummy, sp.Expr]]:
    """``expr`` with each largest part free of every one of ``varying`` named by a `sp.Dummy`, and
    those names: how ``expr`` depends on ``varying`` (x[i], say), for work that expands it without
    expanding what multiplies it.

    >>> from derivations.symbols import i
    >>> shape, parts = opaque(x[i] * sp.exp(-n) / (n + 1) ** 9, x[i])
    >>> shape.xreplace(parts) == x[i] * sp.exp(-n) / (n + 1) ** 9, len(parts)
    (True, 1)
    """
    names: dict[sp.Expr, sp.Dummy] = {}

    def walk(e: sp.Expr) -> sp.Expr:
        if not e.has(*varying):
            return names.setdefault(e, sp.Dummy()) if e.free_symbols or e.has(sp.Indexed) else e
        if not e.args or e.is_Atom or isinstance(e, sp.Indexed):
            return e
        if e.is_Mul or e.is_Add:  # the factors (terms) free of ``varying`` named together
            fixed = [a for a in e.args if not a.has(*varying)]
            rest = [walk(a) for a in e.args if a.has(*varying)]
            return e.func(*([walk(e.func(*fixed))] if fixed else []), *rest)
        return e.func(*map(walk, e.args))

    shape = walk(expr)
    return shape, {dummy: part for part, dummy in names.items()}
