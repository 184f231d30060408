r"""A layer whose parameters are stored as functions of others: Gemma's gain 1 + w.

Gemma's RMSNorm computes :math:`x / \sqrt{\overline{x^2} + \varepsilon} \odot (1 + w)`:
exactly `rmsnorm_affine` at :math:`\gamma = 1 + w`, :math:`\beta = 0`.  The
wrapper therefore derives nothing of its own: its formulas are the base's
(`Layer.derived_as`) with that substitution made in every derived and stated
expression, and its numeric functions evaluate the base's at the gain the
substitution gives (lambdified, not typed).

>>> from derivations import formula
>>> formula("rmsnorm_gemma.slope_at_zero").expr.rhs
(w[2] + 1)/sqrt(epsilon)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import sympy as sp

from derivations.core.formula import Formula
from derivations.core.layer import Layer, Rewrapped, rewrapped
from derivations.symbols import diag_gamma, gamma_max, i


@dataclass(frozen=True, eq=False)
class Reparametrized(Rewrapped):
    """``base`` with each of its parameters written in stored ones: ``values`` maps the base's
    IndexedBase (gamma, beta) to its entry at index i in the stored parameters."""

    values: Mapping[sp.IndexedBase, sp.Expr] = field(kw_only=True)
    stored: tuple[tuple[str, sp.IndexedBase], ...] = field(kw_only=True)
    largest: sp.Symbol = field(kw_only=True)  # max_i |gain_i| in the stored parameters
    diagonal: sp.MatrixSymbol = field(kw_only=True)  # diag(gain) in the stored parameters

    @property
    def parameters(self) -> tuple[tuple[str, sp.IndexedBase], ...]:
        return self.stored

    @property
    def unclaimable(self) -> str | None:
        names = ", ".join(
            f"{base.label} = {value.xreplace({i: sp.Symbol('i')})}" for base, value in self.values.items()
        )
        return f"claims about {self.key} are stated for {self.base.key} with {names}"

    def substitute(self, expr: sp.Basic) -> sp.Basic:
        """``expr`` with the base's parameters written in the stored ones, entry by entry."""

        def entry(e: sp.Indexed) -> sp.Expr:
            return self.values[e.base].xreplace({i: e.indices[0]})

        out = expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base in self.values, entry)
        return out.xreplace({gamma_max: self.largest, diag_gamma: self.diagonal})

    def restate(self, formula: Formula) -> Formula:
        shown = None if formula.shown is None else self.substitute(formula.shown)
        names = ", ".join(f"{base.label} = {value}" for base, value in self.values.items())
        return replace(
            formula,
            layer=self.key,
            expr=self.substitute(formula.expr),
            shown=shown,
            statement=f"{formula.statement} With {names} ({self.title}).",
        )


def reparametrized(
    base: Layer,
    key: str,
    title: str,
    values: Mapping[sp.IndexedBase, sp.Expr],
    stored: tuple[tuple[str, sp.IndexedBase], ...],
    largest: sp.Symbol,
    diagonal: sp.MatrixSymbol,
    used_by: tuple[str, ...] = (),
) -> Reparametrized:
    """The layer ``base`` at ``values`` of its parameters (entries at i in ``stored``)."""
    layer = rewrapped(
        Reparametrized, base, key, title, used_by, values=values, stored=stored, largest=largest, diagonal=diagonal
    )
    # The base's definition at the substituted parameters; it states nothing of its own: what
    # it prints is the base's formulas, proved there, with the substitution made.
    return replace(layer, output=layer.substitute(base.output), stated={})
