"""The one record type for a derived result: `Formula`."""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

import sympy as sp

from derivations.symbols import LATEX_NAMES


@functools.lru_cache(maxsize=256)
def _latex(expr: sp.Basic) -> str:
    return sp.latex(expr, symbol_names=LATEX_NAMES)


class Established(enum.Enum):
    """How a formula was established."""

    ALL_N = "for all n"
    EXPLICIT_N = "for explicit n"
    LIMIT = "as a limit"


@dataclass(frozen=True)
class Formula:
    r"""One derived result: a SymPy statement plus what it took to get it.

    ``expr`` is an equation, an inequality, or a conjunction of them, always
    the output of a derivation.  ``proof`` says how the derivation showed that
    output equal to the layer's stated form (empty where nothing was stated).
    """

    name: str
    statement: str
    expr: sp.Basic
    assumptions: tuple[str, ...]
    established: Established
    detail: str
    proof: str
    layer: str

    def latex(self) -> str:
        if isinstance(self.expr, (sp.Equality, sp.LessThan)):
            # Printed side by side, so the right-hand side is printed once for both uses.
            relation = "=" if isinstance(self.expr, sp.Equality) else r"\leq"
            text = f"{sp.latex(self.expr.lhs, symbol_names=LATEX_NAMES)} {relation} {self.value_latex()}"
        else:
            text = sp.latex(self.expr, symbol_names=LATEX_NAMES)
        # SymPy prints a matrix sum with a negative term as "+ -".
        return re.sub(r"\+ - ?", "- ", text)

    def value_latex(self) -> str:
        """LaTeX of the right-hand side alone, for an equation or inequality."""
        if isinstance(self.expr, sp.core.relational.Relational):
            return _latex(self.expr.rhs)
        return ""

    @property
    def qualified(self) -> str:
        """The stable name ``<layer>.<name>``, unique across layers."""
        return f"{self.layer}.{self.name}"

    def row(self) -> dict[str, object]:
        """Plain strings for rendering and JSON."""
        return {
            "name": self.qualified,
            "statement": self.statement,
            "latex": self.latex(),
            "value": self.value_latex(),
            "established": self.established.value,
            "detail": self.detail,
            "proof": self.proof,
            "assumptions": list(self.assumptions),
            "layer": self.layer,
        }

    @property
    def how(self) -> str:
        return f"{self.established.value} ({self.detail})"

    def _repr_latex_(self) -> str:
        return f"$\\displaystyle {self.latex()}$"
