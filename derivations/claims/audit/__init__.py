r"""An independent audit of every verdict: the claim as written, re-evaluated in ball arithmetic.

The prover works on derived formulas with SymPy.  The audit shares none of
that: it reads the claim's text again with Python's parser (the same
whitelist bounds), and evaluates every name from the layer's *definition*
(its output and statistics as the layer states them, never a derived
formula) in exact rationals while they last and python-flint's ``arb`` balls after,
which enclose the exact value (`numbers`):

- a derivative (a slope, the Jacobian) by forward-mode jets through the
  definition; an eigenvalue as J d = lambda d along the direction's vector at
  that input; a spectral norm from the enclosed eigenvalues of J^T J;
- a bound over all inputs (``spectral_bound``) as what it must be at least
  (the largest norm of J at a few inputs);
- a limit by evaluating at points tending to it (1e-6, 1e-12, ... or the
  other way), which is the one part that is not rigorous: a conclusion that
  rests on one is flagged so.

A side is *undefined* at a point where a division is by an exact zero, a
root is of a negative number, or a limit's two sides differ.  Every point is
checked against the domain itself: the assumptions and the verdict's
exclusions are evaluated here too, from their text.

`audit` then judges a verdict: a "proved" or "supported" claim that is false
or undefined at a point of the domain is refuted there; a "refuted" one
whose counterexample the audit does not confirm is withdrawn; a "vacuous"
one whose assumptions hold at a point is wrong.  The checker reports what the
audit did in every verdict.
"""

from __future__ import annotations

import ast
import itertools
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import sympy as sp
from flint import ctx

from derivations import LAYERS, quantities
from derivations.claims.audit.definition import number
from derivations.claims.audit.evaluate import Evaluator, Point
from derivations.claims.audit.numbers import NO_VALUE, NOT_EVALUABLE, Undefined, agree, is_zero, negative
from derivations.claims.language import FREE_SCALARS, ClaimError, parse_expression

__all__ = ["Claimed", "Finding", "Point", "Report", "admitted", "at_counterexample", "precision", "run"]

# Bits of working precision: 77 digits, far more than a decision at a sampled point needs.
PRECISION = 256
# Points evaluated for a claim that was proved or supported (the special ones first).
MAX_POINTS = 28
# The precisions a counterexample is evaluated at in turn, until the claim is decided there.
_DEEPER = (PRECISION, 1024, 4096)


# --- choosing the points, and judging a verdict ----------------------------------------------


@dataclass
class Finding:
    """The audit at one point: the claim False, or a side undefined, where the domain holds."""

    point: dict[str, Any]
    why: str
    rigorous: bool


@dataclass
class Report:
    """What the audit did: the points of the domain it evaluated the claim at, how many it
    decided (the claim true there), how many it could only find consistent (both sides of an
    equation in balls that overlap, a bound only known from below), and what it found."""

    points: int = 0
    decided: int = 0
    findings: list[Finding] = field(default_factory=list)

    def text(self) -> str:
        return (
            f"audited at {self.points} points of the domain in ball arithmetic: {self.decided} decided, "
            f"{self.points - self.decided - len(self.findings)} consistent or not evaluable there"
        )


