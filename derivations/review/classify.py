"""Each relation of a paper classified, with a reason: checked, a definition, outside the vocabulary, not read."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from derivations.claims import ClaimError
from derivations.review import notation as paper
from derivations.review.checking import Outcome, decide, decide_many
from derivations.review.document import Document, Found
from derivations.review.identify import Identification, compare, describe

CLASSES = ("checked", "defined", "not in the vocabulary", "not read")
# The layers whose gain a paper may call g, and the claim language's name for it (never the upstream gradient g).
GAIN_NAMED_G = {"layernorm_affine": "gamma", "rmsnorm_affine": "gamma", "scalenorm": "g_s"}
Request = tuple[str, str, tuple[str, ...]]  # a claim, its layer and its assumptions, as `decide_many` takes them


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
    conditions: tuple[str, ...] = ()  # the conditions its row states, as assumptions of the check

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
            "conditions": list(self.conditions),
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
    # The paper's layer has no epsilon (its definition matched a layer at epsilon = 0): relations
    # that do not name epsilon are checked at epsilon = 0.
    epsilon_free: bool = False
    # Whether any relation of the paper names epsilon: then a definition without it is not taken
    # to mean epsilon = 0 (the paper may put epsilon inside its sigma, defined elsewhere).
    names_epsilon: bool = True
    # Statistics the paper defines other than the vocabulary does (\sigma with epsilon inside):
    # the LaTeX command -> where; relations naming them after that are not read as the vocabulary's.
    redefined: dict[str, str] = field(default_factory=dict)
    # Where the paper last defined its output in a way not read, or matching no catalog layer: the
    # relations after it that name no layer are about that layer, and are not checked as another's.
    unread: str = ""
    # The letters a definition's gain and bias took (g, b): theirs until the next definition.
    gain_named: tuple[str, ...] = ()


def links(document: Document) -> Iterator[tuple[Found, paper.Link | None, str, tuple[str, ...]]]:
    """Each link of each relation, with the conditions its row states (``\\quad \\text{for } n \\ge 3``,
    ``(n \\ge 3)``): a row that starts with its relation continues the previous row's chain;
    relations side by side in one row (``a = b, \\quad c = d``) each their own."""
    previous = ""
    for found in document.relations:
        parts = paper.segments(found.latex) or [found.latex]
        stated = paper.condition(found.latex)
        bounds = [part for part in parts if paper.is_condition(part)]
        if len(bounds) == len(parts):  # a bound alone (epsilon > 0) is the relation, not a condition on one
            bounds = []
        conditions = tuple([*([stated] if stated else []), *bounds])
        parts = [part for part in parts if part not in bounds]
        chains = [chain for chain in (paper.split(part) for part in parts) if chain]
        if not chains:
            yield found, None, found.latex, ()
            continue
        if not chains[0][0].lhs and previous:
            chains[0][0] = paper.Link(previous, chains[0][0].relation, chains[0][0].rhs)
        previous = chains[-1][-1].rhs
        for chain in chains:
            for link in chain:
                yield found, link, f"{link.lhs} {link.relation} {link.rhs}", conditions


def classify(
    found: Found,
    link: paper.Link | None,
    text: str,
    context: Context,
    deferred: list[tuple[Entry, Request]] | None = None,
    conditions: tuple[str, ...] = (),
) -> Entry:
    """The entry for one link of a relation.  With ``deferred``, a check whose verdict the rest of
    the paper does not depend on is appended to it, to be decided with the others (`decided`)."""
    entry = Entry(found, text)
    if link is None:
        entry.reason = "no relation the checker reads (==, <=, <, >=, >)"
        return entry
    context.notation = notation = _argument_is_input(link, context.notation)
    unread = context.unread
    if paper.defines_output(link, notation):  # unread until read and matched: the layer in force is unknown
        context.unread = f"{found.file}:{found.line}"
        if context.gain_named:  # a new definition: the last one's gain letters (g, b) are letters again
            overrides = {k: v for k, v in notation.overrides.items() if k not in context.gain_named}
            context.notation = notation = dataclasses.replace(notation, overrides=overrides)
            context.gain_named = ()
        context.redefined.pop("y", None)  # and an affine output's y (`_affine_output`) is the output again
    try:
        unknown = paper.foreign(paper.canonical(f"{link.lhs} {link.rhs}", notation))
    except ClaimError as error:  # \mathrm{Var}(z): written in the vocabulary's words, of what it does not read
        entry.reason = str(error)
        return entry
    if unknown:
        entry.kind, entry.reason = "not in the vocabulary", "names " + ", ".join(f"`{u}`" for u in unknown)
        return entry
    redefined = [f"`{name}` (defined at {where})" for name, where in context.redefined.items() if _names(link, name)]
    if redefined:
        entry.kind = "not in the vocabulary"
        entry.reason = "names " + ", ".join(redefined) + ", which the paper defines other than the vocabulary does"
        return entry
    try:
        claim = paper.read(link.lhs, link.rhs, link.relation, notation)
    except ClaimError as error:
        entry.reason = str(error)
        return entry
    entry.claim = claim
    called = _called(claim)
    lhs, _, rhs = claim.partition(" == ")
    if rhs and lhs == rhs:
        context.unread = unread  # a spelling, not a definition of the layer
        entry.kind, entry.layer, entry.verdict = "defined", "", "notation"
        entry.reason = f"defines the paper's notation: {link.lhs} is `{lhs}`"
        return entry
    if _affine_output(link, lhs, rhs):
        # y = gamma * \hat{x} + beta: \hat{x} stays the layer's output; the paper's y is its own from here on.
        context.unread = unread
        context.redefined["y"] = f"{found.file}:{found.line}"
        entry.kind, entry.layer, entry.verdict = "defined", context.current, "affine output"
        entry.reason = (
            f"defines the paper's {link.lhs} as a gain and bias applied to the normalized output: relations about "
            f"the normalized output are about `{context.current}`, and {link.lhs} is the paper's own symbol after this"
        )
        return entry
    defined = _definition(claim, link.relation)
    if defined is not None:
        return _define(entry, defined, called, context)
    entry.layer = context.layer or (called[0] if called else context.current)
    try:
        entry.conditions = tuple(_assumption(stated, notation) for stated in conditions)
        named = paper.named_jacobian(f"{link.lhs} {link.rhs}", notation)
    except ClaimError as error:
        entry.reason = f"a condition it states is not one the checker reads: {error}" if conditions else str(error)
        return entry
    if named is not None and context.layer is None:  # the Jacobian of the layer it names
        entry.layer = named
    if context.unread and context.layer is None and not called and named is None:
        entry.layer = ""
        entry.reason = (
            f"about the layer the paper defines at {context.unread}, a definition not read or matching no layer of "
            "the catalog: not checked against another layer"
        )
        return entry
    request = _request(entry, claim, context)
    statistic = _statistic(link, notation)
    if request is None:
        return entry
    if (
        statistic is None and deferred is not None
    ):  # its verdict changes nothing that follows: decided later, with others
        deferred.append((entry, request))
        return entry
    text, key, assumptions = request
    _apply(entry, decide(text, key, context.timeout, assumptions))
    if statistic is not None and entry.verdict == "refuted":  # the paper's own \sigma: a definition
        context.redefined[statistic] = f"{found.file}:{found.line}"
        entry.kind = "defined"
        entry.verdict = f"differs from the vocabulary's {statistic}"
        entry.reason = (
            f"defines {statistic} other than the vocabulary's `{lhs}` (refuted as the vocabulary's: {entry.reason}); "
            f"relations naming {statistic} after this are not read"
        )
    return entry


# The statistics a paper defines by name: the LaTeX command, alone or squared, on the left of its definition.
STATISTICS = ("\\sigma", "\\mu")


def _statistic(link: paper.Link, notation: paper.Notation) -> str | None:
    """The statistic a relation defines from the input (``\\sigma = ...``, ``\\sigma^2 := ...``), or None."""
    items = paper.tokens(link.lhs)
    if link.relation not in ("=", *paper.DEFINING) or not items or items[0] not in STATISTICS:
        return None
    rest = items[1:]
    if rest[:1] == ["_"]:  # sigma_i, sigma_{\mathcal{B}}: the paper's group is its own
        rest = rest[paper.argument(rest, 1)[1] :]
    if rest in ([], ["^", "2"], ["^", "{", "2", "}"]) and "x" in paper.tokens(paper.canonical(link.rhs, notation)):
        return items[0]
    return None


def _affine_output(link: paper.Link, lhs: str, rhs: str) -> bool:
    """Whether ``link`` writes y as a gain and bias on the normalized output (``y_i = \\gamma \\hat{x}_i + \\beta``)."""
    import re

    normalized = re.search(r"\\(?:hat|widehat)\s*\{", link.rhs) is not None and re.search(r"\\hat", link.lhs) is None
    return (
        lhs in ("y", "y_i")
        and normalized
        and re.fullmatch(r".*\by(?:_i)?\b.*\bbeta\b.*|.*\bgamma\b.*\by(?:_i)?\b.*", rhs) is not None
    )


def _names(link: paper.Link, command: str) -> bool:
    """Whether ``link`` writes ``command`` (a letter inside a word, the y of \\mathrm{DyT}, is not it)."""
    import re

    written = re.sub(r"\\(?:mathrm|operatorname|text|mathit|textrm)\s*\{[^{}]*\}", " ", f"{link.lhs} {link.rhs}")
    return command in paper.tokens(written)


def _argument_is_input(link: paper.Link, notation: paper.Notation) -> paper.Notation:
    """A definition ``\\mathrm{LayerNorm}(v) = ...`` names the paper's input v: read v as x from there on."""
    import re

    match = re.fullmatch(
        r"\\(?:mathrm|operatorname|text)\{(\w+)\}\s*(?:\\left)?\(\s*(?:\\mathbf\{)?([a-wzA-Z])\}?\s*(?:\\right)?\)",
        link.lhs.strip(),
    )
    if match is None or match.group(1) not in notation.layers or link.relation not in ("=", *paper.DEFINING):
        return notation
    return dataclasses.replace(notation, overrides={**notation.overrides, match.group(2): "x"})


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
    entry.kind = "defined"
    found = compare(expression, entry.link, context.timeout)
    entry.identification = found
    entry.reason = describe(found)
    entry.layer = found.key or ""
    entry.verdict = f"equals {found.key}" if found.key else "matches no layer"
    if found.key is not None:
        context.unread = ""
        output = entry.claim.partition(" == ")[0] in ("y", "y_i")  # y = RMSNorm(x) restates the paper's output
        if not context.settled or not called or output:
            context.current, context.settled = found.key, True
            context.epsilon_free = found.epsilon_free and not context.names_epsilon
        for name, key in list(context.notation.layers.items()):
            if called and key == called[0]:
                context.notation.layers[name] = found.key
        if (
            found.gain == "g" and found.key in GAIN_NAMED_G
        ):  # the paper's g (and b) are the gain (and bias) from here on
            spelled = {"g": GAIN_NAMED_G[found.key], **({"b": "beta"} if found.bias else {})}
            context.gain_named = tuple(spelled)
            context.notation = dataclasses.replace(
                context.notation, overrides={**context.notation.overrides, **spelled}
            )
    return entry


