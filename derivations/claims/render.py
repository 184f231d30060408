"""Verdicts as plain text, a markdown table, or JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from derivations.claims.checker import Verdict


def escaped(text: object) -> str:
    """Text with every control or non-ASCII character written as an escape, so that an id
    or a claim cannot forge a line of output (ANSI codes, newlines)."""
    return "".join(
        c if c.isascii() and (c.isprintable() or c == " ") else c.encode("unicode_escape").decode("ascii")
        for c in str(text)
    )


def verdict_text(v: Verdict) -> str:
    """One verdict as a block of text."""
    expect = "" if v.claim.expect is None else f" (expected {v.claim.expect}{'' if v.met else ': NOT MET'})"
    head = f"[{escaped(v.claim.id)}] {v.verdict}{expect}: {escaped(v.claim.text)}  [{escaped(v.claim.layer)}]"
    return f"{head}\n  {escaped(v.detail)}\n"


@dataclass(frozen=True)
class Stream:
    """A format written verdict by verdict: a file of 10,000 claims prints each as it is decided."""

    head: str
    row: Callable[[Verdict], str]
    between: str
    tail: str

    def whole(self, verdicts: Iterable[Verdict]) -> str:
        return self.head + self.between.join(self.row(v) for v in verdicts) + self.tail


def _markdown_row(v: Verdict) -> str:
    cells = (v.claim.id, f"`{v.claim.text}`", v.claim.layer, f"**{v.verdict}**", v.detail)
    return "| " + " | ".join(map(_cell, cells)) + " |\n"


def _json_row(v: Verdict) -> str:
    return "  " + json.dumps(v.row(), ensure_ascii=True)


def _cell(text: object) -> str:
    return escaped(text).replace("|", "\\|")


STREAMS: dict[str, Stream] = {
    "text": Stream("", verdict_text, "\n", ""),
    "markdown": Stream("| id | claim | layer | verdict | detail |\n|---|---|---|---|---|\n", _markdown_row, "", ""),
    "json": Stream("[\n", _json_row, ",\n", "\n]\n"),
}


def verdicts_text(verdicts: Iterable[Verdict]) -> str:
    return STREAMS["text"].whole(verdicts)


def verdicts_markdown(verdicts: Iterable[Verdict]) -> str:
    return STREAMS["markdown"].whole(verdicts)


def verdicts_json(verdicts: Iterable[Verdict]) -> str:
    return STREAMS["json"].whole(verdicts)


VERDICT_FORMATS: dict[str, Callable[[Iterable[Verdict]], str]] = {
    "text": verdicts_text,
    "markdown": verdicts_markdown,
    "json": verdicts_json,
}