class Claimed:
    """A claim as the audit reads it: its text, layer, assumptions, and the verdict's exclusions."""

    def __init__(self, text: str, key: str, assumptions: Sequence[str], excluded: Sequence[str]) -> None:
        self.text = text
        self.key = key
        self.assumptions = tuple(assumptions)
        self.excluded = tuple(excluded)
        self.tree = parse_expression(text, {}, {})
        self.pattern = _pattern_of(self.tree, key)
        # The free scalars (a, b) the claim or its assumptions name: each takes values at the points.
        self.free = set().union(*(_free_names(text) for text in (text, *self.assumptions)))
        self.near = False  # set by `in_domain`

    def in_domain(self, point: Point, epsilon_zero: bool) -> bool | None:
        """Whether the point meets the assumptions, the exclusions and epsilon's range: True,
        False, or None where a ball leaves one open (`near` says whether only equations did,
        each with its sides agreeing to 54 digits)."""
        self.near = False
        if point.epsilon is not None and LAYERS[self.key].has_epsilon:
            epsilon = number(point.epsilon)
            if negative(epsilon) or (is_zero(epsilon) and not epsilon_zero):
                return False
        results = []
        near = []
        for text in (*self.assumptions, *self.excluded):
            evaluator = Evaluator(self.key, point, self.pattern)
            try:
                result = evaluator.relation(text)
            except Undefined:
                return False
            except NOT_EVALUABLE:  # Unknown, or arithmetic the balls cannot do: not decided
                result = None
            if result is None:
                near.append(_equation_agrees(evaluator, text))
            results.append(result)
        self.near = bool(near) and all(near)
        return False if False in results else (None if None in results else True)

    def evaluate(self, point: Point, precisions: Sequence[int] = (PRECISION,)) -> tuple[bool | None, bool, str]:
        """The claim at the point: (holds, rigorous, why); holds is False where a side is undefined.
        A claim left open at one precision is evaluated again at the next (a cancellation of 300
        digits needs more than 77)."""
        found: tuple[bool | None, bool, str] = (None, True, "")
        for bits in precisions:
            with precision(bits):
                evaluator = Evaluator(self.key, point, self.pattern)
                try:
                    holds = evaluator.decide(self.tree)
                except Undefined as undefined:
                    return False, evaluator.rigorous, f"undefined there ({undefined})"
                except NOT_EVALUABLE:  # Unknown, or any arithmetic the balls cannot do: not evaluable here
                    holds = None
            found = (holds, evaluator.rigorous, "" if holds is not False else "false there")
            if holds is not None:
                return found
        return found

    def tie(self, point: Point) -> bool:
        """Whether the claim is a strict inequality whose two sides agree here to 54 digits: a
        refutation by an exact tie is then as far as balls can confirm it."""
        node = self.tree
        if not (isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Lt, ast.Gt, ast.NotEq))):
            return False
        evaluator = Evaluator(self.key, point, self.pattern)
        try:
            return agree(evaluator.value(node.left), evaluator.value(node.comparators[0]))
        except NO_VALUE:  # undefined or not evaluable: no tie to confirm
            return False


def _equation_agrees(evaluator: Evaluator, text: str) -> bool:
    """Whether ``text`` is an equation whose two sides agree to 54 digits at the evaluator's point
    (an input scaled to r == 1/4 has irrational entries: its r is a narrow ball around 1/4)."""
    node = parse_expression(text, {}, {})
    if not (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq)):
        return False
    try:
        return agree(evaluator.value(node.left), evaluator.value(node.comparators[0]))
    except NO_VALUE:  # undefined or not evaluable: not shown to agree
        return False


def _pattern_of(tree: ast.AST, key: str) -> Any:
    """The input pattern the claim's quantities are taken at, if it names one."""
    for node in ast.walk(tree):
        layer_key, name = key, None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in LAYERS:
            layer_key, name = node.value.id, node.attr
        if name is None or layer_key not in LAYERS:
            continue
        known = quantities.names(LAYERS[layer_key])
        if name in known and known[name][0].over == "pattern":
            return known[name][1]
    return None


def points(claimed: Claimed, ranges: dict[str, Any], seed: int = 0) -> Iterator[Point]:
    """Points of the domain, the special ones first: t = 0, a constant x (q = 0), x = 0, a zero
    gain, n = 2 and 3, epsilon at the ends the assumptions give, then seeded random ones."""
    layer = LAYERS[claimed.key]
    rng = random.Random(seed)
    sizes = [len(claimed.pattern.values)] if claimed.pattern is not None else ranges["n"]
    epsilons = ranges["epsilon"]
    ts = ranges["t"]
    names = [name for _, name in _scalar_names(layer)] + sorted(claimed.free)
    scalars = {name: ranges.get(name, [1, -1, 0, sp.Rational(1, 2), 3]) for name in names}
    for count, size in enumerate(itertools.cycle(sizes)):
        if count >= MAX_POINTS:
            return
        kind = count // len(sizes)
        x = None if claimed.pattern is not None else _input(size, kind, rng, ranges)
        gain = _gain(size, kind, rng) if layer.parameters else None
        bias = [sp.Rational(rng.randint(-8, 8), 4) for _ in range(size)] if layer.parameters else None
        point = Point(
            n=size,
            epsilon=epsilons[kind % len(epsilons)] if epsilons else None,
            t=ts[kind % len(ts)] if ts else None,
            x=x,
            gain=gain,
            bias=bias,
            g=[sp.Rational(rng.randint(-16, 16), 8) for _ in range(size)],
            v=[sp.Rational(rng.randint(-16, 16), 8) for _ in range(size)],
            scalars={name: values[kind % len(values)] for name, values in scalars.items() if values},
        )
        yield point


def _free_names(text: str) -> set[str]:
    """The free scalars (`FREE_SCALARS`) a claim or an assumption names."""
    try:
        tree = parse_expression(text, {}, {})
    except ClaimError:  # an assumption in words ("x is not constant")
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in FREE_SCALARS}


def _scalar_names(layer: Any) -> list[tuple[str, str]]:
    return [(argument, str(symbol)) for argument, symbol in layer.scalars]


