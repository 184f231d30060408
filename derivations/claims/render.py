"""Verdicts as plain text, a markdown table, or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from derivations.claims.checker import Verdict


def verdicts_text(verdicts: Iterable[Verdict]) -> str:
    blocks = []
    for v in verdicts:
        expect = "" if v.claim.expect is None else f" (expected {v.claim.expect}{'' if v.met else ': NOT MET'})"
        blocks.append(f"[{v.claim.id}] {v.verdict}{expect}: {v.claim.text}  [{v.claim.layer}]\n  {v.detail}")
    return "\n\n".join(blocks) + "\n"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def verdicts_markdown(verdicts: Iterable[Verdict]) -> str:
    lines = ["| id | claim | layer | verdict | detail |", "|---|---|---|---|---|"]
    for v in verdicts:
        cells = (v.claim.id, f"`{v.claim.text}`", v.claim.layer, f"**{v.verdict}**", v.detail)
        lines.append("| " + " | ".join(map(_cell, cells)) + " |")
    return "\n".join(lines) + "\n"


def verdicts_json(verdicts: Iterable[Verdict]) -> str:
    return json.dumps([v.row() for v in verdicts], indent=2, ensure_ascii=False) + "\n"


VERDICT_FORMATS: dict[str, Callable[[Iterable[Verdict]], str]] = {
    "text": verdicts_text,
    "markdown": verdicts_markdown,
    "json": verdicts_json,
}
