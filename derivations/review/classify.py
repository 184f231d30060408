"""Each relation of a paper classified, with a reason: checked, a definition, outside the vocabulary, not read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from derivations.claims import ClaimError
from derivations.review import notation as paper
from derivations.review.checking import decide
from derivations.review.document import Document, Found
from derivations.review.identify import Identification, compare, describe

CLASSES = ("checked", "definition", "not in the vocabulary", "not read")


@dataclass
class Entry:
    """One link of one relation, as the report gives it."""

    found: Found
    link: str  # the LaTeX of this link of the chain
    kind: str = "not read"
    reason: str = ""
    claim: str = ""
    layer: str = ""
    verdict: str = ""
    quantifier: str = ""
    counterexample: Any = None
    identification: Identification | None = field(default=None, repr=False)

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.found.file,
            "line": self.found.line,
            "label": self.found.label,
            "environment": self.found.environment,
            "latex": self.link,
            "class": self.kind,
            "reason": self.reason,
            "read_as": self.claim,
            "layer": self.layer,
            "verdict": self.verdict,
            "quantifier": self.quantifier,
        }
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        if self.identification is not None:
            out["identification"] = self.identification.row()
        return out


@dataclass
class Context:
    """What the paper has said so far: its notation, and the layer each of its names means."""

    notation: paper.Notation
    layer: str | None  # --layer: every relation is about it
    timeout: float
    current: str = "layernorm"
    settled: bool = False  # whether a definition of the output (y = ...) or any first one has set `current`


def links(document: Document) -> Iterator[tuple[Found, paper.Link | None, str]]:
    """Each link of each relation; a row that starts with its relation continues the previous row's chain."""
    previous = ""
    for found in document.relations:
        chain = paper.split(found.latex)
        if not chain:
            yield found, None, found.latex
            continue
        if not chain[0].lhs and previous:
            chain[0] = paper.Link(previous, chain[0].relation, chain[0].rhs)
        previous = chain[-1].rhs
        for link in chain:
            yield found, link, f"{link.lhs} {link.relation} {link.rhs}"


def classify(found: Found, link: paper.Link | None, text: str, context: Context) -> Entry:
    """The entry for one link of a relation."""
    entry = Entry(found, text)
    if link is None:
        entry.reason = "no relation the checker reads (==, <=, <, >=, >)"
        return entry
    unknown = paper.foreign(paper.canonical(f"{link.lhs} {link.rhs}", context.notation))
    if unknown:
        entry.kind, entry.reason = "not in the vocabulary", "names " + ", ".join(f"`{u}`" for u in unknown)
        return entry
    try:
        claim = paper.read(link.lhs, link.rhs, link.relation, context.notation)
    except ClaimError as error:
        entry.reason = str(error)
        return entry
    entry.claim = claim
    called = _called(claim)
    lhs, _, rhs = claim.partition(" == ")
    if rhs and lhs == rhs:
        entry.kind, entry.layer, entry.verdict = "definition", "", "notation"
        entry.reason = f"defines the paper's notation: {link.lhs} is `{lhs}`"
        return entry
    defined = _definition(claim, link.relation)
    if defined is not None:
        return _define(entry, defined, called, context)
    entry.layer = context.layer or (called[0] if called else context.current)
    return _check(entry, claim, context)


def _called(claim: str) -> list[str]:
    import re

    from derivations.catalog import LAYERS

    return [name for name in re.findall(r"\b([a-z_0-9]+)\(", claim) if name in LAYERS]


def _definition(claim: str, relation: str) -> str | None:
    """The output a defining relation gives (``y == ...``, ``layernorm(x) == ...``), or None."""
    import re

    lhs, _, rhs = claim.partition(" == ")
    if not rhs or re.search(r"\b(y|J)\b", rhs) or not re.search(r"\bx\b|\bx_i\b", rhs):
        return None
    if lhs in ("y", "y_i") or re.fullmatch(r"[a-z_0-9]+\(x\)", lhs) or (relation in paper.DEFINING and lhs == "y"):
        return rhs
    return None


def _define(entry: Entry, expression: str, called: list[str], context: Context) -> Entry:
    entry.kind = "definition"
    found = compare(expression, entry.link, context.timeout)
    entry.identification = found
    entry.reason = describe(found)
    entry.layer = found.key or ""
    entry.verdict = f"equals {found.key}" if found.key else "matches no layer"
    if found.key is not None:
        if not context.settled or not called:
            context.current, context.settled = found.key, True
        for name, key in list(context.notation.layers.items()):
            if called and key == called[0]:
                context.notation.layers[name] = found.key
    return entry


def _check(entry: Entry, claim: str, context: Context) -> Entry:
    from derivations.claims import vocabulary

    try:
        fitted = paper.fit(claim, entry.layer, set(vocabulary(entry.layer).names()))
    except ClaimError as error:
        entry.reason = str(error)
        return entry
    entry.claim = fitted
    outcome = decide(fitted, entry.layer, context.timeout)
    if outcome.verdict == "error" and "unknown name" in outcome.detail:
        entry.kind, entry.reason = "not in the vocabulary", outcome.detail.split("; known names")[0]
        return entry
    entry.kind = "checked"
    entry.verdict, entry.reason, entry.quantifier = outcome.verdict, outcome.detail, outcome.quantifier
    entry.counterexample = outcome.counterexample
    return entry


def review(document: Document, context: Context, progress: Callable[[int], Any] | None = None) -> list[Entry]:
    """Every link of every relation of ``document``, classified in source order."""
    entries = []
    for found, link, text in links(document):
        entries.append(classify(found, link, text, context))
        if progress is not None:
            progress(1)
    return entries


__all__ = ["CLASSES", "Context", "Entry", "classify", "decide", "review"]
