"""Render formulas as plain text, GitHub markdown, JSON, LaTeX, or the conventions table."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from derivations._width import width

Row = dict[str, object]


def proved_text(row: Row) -> str:
    """What the row's proof showed: equality with the form the layer states, or (where it states
    none) the check it made instead, such as J v = J^T v for a symmetric J."""
    if not row["proof"]:
        return "no stated form to compare"
    if row.get("stated", True):
        return f"proved equal to the stated form: {row['proof']}"
    return f"no stated form; proved instead: {row['proof']}"


_proved = proved_text


def _how(row: Row) -> str:
    return f"{row['established']} ({row['detail']})"


def text(rows: Iterable[Row]) -> str:
    blocks = [
        f"{r['name']}\n  statement: {r['statement']}\n  established: {_how(r)}\n  {_proved(r)}\n  latex: {r['latex']}"
        for r in rows
    ]
    return "\n\n".join(blocks) + "\n"


def markdown(rows: Iterable[Row]) -> str:
    # GitHub renders a fenced ```math block with its own display-math engine.
    blocks = [
        f"### `{r['name']}`\n\n{r['statement']} *Established {_how(r)}; {_proved(r)}.*\n\n```math\n{r['latex']}\n```"
        for r in rows
    ]
    return "\n\n".join(blocks) + "\n"


def equation(row: Row) -> str:
    r"""One ``equation`` with ``\label{eq:<layer>.<name>}``, what it states and how it was proved as comments above."""
    lines = list(row.get("lines") or [row["latex"]])  # type: ignore[call-overload]
    # A long right-hand side is broken between its terms (amsmath's multline).
    environment = "multline" if len(lines) > 1 else "equation"
    body = " \\\\\n  ".join(lines)
    return (
        f"% {row['name']}: {row['statement']}\n"
        f"% Established {_how(row)}; {_proved(row)}.\n"
        f"\\begin{{{environment}}}\n  \\label{{eq:{row['name']}}}\n  {body}\n\\end{{{environment}}}"
    )


def latex(rows: Iterable[Row]) -> str:
    """Equations to paste into a document that loads amsmath and amssymb."""
    return "\n\n".join(equation(r) for r in rows) + "\n"


# The packages `latex` output needs: SymPy prints \mathbb (amssymb), cases,
# aligned and \operatorname (amsmath).
PACKAGES = ("amsmath", "amssymb")


# The widest line the article takes, in typeset letters (`derivations._width`), which overcount
# a broken block's indents: every formula under a 44-letter subscript on n, or 10-letter ones on
# every symbol, compiles with no box over the margin; 15-letter ones pass it by 78 pt.
ARTICLE = 72


def too_wide(rows: Iterable[dict[str, object]]) -> str:
    """Why the rows' lines cannot be set in the article of `standalone` ("" where they can): the
    widest line, by its formula's name, where it is wider than `ARTICLE`."""
    widest, name = max(
        ((width(str(line)), str(row["name"])) for row in rows for line in row["lines"]),  # type: ignore[attr-defined]
        default=(0.0, ""),
    )
    if widest <= ARTICLE:
        return ""
    return (
        f"notation: with these names {name} is {widest:.0f} letters wide, and a line of the article holds "
        f"{ARTICLE}; give shorter subscripts"
    )


def standalone(body: str, title: str = "Derived formulas") -> str:
    """``body`` (LaTeX) as a complete article."""
    preamble = "".join(f"\\usepackage{{{package}}}\n" for package in PACKAGES)
    return (
        f"\\documentclass{{article}}\n{preamble}\\title{{{title}}}\n\\date{{}}\n"
        f"\\begin{{document}}\n\\maketitle\n\n{body}\n\\end{{document}}\n"
    )


def as_json(rows: Iterable[Row]) -> str:
    return json.dumps(list(rows), indent=2, ensure_ascii=False) + "\n"


def conventions(rows: Iterable[Row]) -> str:
    """A markdown table: per layer, each quantity the registry gives a column."""
    from derivations import quantities
    from derivations.catalog import CORE, LAYERS

    values = {str(r["name"]): str(r["value"]) for r in rows}
    headings = list(quantities.columns(LAYERS[CORE]))
    lines = [
        "| library and function | layer | " + " | ".join(headings) + " |",
        "|---|---|" + "---|" * len(headings),
    ]
    for key, layer in LAYERS.items():
        names = quantities.columns(layer)
        found = [
            [
                cell.replace("{}", values[f"{key}.{name}"])
                for name, cell in names.get(h, [])
                if f"{key}.{name}" in values
            ]
            for h in headings
        ]
        cells = [options[0] if options else None for options in found]
        if any(cell is not None for cell in cells):
            shown = [f"${cell}$" if cell is not None else "—" for cell in cells]
            used = "; ".join(layer.used_by) or "—"
            lines.append(f"| {used} | `{key}` | " + " | ".join(shown) + " |")
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Callable[[Iterable[Row]], str]] = {
    "text": text,
    "markdown": markdown,
    "json": as_json,
    "latex": latex,
    "conventions": conventions,
}
