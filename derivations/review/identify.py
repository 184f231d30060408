"""The catalog layer a written definition is: its output checked against every layer's."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from derivations.claims import ClaimError
from derivations.review import notation as paper
from derivations.review.checking import Outcome, decide_many

# The layers whose output a gain-free definition is compared with (a wrapper's too: it differs by its gain).
# A definition with a gain is its base layer's, wrapped: (base, gain) -> the catalog key.
WRAPPED = {
    ("layernorm", "gamma"): "layernorm_affine",
    ("rmsnorm", "gamma"): "rmsnorm_affine",
    ("layernorm", "g"): "layernorm_affine",  # the gain g_i of Ba et al. 2016 and Zhang & Sennrich 2019
    ("rmsnorm", "g"): "rmsnorm_affine",
    ("rmsnorm", "1 + w"): "rmsnorm_gemma",
    ("l2norm_clamped", "g"): "scalenorm",
    ("tanh", "gamma"): "dyt",
}
# A paper's subscripts on the statistics that say which axis it normalizes.
HINTS = {
    "batchnorm_train": r"_\{?\\mathcal\{B\}|_B\b|\\mathrm\{BN\}|BatchNorm",
    "groupnorm": r"_[gG]\b|_\{[gG]\}|GroupNorm|\\mathrm\{GN\}",
}

# The assumption a definition without epsilon is compared under.
FREE = ("epsilon == 0",)


@dataclass(frozen=True)
class Comparison:
    key: str
    claim: str
    outcome: Outcome


@dataclass
class Identification:
    """What a definition was read as, the layer it equals (``key``, or None), and every comparison."""

    expression: str
    gain: str = ""
    bias: bool = False
    key: str | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    # Written without epsilon: compared with each layer at epsilon = 0.
    epsilon_free: bool = False

    @property
    def equal(self) -> list[str]:
        return [c.key for c in self.comparisons if c.outcome.verdict in ("proved", "supported")]

    def row(self) -> dict[str, object]:
        return {
            "expression": self.expression,
            "gain": self.gain,
            "bias": self.bias,
            "equals": self.key,
            "epsilon_free": self.epsilon_free,
            "comparisons": [{"layer": c.key, "claim": c.claim, **c.outcome.row()} for c in self.comparisons],
        }


def identify(definition: str, note: paper.Notation, timeout: float = 10.0) -> Identification:
    """The layer a LaTeX definition (``y = ...``, ``\\mathrm{LN}(x) = ...`` or the right side alone) equals."""
    links = paper.split(definition)
    if links and _not_an_output(links[0].lhs, note):
        raise ClaimError(
            f"`{links[0].lhs}` is not the layer's output: a definition reads y = ..., \\hat{{x}} = ..."
            " or \\mathrm{{LN}}(x) = ..."
        )
    rhs = links[-1].rhs if links else definition
    expression = paper.read("y", rhs, "=", note).partition("==")[2].strip()
    return compare(expression, definition, timeout)


def _not_an_output(lhs: str, note: paper.Notation) -> bool:
    """Whether the left side of a written definition is a statement about something else (``J \\mathbf{1}``,
    a norm, a sum) rather than a name for the output (y, h, \\bar{x}_i, N(x))."""
    written = paper.tokens(lhs)
    return any(token in ("\\partial", "\\nabla", "\\|", "|", "\\sum", "\\lVert") for token in written) or (
        "J" in paper.tokens(paper.canonical(lhs, note))
    )


def compare(expression: str, written: str, timeout: float) -> Identification:
    """``expression`` (the claim language, a layer's output) compared with every layer of the catalog."""
    from derivations.catalog import LAYERS
    from derivations.claims import vocabulary

    written_free = re.search(r"\bepsilon\b", expression) is None  # and calls no layer, which has its own
    found = Identification(expression, epsilon_free=written_free and not any(f"{key}(" in expression for key in LAYERS))
    base, found.gain, found.bias = _unwrap(expression)
    if base == "tanh":
        found.key = WRAPPED[("tanh", "gamma")] if found.gain == "gamma" else None
        return found
    keys = [key for key in LAYERS if not found.gain or key not in WRAPPED.values()]
    claims: dict[str, str | ClaimError] = {}
    for key in keys:
        try:
            claims[key] = paper.fit(f"y == {base}", key, set(vocabulary(key).names()))
        except ClaimError as error:
            claims[key] = error
    fitted = [(key, claim) for key, claim in claims.items() if isinstance(claim, str)]
    assumptions = FREE if found.epsilon_free else ()
    outcomes = dict(
        zip(
            [key for key, _ in fitted],
            decide_many([(claim, key, assumptions) for key, claim in fitted], timeout),
            strict=True,
        )
    )
    for key, claim in claims.items():
        if isinstance(claim, ClaimError):
            found.comparisons.append(Comparison(key, f"y == {base}", Outcome("error", str(claim))))
        else:
            found.comparisons.append(Comparison(key, claim, outcomes[key]))
    equal = found.equal
    preferred = [key for key in equal if key in HINTS and re.search(HINTS[key], written)]
    bases = [key for key in equal if key not in HINTS]
    ranked = preferred or bases or equal
    best: str | None = ranked[0] if ranked else None
    if best is not None and found.gain:
        best = WRAPPED.get((best, found.gain))
    found.key = best
    return found


def _unwrap(expression: str) -> tuple[str, str, bool]:
    """(the base output, the gain: "", "gamma", "1 + w" or "g", whether a bias beta is added)."""
    tree = ast.parse(expression, mode="eval").body
    bias = False
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Add) and ast.unparse(tree.right) in ("beta", "b"):
        tree, bias = tree.left, True
    gain = ""
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Mult):
        for factor, other in ((tree.left, tree.right), (tree.right, tree.left)):
            written = ast.unparse(factor)
            if written in ("gamma", "1 + w", "w + 1", "g", "g_i"):
                gain, tree = ("1 + w" if "w" in written else written.removesuffix("_i")), other
                break
    base = ast.unparse(tree)
    if re.fullmatch(r"tanh\(alpha \* x\)|tanh\(x \* alpha\)", base):
        return "tanh", gain, bias
    return base, gain, bias


def describe(found: Identification) -> str:
    """One paragraph: the layer it equals (with who uses it), and how it differs from the others."""
    from derivations.catalog import LAYERS

    if found.key is None:
        head = "matches no layer of the catalog"
    else:
        users = "; ".join(LAYERS[found.key].used_by)
        head = f"equals `{found.key}`" + (
            " at epsilon = 0 (it is written without epsilon)" if found.epsilon_free else ""
        )
        head += f" ({users})" if users else ""
        if found.gain:
            head += f"; its gain {found.gain}{' and bias beta' if found.bias else ''} read off its form"
    differs = [
        f"`{c.key}`" + (f" at {_point(c.outcome)}" if c.outcome.counterexample else "")
        for c in found.comparisons
        if c.outcome.verdict == "refuted"
    ]
    also = [key for key in found.equal if key != found.key and not found.gain]
    text = head
    if also:
        text += f"; the same formula as `{'`, `'.join(also)}`"
    if differs:
        text += f"; differs from {', '.join(differs)}"
    return text


def _point(outcome: Outcome) -> str:
    example = outcome.counterexample
    if isinstance(example, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in example.items()) + "}"
    return str(example)
