"""One claim of a review checked: bounded in time, its counterexample re-checked in NumPy, its verdict cached."""

from __future__ import annotations

import json
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
    entry = "python -m derivations review " + json.dumps(
        [text, key, timeout, *([list(assumptions)] if assumptions else [])]
    )
    extra = _confirming_code()
    cached = derivation_cache.read(entry, extra)
    if cached is not None:
        try:
            row = json.loads(cached.decode())
            return Outcome(row["verdict"], row["detail"], row.get("quantifier", ""), row.get("counterexample"))
        except (ValueError, KeyError, TypeError):
            pass
    from derivations.claims import Claim, check

    verdict = check(Claim(text, key, assumptions, id="review"), _confirm, timeout=timeout)
    detail = verdict.detail
    counterexample = json.loads(json.dumps(verdict.counterexample, default=str)) if verdict.counterexample else None
    outcome = Outcome(verdict.verdict, detail, verdict.quantifier, counterexample)
    if not (verdict.verdict == "error" and detail.startswith("undecided within")):
        derivation_cache.write(entry, json.dumps(outcome.row()).encode(), extra)
    return outcome


def _confirm(claim: Any, example: dict[str, Any]) -> str:
    from derivations.claims.confirm import confirm

    return confirm(claim, example)
