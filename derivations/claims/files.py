"""Claim files: TOML with one ``[[claim]]`` table per claim."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from derivations.catalog import CORE
from derivations.claims.checker import VERDICTS, Claim
from derivations.claims.language import ClaimError
from derivations.files import Unreadable, read_capped

_FIELDS = {"id", "claim", "layer", "assumptions", "expect"}
LIMIT = 16 << 20  # bytes of a claims file: 10,000 claims of 1,600 characters each
# The names of standard input: read as it comes, a pipe or a terminal, up to the same limit.
STDIN = ("-", "/dev/stdin")


def load(path: Path, layer: str = CORE) -> list[Claim]:
    """Claims from a TOML file with ``[[claim]]`` tables; an entry without a ``layer`` is about ``layer``.

    ``path`` is a regular file of at most `LIMIT` bytes, or standard input (`STDIN`): a FIFO
    would wait forever and ``/dev/zero`` fill memory.  A file that cannot be read or is not
    such a file raises `ClaimError`; an entry that is malformed (a missing claim, an unknown
    field, a duplicate or empty id) becomes a claim whose verdict is an error, so that one bad
    entry never stops the others.
    """
    try:
        data = tomllib.loads(_read(path).decode("utf-8"))
    except OSError as error:
        raise ClaimError(f"claims file {path}: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ClaimError(f"claims file {path} is not valid TOML: {error}") from None
    entries = data.get("claim")
    if not isinstance(entries, list) or not entries or set(data) != {"claim"}:
        raise ClaimError(f"claims file {path} must hold one or more [[claim]] tables and nothing else")
    claims = []
    seen: set[str] = set()
    for number, entry in enumerate(entries, 1):
        claim = _entry(entry, number, layer)
        if claim.problem is None and claim.id in seen:
            claim = Claim(claim.text, claim.layer, claim.assumptions, claim.expect, claim.id, "duplicate id")
        seen.add(claim.id)
        claims.append(claim)
    return claims


def _read(path: Path) -> bytes:
    if str(path) not in STDIN:
        return read_capped(path, LIMIT)
    if sys.stdin is None:
        raise Unreadable("standard input is closed")
    data = sys.stdin.buffer.read(LIMIT + 1)
    if len(data) > LIMIT:
        raise Unreadable(f"larger than {LIMIT} bytes")
    return data


def _entry(entry: object, number: int, layer: str) -> Claim:
    """One [[claim]] table as a Claim; a malformed one carries its problem."""
    fallback = f"claim-{number}"
    if not isinstance(entry, dict):
        return Claim("", id=fallback, problem=f"entry {number} is not a table")
    identifier = entry.get("id", fallback)
    if not isinstance(identifier, str) or not identifier.strip():
        return Claim(str(entry.get("claim", "")), id=fallback, problem=f"entry {number}: 'id' must be non-empty text")

    def problem(message: str) -> Claim:
        text = entry.get("claim", "")
        return Claim(text if isinstance(text, str) else "", id=identifier, problem=f"entry {number}: {message}")

    if "claim" not in entry:
        return problem("each [[claim]] needs a 'claim' field")
    unknown = set(entry) - _FIELDS
    if unknown:
        return problem(f"unknown fields {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
    assumptions = entry.get("assumptions", [])
    if isinstance(assumptions, str):
        assumptions = [assumptions]
    if not (isinstance(assumptions, list) and all(isinstance(a, str) for a in assumptions)):
        return problem("'assumptions' must be a list of strings")
    expect = entry.get("expect")
    if expect is not None and expect not in VERDICTS:
        return problem(f"'expect' must be one of {', '.join(VERDICTS)}; got {expect!r}")
    for name in ("claim", "layer"):
        if name in entry and not isinstance(entry[name], str):
            return problem(f"'{name}' must be a string")
    return Claim(
        text=entry["claim"],
        layer=entry.get("layer", layer),
        assumptions=tuple(assumptions),
        expect=expect,
        id=identifier,
    )