def _request(entry: Entry, claim: str, context: Context) -> Request | None:
    """The check ``claim`` needs, fitted to the entry's layer; None (with the reason) where it cannot be fitted."""
    from derivations.claims import vocabulary

    try:
        fitted = paper.fit(claim, entry.layer, set(vocabulary(entry.layer).names()))
    except ClaimError as error:
        entry.reason = str(error)
        return None
    entry.claim = fitted
    free = context.epsilon_free and "epsilon" not in fitted
    return fitted, entry.layer, (*(("epsilon == 0",) if free else ()), *entry.conditions)


def _assumption(stated: str, notation: paper.Notation) -> str:
    """A condition the paper states (``H \\ge 3``) in the claim language (``n >= 3``), an assumption
    of the check; ClaimError where it is not one relation the checker reads."""
    bare = stated.strip()
    if bare.startswith("(") and bare.endswith(")"):
        bare = bare[1:-1]
    chain = paper.split(bare)
    if len(chain) != 1:
        raise ClaimError(f"`{stated}` is not one relation")
    if chain[0].relation not in paper.RELATIONS:
        raise ClaimError(f"`{stated}`: {chain[0].relation} is not a relation the checker assumes (=, <, >, \\le, \\ge)")
    return paper.read(chain[0].lhs, chain[0].rhs, chain[0].relation, notation)


