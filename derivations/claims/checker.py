"""Verdicts on claims about a layer: proved, refuted (with a counterexample), supported, or error.

A claim is parsed by `derivations.claims.language` into a relation between
expressions in the layer's derived quantities and symbols.  The checker
first tries to prove it for every admissible value (case by case where a
quantity is piecewise in n); failing that it evaluates both sides at
sampled points, edge cases first, at 30 significant digits, and either
reports the first violation as a counterexample or the number of points
checked and the worst margin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from derivations.catalog import CORE
from derivations.claims import sampling
from derivations.claims.language import ClaimError, Relation, parse, parse_condition
from derivations.claims.proof import describe_n, n_range, prove, strengthened
from derivations.claims.vocabulary import Vocabulary, vocabulary
from derivations.quantities import NotApplicable
from derivations.symbols import n, t

VERDICTS = ("proved", "refuted", "supported", "error")


@dataclass(frozen=True)
class Claim:
    """One claim to check, as a reviewer writes it."""

    text: str
    layer: str = CORE
    assumptions: tuple[str, ...] = ()
    expect: str | None = None
    id: str = "claim"


@dataclass
class Verdict:
    """The outcome for one claim."""

    claim: Claim
    verdict: str
    detail: str
    counterexample: dict[str, Any] | None = None
    quantities: tuple[str, ...] = field(default=())

    @property
    def met(self) -> bool:
        """Whether the verdict is what the claim expects (by default: proved or supported)."""
        if self.claim.expect is not None:
            return self.verdict == self.claim.expect
        return self.verdict in ("proved", "supported")

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.claim.id,
            "claim": self.claim.text,
            "layer": self.claim.layer,
            "verdict": self.verdict,
            "detail": self.detail,
        }
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        if self.claim.expect is not None:
            out["expect"] = self.claim.expect
        return out


Confirm = Callable[[str, Relation, Vocabulary, dict[str, Any]], str]


def check(claim: Claim, confirm: Confirm | None = None) -> Verdict:
    """The verdict on ``claim``; ``confirm`` re-checks a counterexample numerically."""
    try:
        words = vocabulary(claim.layer)
        parsed = parse(claim.text, words.names(), {"t": t}, words.expand)
        conditions = [parse_condition(c, words.symbols).as_sympy() for c in claim.assumptions]
        relation = Relation(words.expand(parsed.lhs), parsed.op, words.expand(parsed.rhs))
    except (ClaimError, NotApplicable) as error:
        # A name the layer lacks (spectral_norm of a gained layer) is an error verdict, never a crash.
        return Verdict(claim, "error", str(error))
    used = tuple(name for name, stand_in in words.placeholders.items() if parsed.as_sympy().has(stand_in))
    allowed = n_range(conditions)
    if allowed == sp.EmptySet:
        return Verdict(claim, "error", "the assumptions leave no admissible n >= 2", quantities=used)
    how = prove(strengthened(relation, conditions), allowed)
    others = [text for text, c in zip(claim.assumptions, conditions, strict=True) if c.free_symbols != {n}]
    domain = ", ".join(["epsilon > 0", describe_n(allowed), *others])
    if how is not None:
        return Verdict(claim, "proved", f"proved for all values with {domain}. {how}", quantities=used)
    return _sample(claim, parsed, relation, conditions, allowed, domain, used, words, confirm)


def _sample(
    claim: Claim,
    parsed: Relation,
    relation: Relation,
    conditions: list[sp.Basic],
    allowed: sp.Set,
    domain: str,
    used: tuple[str, ...],
    words: Vocabulary,
    confirm: Confirm | None,
) -> Verdict:
    # What a point must fix: plain symbols (n included, through a Piecewise's
    # conditions) and indexed entries such as gamma[2], not their bases.
    difference = relation.lhs - relation.rhs
    indexed = difference.atoms(sp.Indexed)
    inside = {s for entry in indexed for s in entry.free_symbols}
    free = sorted((difference.free_symbols - inside) | indexed, key=sp.default_sort_key)
    n_conditions = [*conditions, *([sp.Contains(n, allowed)] if n in free else [])]
    checked, worst = 0, None
    margin = sampling.margin(relation.lhs, relation.op, relation.rhs)
    for point in sampling.points(free, n_conditions):
        value = sampling.evaluate(margin, point)
        if value is None:
            continue
        checked += 1
        worst = value if worst is None else min(worst, value)
        if value < 0:
            example = {sampling.name(symbol): sampling.as_number(v) for symbol, v in point.items()}
            sides = f"lhs = {sp.N(relation.lhs.xreplace(point), 8)}, rhs = {sp.N(relation.rhs.xreplace(point), 8)}"
            detail = f"fails at {example}: {sides}"
            if confirm is not None:
                detail += "; " + confirm(claim.layer, parsed, words, example)
            return Verdict(claim, "refuted", detail, example, quantities=used)
    if checked == 0:
        return Verdict(claim, "error", f"no admissible point to evaluate under {domain}", quantities=used)
    return Verdict(
        claim,
        "supported",
        f"not proved; no violation at {checked} sampled points (edge cases 0, tiny and huge values included) "
        f"with {domain}; worst relative margin {sp.N(worst, 3)}",
        quantities=used,
    )
