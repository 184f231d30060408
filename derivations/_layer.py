"""The one way to define a normalization layer: statistics, output, directions."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

import sympy as sp

from derivations._proof import equal
from derivations._sums import over_entries, power_sum_values, reduce_sums
from derivations._symbols import i, j, k, n, x


@dataclass(frozen=True, eq=False)
class Statistic:
    """A statistic of the input: the mean over entries j of ``summand``.

    ``summand`` is written in ``x[j]`` and in the statistics defined before it.
    """

    symbol: sp.Symbol
    summand: sp.Expr
    meaning: str


@dataclass(frozen=True, eq=False)
class Direction:
    """A candidate eigenvector of the Jacobian, given by its entry at index k.

    ``constraints`` are summands in k whose sums over k vanish; they define a
    subspace (such as the complement of other directions) rather than a vector.
    A direction with ``complement=True`` spans whatever the others leave.
    """

    name: str
    entry: sp.Expr
    meaning: str
    constraints: tuple[sp.Expr, ...] = ()
    complement: bool = False


@dataclass(frozen=True, eq=False)
class Layer:
    """A layer ``y_i = output(x_i, statistics, epsilon)`` and what it states.

    ``stated`` maps a result name to the form the layer claims; every
    derivation must prove its output equal to it.  ``spread`` is the
    statistic that vanishes exactly at the degenerate input (a constant input
    for LayerNorm, zero for RMSNorm).  ``display`` lists the
    substitutions that write a derived expression in the notation of the
    statements (for example x_i -> c_i + mu).
    """

    key: str
    title: str
    statistics: tuple[Statistic, ...]
    output: sp.Expr
    pattern: tuple[sp.Expr, ...]
    coordinate: int
    directions: tuple[Direction, ...]
    display: tuple[tuple[sp.Expr, sp.Expr], ...]
    spread: sp.Symbol
    stated: Mapping[str, sp.Basic] = field(default_factory=dict)

    def entry(self, index: sp.Symbol = i) -> sp.Expr:
        """Output entry ``index`` for symbolic n, every statistic written as a sum."""
        fresh = (sp.Symbol(f"j{m}", integer=True, nonnegative=True) for m in itertools.count())
        means: dict[sp.Symbol, sp.Expr] = {}
        for stat in self.statistics:
            dummy = next(fresh)
            summand = stat.summand.subs(means).subs(j, dummy)
            means[stat.symbol] = over_entries(summand, dummy) / n
        return self.output.subs(means).subs(i, index)

    def explicit_entry(self, size: int, index: int) -> sp.Expr:
        """Output entry ``index`` for ``size`` entries x[0] .. x[size-1]."""
        # Write each sum out term by term, innermost first; a general
        # ``doit`` finds the same result by a far slower route.
        return (
            self.entry(i)
            .subs({n: size, i: index})
            .replace(
                lambda e: isinstance(e, sp.Sum),
                lambda e: sp.Add(*(e.function.subs(e.limits[0][0], m) for m in range(size))),
            )
        )

    def explicit_statistics(self, size: int) -> dict[sp.Symbol, sp.Expr]:
        """Each statistic written out over ``size`` explicit entries."""
        values: dict[sp.Symbol, sp.Expr] = {}
        for stat in self.statistics:
            summand = stat.summand.subs(values)
            values[stat.symbol] = sp.Add(*(summand.subs(j, m) for m in range(size))) / size
        return values

    def relations(self) -> list[sp.Eq]:
        """Each statistic's definition, n * statistic = reduced sum of its summand."""
        return [sp.Eq(n * stat.symbol, reduce_sums(over_entries(stat.summand, j))) for stat in self.statistics]

    def power_sums(self, *constraints: sp.Expr) -> dict[sp.Expr, sp.Expr]:
        """Power sums in terms of the statistics, under extra zero-sum constraints."""
        return _power_sums(self, constraints)

    def to_display(self, expr: sp.Basic) -> sp.Basic:
        """Write ``expr`` in the notation of the layer's statements."""
        for old, new in self.display:
            expr = expr.subs(old, new)
        return expr

    def on_pattern(self) -> sp.Expr:
        """The response: output coordinate ``coordinate`` on input ``pattern``."""
        size = len(self.pattern)
        entry = self.explicit_entry(size, self.coordinate)
        return entry.subs({x[m]: value for m, value in enumerate(self.pattern)})

    def prove_stated(self, name: str, derived: sp.Expr) -> str:
        """Prove ``derived`` equal to the stated form of ``name``, if one is stated."""
        if name not in self.stated:
            return ""
        return equal(derived, self.stated[name], f"{self.key}.{name}")


@cache
def _power_sums(layer: Layer, constraints: tuple[sp.Expr, ...]) -> dict[sp.Expr, sp.Expr]:
    zero_sums = [sp.Eq(reduce_sums(over_entries(c, k)), 0) for c in constraints]
    return power_sum_values(layer.relations() + zero_sums)