def _apply(entry: Entry, outcome: Outcome) -> Entry:
    """The entry checked: its verdict, or why the check says it is not a claim in the vocabulary."""
    if outcome.verdict == "error" and "unknown name" in outcome.detail:
        entry.kind, entry.reason = "not in the vocabulary", outcome.detail.split("; known names")[0]
        return entry
    if outcome.verdict == "error" and _misread(outcome.detail):
        entry.reason = f"read as `{entry.claim}`, which the checker cannot build: {outcome.detail}"
        return entry
    entry.kind = "checked"
    entry.verdict, entry.reason, entry.quantifier = outcome.verdict, outcome.detail, outcome.quantifier
    entry.counterexample = outcome.counterexample
    return entry


def _misread(detail: str) -> bool:
    """Whether an error verdict is the reading's failure (a shape the claim language refuses), not the check's."""
    import re

    return re.search(r"at column \d+|of a vector|of two vectors|a claim is one relation", detail) is not None


def review(
    document: Document, context: Context, progress: Callable[[int], Callable[[int], Any] | None] | None = None
) -> list[Entry]:
    """Every link of every relation of ``document``, classified in source order.  ``progress``,
    given the number of links, returns what to call with 1 as each is done (or None)."""
    import re

    context.names_epsilon = any(re.search(r"\\(?:var)?epsilon(?![A-Za-z])", f.latex) for f in document.relations)
    # H is the width only in a paper that uses it as one (1/H, a sum to H, R^H); else its own symbol (a Hessian).
    width_h = any(paper.WIDTH_H.search(f.latex) for f in document.relations)
    width_m = any(paper.WIDTH_M.search(f.latex) for f in document.relations) and "m" not in context.notation.overrides
    context.notation = dataclasses.replace(context.notation, width_h=width_h, width_m=width_m)
    every = list(links(document))
    tick = progress(len(every)) if progress is not None else None
    entries = []
    deferred: list[tuple[Entry, Request]] = []
    for found, link, text, conditions in every:
        before = len(deferred)
        entries.append(classify(found, link, text, context, deferred, conditions))
        if tick is not None and len(deferred) == before:
            tick(1)
    outcomes = decide_many([request for _, request in deferred], context.timeout)
    for (entry, _), outcome in zip(deferred, outcomes, strict=True):
        _apply(entry, outcome)
        if tick is not None:
            tick(1)
    return entries


__all__ = ["CLASSES", "Context", "Entry", "classify", "decide", "review"]
