"""The one record type for a derived result: `Formula`."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

import sympy as sp

from derivations._printer import ReaderPrinter
from derivations._width import width as typeset_width
from derivations.notation import DEFAULT, Notation


@functools.lru_cache(maxsize=1024)
def _latex(expr: sp.Basic, notation: Notation) -> str:
    return ReaderPrinter(notation).doprint(expr)


# Typeset letters (`derivations._width`) a displayed line may hold before it is broken: about
# what an article's text width takes beside an equation number (a letter of math at 10 pt is
# about 5.3 pt wide, the text 345 pt).
LINE = 60


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

    def latex_lines(self, notation: Notation = DEFAULT, width: float = LINE) -> list[str]:
        """The printed relation on lines of at most about ``width`` typeset letters
        (`derivations._width`), for a ``multline`` block: an equation whose right-hand side is a
        sum broken between its terms, a ``cases`` branch broken inside its block; one line if it fits."""
        whole = self.latex(notation)
        printed = self.printed
        if typeset_width(whole) <= width or not isinstance(printed, sp.Equality):
            return [whole]
        start = f"{_latex(printed.lhs, notation)} = "
        # A block printed whole (a cases block) has the room the left-hand side leaves.
        printer = ReaderPrinter(notation, width - typeset_width(start))
        rhs = printed.rhs
        if _is_sum(rhs):
            return printer.sum_lines(rhs, width, start)
        sums = [factor for factor in rhs.args if _is_sum(factor)] if isinstance(rhs, sp.MatMul) else []
        if len(sums) == 1:  # diag(gamma) (I/s - ...): the sum broken inside \bigl( \bigr)
            position = rhs.args.index(sums[0])
            before = [printer.doprint(factor) for factor in rhs.args[:position]]
            after = [printer.doprint(factor) for factor in rhs.args[position + 1 :]]
            lines = printer.sum_lines(sums[0], width, start + " ".join([*before, "\\bigl("]))
            lines[-1] = " ".join([lines[-1], "\\bigr)", *after])
            return lines
        return [start + printer.doprint(rhs)]

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
    """A sum, of scalars or of matrices."""
    return isinstance(expr, (sp.Add, sp.MatAdd))