def _input(size: int, kind: int, rng: random.Random, ranges: dict[str, Any]) -> list[Any]:
    pinned = ranges.get("x")
    if pinned:
        return pinned[kind % len(pinned)](size, kind)
    special = (
        [sp.Rational(1, 2)] * size,  # constant: q = 0
        [sp.Integer(0)] * size,
        [sp.Integer(m - size // 2) for m in range(size)],
        [sp.Integer((-1) ** m) for m in range(size)],
    )
    if kind < len(special):
        return special[kind]
    scale = sp.Integer(2) ** rng.choice((0, 0, 0, -30, 30, -100, 100))
    return [scale * sp.Rational(rng.randint(-64, 64), 16) for _ in range(size)]


def _gain(size: int, kind: int, rng: random.Random) -> list[Any]:
    if kind % 5 == 0:
        return [sp.Integer(0)] * size  # gamma = 0: max|gamma_i| = 0
    if kind % 5 == 1:
        return [sp.Integer(1)] * size
    out = [sp.Rational(rng.randint(-16, 16), 8) for _ in range(size)]
    out[rng.randrange(size)] = sp.Integer(0)
    return out


@contextmanager
def precision(bits: int = PRECISION) -> Iterator[None]:
    """The audit's working precision for the balls, and flint's own restored after."""
    before = ctx.prec
    ctx.prec = bits
    try:
        yield
    finally:
        ctx.prec = before


def run(claimed: Claimed, ranges: dict[str, Any], epsilon_zero: bool) -> Report:
    """The claim at the domain's points: a finding wherever it is false or a side undefined."""
    with precision():
        return _run(claimed, ranges, epsilon_zero)


def _run(claimed: Claimed, ranges: dict[str, Any], epsilon_zero: bool) -> Report:
    report = Report()
    for point in points(claimed, ranges):
        inside = claimed.in_domain(point, epsilon_zero)
        if inside is False:
            continue
        report.points += 1
        if inside is None and not claimed.near:
            continue  # not known to be in the domain
        holds, rigorous, why = claimed.evaluate(point)
        if holds is True:
            report.decided += 1
        elif holds is False:
            report.findings.append(Finding(point.shown(), why, rigorous and inside is True))
    return report


def at_counterexample(claimed: Claimed, point: Point, epsilon_zero: bool) -> tuple[bool | None, str]:
    """Whether the audit confirms a refutation at ``point``: True (in the domain, and the claim
    false or undefined there), False (outside the domain, or the claim holds), None (cannot tell)."""
    with precision():
        return _at_counterexample(claimed, point, epsilon_zero)


def _at_counterexample(claimed: Claimed, point: Point, epsilon_zero: bool) -> tuple[bool | None, str]:
    point = _with_epsilon(claimed, point, epsilon_zero)
    inside = claimed.in_domain(point, epsilon_zero)
    if inside is False:
        return False, "the counterexample is outside the domain"
    holds, rigorous, why = claimed.evaluate(point, _DEEPER)
    if holds is True:
        return False, "the claim holds at the counterexample"
    near = "" if inside else "; it meets the assumed equations to 54 digits"
    if inside is None and not claimed.near:
        return None, "the audit cannot decide whether the counterexample meets the assumptions"
    if holds is None and claimed.tie(point):
        return True, "the two sides agree there to 54 digits, and the checker found them equal exactly" + near
    if holds is None:
        return None, "the audit cannot decide the claim at the counterexample"
    return True, why + ("" if rigorous else "; a limit, a derivative or an eigenvalue evaluated numerically") + near


def _with_epsilon(claimed: Claimed, point: Point, epsilon_zero: bool) -> Point:
    """A counterexample without epsilon, for a layer with it, is one for every epsilon (its sides
    did not depend on it): the point at the first of a few epsilons the domain admits.  The claim
    holds for all epsilon, so it is false if false at any one of them."""
    if point.epsilon is not None or not LAYERS[claimed.key].has_epsilon:
        return point
    for value in (sp.Rational(1, 4), sp.Integer(1), sp.Rational(1, 2), sp.Integer(2), sp.Integer(0)):
        candidate = replace(point, epsilon=value)
        if claimed.in_domain(candidate, epsilon_zero) is True:
            return candidate
    return point


def admitted(claimed: Claimed, ranges: dict[str, Any]) -> dict[str, Any] | None:
    """A point where every assumption holds, decided in ball arithmetic, or None."""
    with precision():
        for point in points(claimed, ranges):
            if claimed.in_domain(point, epsilon_zero=True) is True:
                return point.shown()
    return None
