"""Claims in LaTeX: placeholder until the grammar lands."""

from derivations.claims.language import ClaimError


def to_claim(text: str) -> str:
    raise ClaimError("LaTeX claims are not available yet")
