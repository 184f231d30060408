"""Render formulas as plain text, GitHub markdown, or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from derivations._formula import Formula


def _proved(f: Formula) -> str:
    return f"proved equal to the stated form: {f.proof}" if f.proof else "no stated form to compare"


def text(formulas: Iterable[Formula]) -> str:
    blocks = [
        f"{f.name}\n  statement: {f.statement}\n  established: {f.how}\n  {_proved(f)}\n  latex: {f.latex()}"
        for f in formulas
    ]
    return "\n\n".join(blocks) + "\n"


def markdown(formulas: Iterable[Formula]) -> str:
    # GitHub renders a fenced ```math block with its own display-math engine.
    blocks = [
        f"### `{f.name}`\n\n{f.statement} *Established {f.how}; {_proved(f)}.*\n\n```math\n{f.latex()}\n```"
        for f in formulas
    ]
    return "\n\n".join(blocks) + "\n"


def as_json(formulas: Iterable[Formula]) -> str:
    rows = [
        {
            "name": f.name,
            "statement": f.statement,
            "latex": f.latex(),
            "established": f.established.value,
            "detail": f.detail,
            "proof": f.proof,
            "assumptions": list(f.assumptions),
        }
        for f in formulas
    ]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


FORMATS: dict[str, Callable[[Iterable[Formula]], str]] = {
    "text": text,
    "markdown": markdown,
    "json": as_json,
}
