"""The one record type for a derived result: `Formula`."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

import sympy as sp

from derivations._printer import ReaderPrinter
from derivations.notation import DEFAULT, Notation


@functools.lru_cache(maxsize=1024)
def _latex(expr: sp.Basic, notation: Notation) -> str:
    return ReaderPrinter(notation).doprint(expr)


# Characters of LaTeX source a displayed line may hold before it is broken between terms.
LINE = 150


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
    output equal to the layer's stated form (empty where nothing was stated), or
    where ``stated`` is False, what it checked instead.
    ``shown`` is the same relation with the stated form in place of the
    derived one, where that proof holds: what is printed (None: ``expr``).
    """

    name: str
    statement: str
    expr: sp.Basic
    assumptions: tuple[str, ...]
    established: Established
    detail: str
    proof: str
    layer: str
    shown: sp.Basic | None = None
    # Whether the layer states a form for this result: ``proof`` is then of that form, else of
    # another fact the derivation checked (J v = J^T v for a symmetric J).
    stated: bool = True

    @property
    def printed(self) -> sp.Basic:
        """The relation as printed: the stated form where it was proved, else the derived one."""
        return self.expr if self.shown is None else self.shown

    def latex(self, notation: Notation = DEFAULT) -> str:
        """The printed relation in LaTeX, in the reader's term order and ``notation``."""
        return _latex(self.printed, notation)

    def latex_lines(self, notation: Notation = DEFAULT, width: int = LINE) -> list[str]:
        """The printed equation broken between the terms of its right-hand side into lines of
        at most about ``width`` characters of LaTeX, for a ``multline`` block; one line if it fits."""
        whole = self.latex(notation)
        printed = self.printed
        if len(whole) <= width or not isinstance(printed, sp.Equality) or not _is_sum(printed.rhs):
            return [whole]
        printer = ReaderPrinter(notation)
        lines = [f"{_latex(printed.lhs, notation)} = "]
        for index, term in enumerate(printer._as_ordered_terms(printed.rhs)):
            negative = term.could_extract_minus_sign()
            tex = printer._print(-term if negative else term)
            piece = ("- " if negative else ("+ " if index else "")) + tex
            if index and len(lines[-1]) + len(piece) > width:
                lines.append(piece)
            else:
                lines[-1] += (" " if index else "") + piece
        return lines

    def value_latex(self, notation: Notation = DEFAULT) -> str:
        """LaTeX of the printed right-hand side alone, for an equation or inequality."""
        if isinstance(self.printed, sp.core.relational.Relational):
            return _latex(self.printed.rhs, notation)
        return ""

    @property
    def qualified(self) -> str:
        """The stable name ``<layer>.<name>``, unique across layers."""
        return f"{self.layer}.{self.name}"

    def row(self, notation: Notation = DEFAULT) -> dict[str, object]:
        """Plain strings for rendering and JSON, the LaTeX in ``notation``."""
        return {
            "name": self.qualified,
            "statement": self.statement,
            "latex": self.latex(notation),
            "lines": self.latex_lines(notation),
            "value": self.value_latex(notation),
            "established": self.established.value,
            "detail": self.detail,
            "proof": self.proof,
            "stated": self.stated,
            "assumptions": list(self.assumptions),
            "layer": self.layer,
        }

    @property
    def how(self) -> str:
        return f"{self.established.value} ({self.detail})"

    def _repr_latex_(self) -> str:
        return f"$\\displaystyle {self.latex()}$"


def _is_sum(expr: sp.Basic) -> bool:
    """A scalar sum (a matrix sum is printed whole)."""
    return isinstance(expr, sp.Add) and not isinstance(expr, sp.MatrixExpr)
