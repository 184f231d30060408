"""The one record type for a derived result, `Formula`, and a layer's collection of them, `Formulas`.

Both show in Jupyter: a formula as math, a collection as a table of name and
formula.  The helpers at the end write text into Markdown and HTML for these
displays (and for a layer's and a verdict's).
"""

from __future__ import annotations

import enum
import functools
import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import SupportsIndex, overload

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

    def __repr__(self) -> str:
        """One line: the stable name and the printed right-hand side (or the statement)."""
        printed = self.printed
        if isinstance(printed, sp.core.relational.Relational):
            op = "=" if printed.rel_op == "==" else printed.rel_op
            shown = f"{op} {sp.sstr(printed.rhs)}"
        else:
            shown = f"{self.statement}"
        head = f"<Formula {self.qualified}"
        return f"{head}{'' if shown[0] in '=<>!' else ':'} {shortened(one_line(shown), REPR - len(head))}>"

    def _repr_latex_(self) -> str:
        return f"$\\displaystyle {self.latex()}$"


# Characters a one-line repr shows at most (`shortened`).
REPR = 100


class Formulas(tuple[Formula, ...]):
    """Derived formulas, in order: a tuple (equal to the plain tuple of the same formulas), shown as
    a table of name and formula in Jupyter.  A slice is a `Formulas` too.

    >>> from derivations import formulas
    >>> found = formulas("rmsnorm")[2:4]
    >>> found
    <Formulas rmsnorm (2): slope, slope_at_zero>
    >>> found == tuple(formulas("rmsnorm"))[2:4], isinstance(found, tuple)
    (True, True)
    >>> table = found._repr_markdown_().splitlines()
    >>> table[:2]
    ['| name | formula | established |', '|---|---|---|']
    >>> name, formula, established = table[3].strip("| ").split(" | ")
    >>> name, formula.endswith(r"= \\frac{1}{\\sqrt{\\varepsilon}}$"), established
    ('`rmsnorm.slope_at_zero`', True, 'as a limit')
    """

    @overload
    def __getitem__(self, index: SupportsIndex) -> Formula: ...

    @overload
    def __getitem__(self, index: slice) -> Formulas: ...

    def __getitem__(self, index: SupportsIndex | slice) -> Formula | Formulas:
        if isinstance(index, slice):
            return Formulas(super().__getitem__(index))
        return super().__getitem__(index)

    @property
    def layers(self) -> tuple[str, ...]:
        """The keys of the layers the formulas are of, in order of first appearance."""
        return tuple(dict.fromkeys(f.layer for f in self))

    def __repr__(self) -> str:
        """One line: the layers, how many formulas, and their names as far as they fit."""
        head = f"<Formulas {', '.join(self.layers) or 'of no layer'} ({len(self)})"
        names = ", ".join(f.name if len(self.layers) == 1 else f.qualified for f in self)
        return f"{head}{shortened(': ' + names if names else '', REPR - len(head))}>"

    def _repr_markdown_(self) -> str:
        rows = [
            f"| `{f.qualified}` | ${table_latex(f.latex())}$ | {markdown_text(f.established.value)} |" for f in self
        ]
        return "\n".join(["| name | formula | established |", "|---|---|---|", *rows]) + "\n"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(f.qualified)}</code></td>"
            f'<td style="text-align: left">\\({html.escape(f.latex(), quote=False)}\\)</td>'
            f"<td>{html.escape(f.established.value)}</td></tr>"
            for f in self
        )
        head = "<tr><th>name</th><th>formula</th><th>established</th></tr>"
        return f"<table><thead>{head}</thead><tbody>{rows}</tbody></table>"


def _is_sum(expr: sp.Basic) -> bool:
    """A sum, of scalars or of matrices."""
    return isinstance(expr, (sp.Add, sp.MatAdd))


# --- text for the rich displays (Jupyter's Markdown and HTML) ----------------------------------

# What Markdown reads as markup inside a line, outside a code span ($ starts math in Jupyter).
_MARKUP = re.compile(r"([\\`*_\[\]<>|$~])")
_CODE = re.compile(r"(`+)(.+?)\1")


def shortened(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (at least 10), ending in "..." where cut."""
    limit = max(limit, 10)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: object) -> str:
    """``text`` on one line: every control character (a newline, an ANSI escape) written as an escape."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


def markdown_text(text: object) -> str:
    """``text`` as Markdown that shows it literally, on one line (inside a line: not at its start)."""
    return _MARKUP.sub(r"\\\1", one_line(text))


def markdown_code(text: object) -> str:
    """``text`` as a Markdown code span, whatever backticks it holds."""
    shown = one_line(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def markdown_inline(text: object) -> str:
    """``text`` written with `code spans` as Markdown: the spans kept, everything else literal."""
    shown, out, at = one_line(text), [], 0
    for match in _CODE.finditer(shown):
        out += [markdown_text(shown[at : match.start()]), markdown_code(match.group(2))]
        at = match.end()
    return "".join([*out, markdown_text(shown[at:])])


def html_inline(text: object) -> str:
    """``text`` written with `code spans` as HTML: the spans as <code>, everything else escaped."""
    shown, out, at = one_line(text), [], 0
    for match in _CODE.finditer(shown):
        out += [html.escape(shown[at : match.start()]), f"<code>{html.escape(match.group(2))}</code>"]
        at = match.end()
    return "".join([*out, html.escape(shown[at:])])


def table_latex(latex: str) -> str:
    """``latex`` with no ``|`` (as \\vert, \\Vert): a Markdown table cell ends at one, even in math."""
    return latex.replace("\\|", "\\Vert ").replace("|", "\\vert ")


def html_table(rows: Iterable[tuple[str, str]], head: tuple[str, str]) -> str:
    """An HTML table of two columns, its cells given as HTML."""
    body = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in rows)
    return f"<table><thead><tr><th>{head[0]}</th><th>{head[1]}</th></tr></thead><tbody>{body}</tbody></table>"
