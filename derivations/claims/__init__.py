"""Claims as reviewers state them: a whitelisted language, one domain each, proofs, audited verdicts.

The modules follow the pipeline: `language` parses text into a relation
without evaluating anything, `vocabulary` says what a claim about a layer may
name (the registry's quantities), `semantics` builds the claim's sides,
`definedness` and `domain` say which points it is about (`limits` takes its
limits), `proof` and `solver` prove it for every admissible value, `sampling`
looks for a counterexample, `checker` gives the verdict, `audit` judges every
verdict independently, `files` reads claim files and `render` prints verdicts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from derivations.claims.checker import VERDICTS, Claim, Confirm, Verdict, check, check_each
    from derivations.claims.files import load
    from derivations.claims.language import ClaimError, Relation, parse, parse_condition
    from derivations.claims.render import STREAMS, VERDICT_FORMATS
    from derivations.claims.vocabulary import Vocabulary, vocabulary

# Each public name by the module that defines it, imported on first use: a definition file read
# by `derivations.definition` needs the grammar (`language`) and the sandbox (`bounded`), not the
# checker, and importing either runs this file.
_HOMES = {
    **dict.fromkeys(("VERDICTS", "Claim", "Confirm", "Verdict", "check", "check_each"), "checker"),
    "load": "files",
    **dict.fromkeys(("ClaimError", "Relation", "parse", "parse_condition"), "language"),
    **dict.fromkeys(("STREAMS", "VERDICT_FORMATS"), "render"),
    **dict.fromkeys(("Vocabulary", "vocabulary"), "vocabulary"),
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "STREAMS",
    "VERDICTS",
    "VERDICT_FORMATS",
    "Claim",
    "ClaimError",
    "Confirm",
    "Relation",
    "Verdict",
    "Vocabulary",
    "check",
    "check_each",
    "load",
    "parse",
    "parse_condition",
    "vocabulary",
]
