"""Claims as reviewers state them: a whitelisted language, one domain each, proofs, audited verdicts.

The modules follow the pipeline: `language` parses text into a relation
without evaluating anything, `vocabulary` says what a claim about a layer may
name (the registry's quantities), `semantics` builds the claim's sides,
`definedness` and `domain` say which points it is about (`limits` takes its
limits), `proof` and `solver` prove it for every admissible value, `sampling`
looks for a counterexample, `checker` gives the verdict, `audit` judges every
verdict independently, `files` reads claim files and `render` prints verdicts.
"""

from derivations.claims.checker import VERDICTS, Claim, Confirm, Verdict, check
from derivations.claims.files import load
from derivations.claims.language import ClaimError, Relation, parse, parse_condition
from derivations.claims.render import STREAMS, VERDICT_FORMATS
from derivations.claims.vocabulary import Vocabulary, vocabulary

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
    "load",
    "parse",
    "parse_condition",
    "vocabulary",
]
