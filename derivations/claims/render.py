"""Verdicts as plain text, a markdown table, or JSON; one verdict or claim as a short repr,
Markdown or HTML (what Jupyter shows)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from derivations.core.formula import REPR, html_table, markdown_code, markdown_text, one_line, shortened


# What this module reads of `derivations.claims.checker`'s Claim and Verdict.  The checker imports
# this module to show a verdict, so this one does not import it back, not even for a type checker.
class Claim(Protocol):
    @property
    def text(self) -> str: ...
    @property
    def layer(self) -> str: ...
    @property
    def assumptions(self) -> tuple[str, ...]: ...
    @property
    def expect(self) -> str | None: ...
    @property
    def id(self) -> str: ...


class Verdict(Protocol):
    @property
    def claim(self) -> Claim: ...
    @property
    def verdict(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def counterexample(self) -> dict[str, Any] | None: ...
    @property
    def quantifier(self) -> str: ...
    @property
    def excluded(self) -> tuple[str, ...]: ...
    @property
    def met(self) -> bool: ...
    def row(self) -> dict[str, Any]: ...


def escaped(text: object) -> str:
    """Text with every control or non-ASCII character written as an escape, so that an id
    or a claim cannot forge a line of output (ANSI codes, newlines)."""
    return "".join(
        c if c.isascii() and c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)
    )


def verdict_text(v: Verdict) -> str:
    """One verdict as a block of text."""
    expect = "" if v.claim.expect is None else f" (expected {v.claim.expect}{'' if v.met else ': NOT MET'})"
    claim = shortened(escaped(v.claim.text), ECHOED)
    head = f"[{escaped(v.claim.id)}] {v.verdict}{expect}: {claim}  [{escaped(v.claim.layer)}]"
    return f"{head}\n  {escaped(v.detail)}\n"


# The longest claim echoed whole in a verdict's text: the claim language's own limit (a longer
# claim is an error verdict, which need not repeat all of it).
ECHOED = 2000


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


# --- one verdict or claim, for Python's repr and Jupyter -----------------------------------------


def claim_repr(claim: Claim) -> str:
    """One line: the claim, its layer, and its assumptions and id where it has them."""
    assumptions = f" assuming {' and '.join(claim.assumptions)}" if claim.assumptions else ""
    named = "" if claim.id == "claim" else f" ({claim.id})"
    body = shortened(one_line(f"{claim.text} [{claim.layer}]{assumptions}{named}"), REPR)
    return f"<Claim {body}>"


def verdict_repr(v: Verdict) -> str:
    """One line: ``<Verdict refuted: norm(y) <= 1 [layernorm]>``."""
    head = f"<Verdict {one_line(v.verdict)}"
    return f"{head}: {shortened(one_line(f'{v.claim.text} [{v.claim.layer}]'), REPR - len(head))}>"


def _expected(v: Verdict) -> str:
    if v.claim.expect is None:
        return ""
    return f" (expected {v.claim.expect}{'' if v.met else ': NOT MET'})"


def _facts(v: Verdict) -> list[tuple[str, str]]:
    """What the verdict quantified over, as (label, plain text) pairs: those it has."""
    facts = [("quantifier", v.quantifier)] if v.quantifier else []
    if v.claim.assumptions and not v.quantifier:  # a quantifier names them
        facts.append(("assuming", " and ".join(v.claim.assumptions)))
    if v.excluded:
        facts.append(("excluded", ", ".join(v.excluded)))
    return facts


def verdict_markdown(v: Verdict) -> str:
    """The verdict, what it quantified over, the counterexample as a table, and the detail."""
    head = f"**{markdown_text(v.verdict)}**{markdown_text(_expected(v))}: {markdown_code(v.claim.text)}"
    out = [f"{head} on {markdown_code(v.claim.layer)}", ""]
    for label, text in _facts(v):
        out += [f"*{label}*: {markdown_text(text)}", ""]
    if v.counterexample:
        out += ["| counterexample | value |", "|---|---|"]
        out += [f"| {markdown_code(name)} | {markdown_code(value)} |" for name, value in v.counterexample.items()]
        out.append("")
    out.append(markdown_text(v.detail))
    return "\n".join(out) + "\n"


def verdict_html(v: Verdict) -> str:
    """`verdict_markdown` as HTML."""
    head = f"<b>{html.escape(one_line(v.verdict))}</b>{html.escape(one_line(_expected(v)))}"
    claim, layer = html.escape(one_line(v.claim.text)), html.escape(one_line(v.claim.layer))
    out = [f"<p>{head}: <code>{claim}</code> on <code>{layer}</code></p>"]
    out += [f"<p><i>{label}</i>: {html.escape(one_line(text))}</p>" for label, text in _facts(v)]
    if v.counterexample:
        rows = [
            (f"<code>{html.escape(name)}</code>", f"<code>{html.escape(one_line(value))}</code>")
            for name, value in v.counterexample.items()
        ]
        out.append(html_table(rows, ("counterexample", "value")))
    out.append(f"<p>{html.escape(one_line(v.detail))}</p>")
    return "".join(out)
