"""Render formulas as plain text, GitHub markdown, or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

Row = dict[str, object]


def _proved(row: Row) -> str:
    return f"proved equal to the stated form: {row['proof']}" if row["proof"] else "no stated form to compare"


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


def as_json(rows: Iterable[Row]) -> str:
    return json.dumps(list(rows), indent=2, ensure_ascii=False) + "\n"


def conventions(rows: Iterable[Row]) -> str:
    """A markdown table: each layer's slope at zero and its bound on the Jacobian's norm."""
    from derivations.catalog import LAYERS

    values = {str(r["name"]): str(r["value"]) for r in rows}
    lines = [
        "| layer | convention | slope at 0 on (−t, 0, t) | bound on ‖J‖₂ |",
        "|---|---|---|---|",
    ]
    for key, layer in LAYERS.items():
        if f"{key}.slope_at_zero" in values:
            slope, bound = values[f"{key}.slope_at_zero"], values[f"{key}.spectral_bound"]
            lines.append(f"| `{key}` | {layer.title} | ${slope}$ | ${bound}$ |")
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Callable[[Iterable[Row]], str]] = {
    "text": text,
    "markdown": markdown,
    "json": as_json,
    "conventions": conventions,
}


def verdicts_text(verdicts: Iterable[Any]) -> str:
    blocks = []
    for v in verdicts:
        expect = "" if v.claim.expect is None else f" (expected {v.claim.expect}{'' if v.met else ': NOT MET'})"
        blocks.append(f"[{v.claim.id}] {v.verdict}{expect}: {v.claim.text}  [{v.claim.layer}]\n  {v.detail}")
    return "\n\n".join(blocks) + "\n"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdicts_markdown(verdicts: Iterable[Any]) -> str:
    lines = ["| id | claim | layer | verdict | detail |", "|---|---|---|---|---|"]
    for v in verdicts:
        cells = (v.claim.id, f"`{v.claim.text}`", v.claim.layer, f"**{v.verdict}**", v.detail)
        lines.append("| " + " | ".join(map(_cell, cells)) + " |")
    return "\n".join(lines) + "\n"


def verdicts_json(verdicts: Iterable[Any]) -> str:
    return json.dumps([v.row() for v in verdicts], indent=2, ensure_ascii=False) + "\n"


VERDICT_FORMATS: dict[str, Callable[[Iterable[Any]], str]] = {
    "text": verdicts_text,
    "markdown": verdicts_markdown,
    "json": verdicts_json,
}
