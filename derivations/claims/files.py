"""Claim files: TOML with one ``[[claim]]`` table per claim."""

from __future__ import annotations

import tomllib
from pathlib import Path

from derivations.catalog import CORE
from derivations.claims.checker import VERDICTS, Claim
from derivations.claims.language import ClaimError

_FIELDS = {"id", "claim", "layer", "assumptions", "expect"}


def load(path: Path) -> list[Claim]:
    """Claims from a TOML file with ``[[claim]]`` tables."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ClaimError(f"claims file {path}: {error.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ClaimError(f"claims file {path} is not valid TOML: {error}") from None
    entries = data.get("claim")
    if not isinstance(entries, list) or not entries or set(data) != {"claim"}:
        raise ClaimError(f"claims file {path} must hold one or more [[claim]] tables and nothing else")
    claims = []
    for number, entry in enumerate(entries, 1):
        where = f"claims file {path}, claim {number}"
        if not isinstance(entry, dict) or "claim" not in entry:
            raise ClaimError(f"{where}: each [[claim]] needs a 'claim' field")
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ClaimError(f"{where}: unknown fields {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
        assumptions = entry.get("assumptions", [])
        if isinstance(assumptions, str):
            assumptions = [assumptions]
        if not (isinstance(assumptions, list) and all(isinstance(a, str) for a in assumptions)):
            raise ClaimError(f"{where}: 'assumptions' must be a list of strings")
        expect = entry.get("expect")
        if expect is not None and expect not in VERDICTS:
            raise ClaimError(f"{where}: 'expect' must be one of {', '.join(VERDICTS)}; got {expect!r}")
        for name in ("id", "claim", "layer"):
            if name in entry and not isinstance(entry[name], str):
                raise ClaimError(f"{where}: '{name}' must be a string")
        claims.append(
            Claim(
                text=entry["claim"],
                layer=entry.get("layer", CORE),
                assumptions=tuple(assumptions),
                expect=expect,
                id=entry.get("id", f"claim-{number}"),
            )
        )
    return claims
