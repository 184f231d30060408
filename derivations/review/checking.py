"""One claim of a review checked: bounded in time, its counterexample re-checked in NumPy, its verdict cached."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from derivations import cache as derivation_cache


@dataclass(frozen=True)
class Outcome:
    """A verdict as the review reports it: the check's row (verdict, quantifier, detail, counterexample)."""

    verdict: str
    detail: str
    quantifier: str = ""
    counterexample: Any = None

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "quantifier": self.quantifier, "detail": self.detail}
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        return out


def _confirming_code() -> bytes:
    return derivation_cache.code("numeric") + derivation_cache.package("numpy")


def decide(text: str, key: str, timeout: float, assumptions: tuple[str, ...] = ()) -> Outcome:
    """The verdict on claim ``text`` about layer ``key`` under ``assumptions``, within ``timeout``
    seconds; a decided one is cached."""
    (outcome,) = decide_many([(text, key, assumptions)], timeout)
    return outcome


def decide_many(requests: Sequence[tuple[str, str, tuple[str, ...]]], timeout: float) -> list[Outcome]:
    """The verdict on each (claim, layer, assumptions) of ``requests``, as `decide` gives it: those
    not cached decided at once, one per processor."""
    from derivations.claims import Claim, check_each

    outcomes: list[Outcome | None] = []
    entries = []
    extra = _confirming_code()
    for text, key, assumptions in requests:
        entry = "python -m derivations review " + json.dumps(
            [text, key, timeout, *([list(assumptions)] if assumptions else [])]
        )
        entries.append(entry)
        outcomes.append(_cached(entry, extra))
    missing = [number for number, outcome in enumerate(outcomes) if outcome is None]
    claims = [Claim(requests[number][0], requests[number][1], requests[number][2], id="review") for number in missing]
    for number, verdict in zip(missing, check_each(claims, _confirm, timeout), strict=True):
        counterexample = json.loads(json.dumps(verdict.counterexample, default=str)) if verdict.counterexample else None
        outcome = Outcome(verdict.verdict, verdict.detail, verdict.quantifier, counterexample)
        if not (verdict.verdict == "error" and verdict.detail.startswith("undecided within")):
            derivation_cache.write(entries[number], json.dumps(outcome.row()).encode(), extra)
        outcomes[number] = outcome
    return [outcome for outcome in outcomes if outcome is not None]


def _cached(entry: str, extra: bytes) -> Outcome | None:
    cached = derivation_cache.read(entry, extra)
    if cached is None:
        return None
    try:
        row = json.loads(cached.decode())
        return Outcome(row["verdict"], row["detail"], row.get("quantifier", ""), row.get("counterexample"))
    except (ValueError, KeyError, TypeError):
        return None


def _confirm(claim: Any, example: dict[str, Any]) -> str:
    from derivations.claims.confirm import confirm

    return confirm(claim, example)
