"""Hunting wrong verdicts: random claims checked, every verdict judged by an independent reference.

Claims are drawn (Hypothesis) from the claim grammar over each layer's vocabulary, biased toward
claims that are true at a generic input but fail at a boundary point (t = 0, q = 0, a constant or
zero input, gamma = 0, alpha = 0, epsilon = 0, n = 2): a quantity equal to its derived formula
(a Piecewise branch with its condition as an assumption), the formula at epsilon = 0, a limit in
t (at 0 from one side, both sides or the wrong side, at +-oo) or in epsilon equal to what SymPy
finds from one side, X/X == 1 and X**-1 * X == 1, X > 0 for an X that is >= 0, bounds the layer
states, numbers only, vector identities; with 0 to 2 assumptions from the brief's list (q becomes
r for a layer without q), sometimes a contradictory pair.  The derived formulas
(`derivations.quantities.value`) are used only to *write* claims.  Each claim is checked (in
this process, within TIMEOUT seconds) and its verdict judged by `reference_claims`, a
brute-force mpmath evaluation of the layers' definitions:

- proved: up to POINTS points of the claim's domain (boundary values first: a zero and a
  constant input at two sizes, t = 0, epsilon at the constants the assumptions name, a zero
  gain; then one and two symbols at a time, then seeded random points), each meeting every
  assumption and not excluded by the verdict (its ``excluded`` conditions).  epsilon > 0 unless an assumption admits 0
  (epsilon == 0, >= 0 or <= 0).  A point where the claim is false, or a side undefined, is a
  wrong verdict; so is a proof under assumptions that leave one symbol no value (vacuous);
- refuted: the counterexample, completed where it leaves symbols free by the first values that
  meet the assumptions (its x moved to the statistics it states, or built from them), must meet
  the assumptions, must not be excluded by the verdict, and the claim must be false or undefined
  there (a limit that does not exist counts) as the reference confirms at 60 and 90 digits;
- vacuous: no point may meet every assumption;
- supported, error: counted only.

Each wrong verdict is tagged ([proof false at a point], [proof undefined at a point], [vacuous
proof], [counterexample outside the assumptions], [counterexample not confirmed], [counterexample
excluded], [satisfiable, said vacuous]); all are collected and the test fails once at the end,
listing up to 20 taken in turn from each tag, with the counts of claims and verdicts (printed,
shown with -s, and recorded with record_property).  A claim the reference cannot evaluate (a
name or a construct it lacks, an eigenvalue on an empty subspace) is counted as not judged.

`test_random_claims_get_sound_verdicts` runs 50 claims in the fast tier and SLOW_CHUNKS chunks
of SLOW_CLAIMS in the slow one (5,250 distinct claims), each chunk its own seed, for pytest-xdist
to spread.  `test_the_harness_flags_a_fabricated_wrong_verdict` shows the property can fail.
"""

from __future__ import annotations

import ast
import functools
import itertools
import random
import signal
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest
import reference_claims as R
import sympy as sp
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from sympy.printing.str import StrPrinter

from derivations import LAYERS, quantities
from derivations.claims import Claim, check

# The layers claims are drawn about; each has its own vocabulary.
KEYS = (
    "layernorm",
    "layernorm_affine",
    "layernorm_std_eps",
    "rmsnorm",
    "rmsnorm_affine",
    "rmsnorm_eps_outside",
    "l2norm_clamped",
    "dyt",
)
TIMEOUT = 5  # seconds per claim
POINTS = 16  # points a proved claim is sampled at, at most
TRIES = 90  # candidate points looked at per claim, at most
SLOW_CHUNKS = 10
SLOW_CLAIMS = 540  # per chunk: 5,400 drawn in all, some twice
FAST_CLAIMS = 50


# --- writing claims ------------------------------------------------------------------------


class NotPrintable(ValueError):
    """A formula the claim language cannot write (a Piecewise, sign, an entry of a vector)."""


class _ClaimPrinter(StrPrinter):
    """SymPy expressions as claim text: abs for Abs, max and min, exp; no Piecewise, sign, pi."""

    def _print_Abs(self, expr: sp.Abs) -> str:
        return f"abs({self._print(expr.args[0])})"

    def _print_Max(self, expr: sp.Max) -> str:
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr: sp.Min) -> str:
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Function(self, expr: sp.Function) -> str:
        if expr.func == sp.exp:
            return f"exp({self._print(expr.args[0])})"
        raise NotPrintable(str(expr.func))

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        raise NotPrintable("Piecewise")

    def _print_Exp1(self, expr: sp.Basic) -> str:
        return "exp(1)"

    def _print_Pi(self, expr: sp.Basic) -> str:
        raise NotPrintable("pi")

    def _print_Infinity(self, expr: sp.Basic) -> str:
        return "oo"

    def _print_NegativeInfinity(self, expr: sp.Basic) -> str:
        return "(-oo)"

    def _print_ComplexInfinity(self, expr: sp.Basic) -> str:
        raise NotPrintable("zoo")

    def _print_NaN(self, expr: sp.Basic) -> str:
        raise NotPrintable("nan")

    def _print_Float(self, expr: sp.Basic) -> str:
        raise NotPrintable("a float")


def printed(expr: sp.Expr, key: str) -> str:
    """``expr`` as claim text, or NotPrintable."""
    if expr.has(sp.tanh, sp.sech, sp.cosh, sp.sinh):
        raise NotPrintable("tanh and sech (written with exp, the checker takes more than its budget)")
    # The gain and the bias at the patterns' coordinate are the claim's gamma and beta.
    coordinate = LAYERS[key].patterns[0].coordinate
    named = {e: sp.Symbol(str(e.base)) for e in _gain_entries(expr) if e.indices[0] == coordinate}
    text = _ClaimPrinter().doprint(expr.xreplace(named))
    if "[" in text or len(text) > 400:
        raise NotPrintable(text)
    return text


@dataclass(frozen=True)
class Formula:
    """A quantity, its derived value written as claim text, and the assumption a branch needs."""

    name: str
    text: str
    value: sp.Expr
    assumptions: tuple[str, ...] = ()
    pattern: bool = False


@dataclass
class Vocabulary:
    """What claims about one layer are written from."""

    key: str
    formulas: list[Formula] = field(default_factory=list)
    scalars: list[str] = field(default_factory=list)  # quantities and symbols that are numbers
    positive: list[str] = field(default_factory=list)  # generically > 0 (or >= 0)
    assumptions: list[str] = field(default_factory=list)
    spread: str | None = None  # q, or r for a layer that does not center
    vectors: list[str] = field(default_factory=list)


# The quantities claims name; kinks, bounds over all inputs and the triangle bound are left out.
_NAMES = ("response", "slope", "slope_at_zero", "asymptote", "constant_response", "spectral_norm", "second_moment")


def _branches(value: sp.Expr) -> list[tuple[sp.Expr, tuple[sp.Basic, ...]]]:
    """A Piecewise as its branches, each with its condition; anything else as itself."""
    if not isinstance(value, sp.Piecewise):
        return [(value, ())]
    out = []
    before: list[sp.Basic] = []
    for branch, condition in value.args:
        if condition == sp.true:
            # The otherwise branch: where no condition before it holds.
            negated = tuple(c.negated for c in before if isinstance(c, sp.core.relational.Relational))
            out.append((branch, negated))
        else:
            out.append((branch, (condition,)))
            before.append(condition)
    return out


def _condition_text(condition: sp.Basic, key: str) -> str:
    ops = {sp.Eq: "==", sp.Le: "<=", sp.Lt: "<", sp.Ge: ">=", sp.Gt: ">"}
    op = ops.get(type(condition))
    if op is None:
        raise NotPrintable(str(condition))
    return f"{printed(condition.lhs, key)} {op} {printed(condition.rhs, key)}"


@functools.cache
def vocabulary(key: str) -> Vocabulary:
    """The layer's quantities with their derived values (as text), symbols, vectors and assumptions."""
    layer = LAYERS[key]
    out = Vocabulary(key)
    known = quantities.names(layer)
    for name, (quantity, _) in known.items():
        if not quantity.claim:
            continue
        stem = name.removesuffix("_uniform")
        if stem not in _NAMES and not name.startswith("eigen_"):
            continue
        if name == "constant_response" and layer.parameters:
            continue  # one value per entry i with a gain
        try:
            value = quantities.value(layer, name)
        except Exception:
            continue
        if name.startswith("eigen_") and value.atoms(sp.Indexed) - _gain_entries(value):
            continue  # one eigenvalue per entry (Dynamic Tanh's coordinates)
        over_pattern = quantity.over == "pattern"
        out.scalars.append(name)
        for branch, conditions in _branches(value):
            try:
                text = printed(branch, key)
                assumed = tuple(_condition_text(c, key) for c in conditions)
            except NotPrintable:
                continue
            out.formulas.append(Formula(name, text, branch, assumed, over_pattern))
    statistics = [str(s.symbol) for s in layer.statistics]
    out.scalars += statistics
    out.scalars += ["t"] + (["epsilon"] if layer.has_epsilon else [])
    out.scalars += list(layer.named_symbols)
    out.spread = "q" if "q" in statistics else ("r" if "r" in statistics else None)
    nonnegative = [s for s in statistics if s != "mu"] + [
        name
        for name in out.scalars
        if name.startswith(("spectral_norm", "second_moment", "eigen_complement", "slope")) and not layer.parameters
    ]
    nonnegative += ["gamma_max"] if layer.parameters else []
    nonnegative += ["norm(y)", "norm(x)", "abs(t)", *_matrix_norm(out)]
    if layer.has_epsilon:
        nonnegative.append("epsilon")
    out.positive = nonnegative
    out.vectors = ["x", "y", "ones", "g", "v"] + (["c"] if "mu" in statistics else [])
    eps = (
        ["epsilon == 0", "epsilon == 1", "epsilon == 2", "epsilon < 0", "epsilon >= 0", "epsilon <= 1"]
        if layer.has_epsilon
        else []
    )
    spread = []
    if out.spread is not None:
        spread = [f"{out.spread} <= 1", f"{out.spread} == 0", f"{out.spread} > 0"]
        if layer.has_epsilon:
            spread.append(f"{out.spread} > 3*epsilon")
    extra = ["gamma_max == 0"] if layer.parameters else []
    extra += ["alpha > 0"] if any(str(symbol) == "alpha" for _, symbol in layer.scalars) else []
    out.assumptions = [*eps, *spread, "n == 2", "n >= 3", "t > 0", "t == 0", *extra]
    return out


def _matrix_norm(voc: Vocabulary) -> list[str]:
    """norm(J, 2) where J is symmetric (the checker reads it as the spectral norm); elsewhere it is
    sampled for seconds to "supported" at best, and named only for layernorm_affine (where it is 0
    at gamma = 0)."""
    return ["norm(J, 2)"] if "spectral_norm" in voc.scalars or voc.key == "layernorm_affine" else []


def _gain_entries(expr: sp.Expr) -> set[sp.Basic]:
    return {e for e in expr.atoms(sp.Indexed) if str(e.base) in ("gamma", "beta")}


# Contradictory pairs, each with the symbols it needs.
CONTRADICTIONS = (
    (("epsilon == 1", "epsilon == 2"), "epsilon"),
    (("epsilon < 0",), "epsilon"),
    (("epsilon == 0", "epsilon > 0"), "epsilon"),
    (("t == 0", "t > 0"), "t"),
    (("n == 2", "n >= 3"), "n"),
    (("{spread} == 0", "{spread} > 0"), "spread"),
    (("gamma_max == 0", "gamma_max > 0"), "gamma_max"),
)


@functools.cache
def _one_sided(value: sp.Expr, variable: str, point: str, side: str) -> sp.Expr | None:
    """The limit SymPy takes of a derived value (a generic symbol for the rest), or None."""
    symbol = next((s for s in value.free_symbols if str(s) == variable), sp.Symbol(variable))
    target = {"0": 0, "oo": sp.oo, "-oo": -sp.oo}[point]
    try:
        found = sp.limit(value, symbol, target, side) if point == "0" else sp.limit(value, symbol, target)
    except Exception:
        return None
    if found.has(sp.Limit, sp.AccumBounds, sp.zoo, sp.nan):
        return None
    return found


def _some(draw: Any, items: list[Any]) -> Any:
    return draw(st.sampled_from(items))


def _formula_claim(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    """A quantity equal to its derived value, sometimes perturbed or weakened to an inequality."""
    formula = _some(draw, voc.formulas)
    op = draw(st.sampled_from(["==", "==", "==", "<=", ">=", "<", ">"]))
    rhs = f"({formula.text})"
    change = draw(st.integers(0, 5))
    if change == 1:
        rhs = f"2*{rhs}"
    elif change == 2:
        rhs = f"{rhs} + 1/10**{draw(st.integers(1, 40))}"
    return f"{formula.name} {op} {rhs}", list(formula.assumptions)


def _at_zero_epsilon(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    """A quantity equal to its derived value at epsilon = 0 (the formula's own limit)."""
    candidates = [f for f in voc.formulas if f.value.has(sp.Symbol("epsilon", positive=True)) or "epsilon" in f.text]
    if not candidates:
        return _formula_claim(draw, voc)
    formula = _some(draw, candidates)
    limit = _one_sided(formula.value, "epsilon", "0", "+")
    if limit is None:
        return _formula_claim(draw, voc)
    try:
        rhs = printed(limit, voc.key)
    except NotPrintable:
        return _formula_claim(draw, voc)
    if draw(st.booleans()):
        return f"limit({formula.name}, epsilon, 0) == {rhs}", list(formula.assumptions)
    return f"{formula.name} == {rhs}", [*formula.assumptions, "epsilon == 0"]


def _limit_in_t(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    """limit(E, t, 0 or +-oo[, side]) equal to what SymPy finds from one side."""
    formulas = [f for f in voc.formulas if "t" in {str(s) for s in f.value.free_symbols}]
    if not formulas:
        return _formula_claim(draw, voc)
    formula = _some(draw, formulas)
    t = next(s for s in formula.value.free_symbols if str(s) == "t")
    wrap = draw(st.sampled_from(["{e}", "{e}/t", "{e}/abs(t)", "{e}*abs(t)/t", "abs(t)/t", "t/abs(t)"]))
    expression = wrap.format(e=formula.name)
    value = sp.sympify(wrap.format(e="(E)").replace("abs", "Abs"), locals={"E": formula.value, "t": t})
    point = draw(st.sampled_from(["0", "0", "0", "oo", "-oo"]))
    side = draw(st.sampled_from(["+", "-", ""])) if point == "0" else ""
    limit = _one_sided(value, "t", point, "+" if side in ("+", "") else "-")
    if limit is None:
        return _formula_claim(draw, voc)
    try:
        rhs = printed(limit, voc.key)
    except NotPrintable:
        return _formula_claim(draw, voc)
    written_side = f', "{side}"' if side else ""
    return f"limit({expression}, t, {point}{written_side}) == {rhs}", list(formula.assumptions)


def _division(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    """X/X == 1 and its kin: true wherever X is not 0."""
    things = [*voc.scalars, "norm(y)", "norm(x)", "abs(t)", "t**2", *_matrix_norm(voc)]
    if voc.spread is not None and "epsilon" in voc.scalars:
        things.append(f"({voc.spread} + epsilon)")
    thing = _some(draw, things)
    form = draw(
        st.sampled_from(
            ["{x}/{x} == 1", "{x}**-1 * {x} == 1", "{x} * {x}**-1 == 1", "({x}/{x})**2 == 1", "{x}/{x} >= 1"]
        )
    )
    return form.format(x=thing), []


def _positive(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    """A quantity that is >= 0, claimed > 0 (or >= 0, or its inverse positive)."""
    thing = _some(draw, voc.positive + voc.scalars)
    form = draw(st.sampled_from(["{x} > 0", "{x} > 0", "{x} >= 0", "abs({x}) > 0", "{x}**2 > 0", "1/{x} > 0"]))
    assumed = ["t > 0"] if thing.startswith("response") and draw(st.booleans()) else []
    return form.format(x=thing), assumed


def _bounds(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    """A quantity against a bound the layer states: the asymptote, the slope at zero, the bound on J."""
    by_name = {f.name: f for f in voc.formulas}
    layer = LAYERS[voc.key]
    options = []
    if "asymptote" in by_name:
        options.append(f"abs(response) {{op}} abs({by_name['asymptote'].text})")
        options.append(f"response**2 {{op}} ({by_name['asymptote'].text})**2")
    if "slope_at_zero" in by_name and "slope" in by_name:
        options.append("slope {op} slope_at_zero")
    try:
        bound = printed(quantities.value(layer, "spectral_bound"), voc.key)
        options += [f"norm(J, 2) {{op}} {bound}"]
        if "spectral_norm" in voc.scalars:
            options.append(f"spectral_norm {{op}} {bound}")
    except Exception:
        pass
    if "second_moment" in voc.scalars:
        options.append("second_moment {op} 1")
    if not options:
        return _positive(draw, voc)
    op = draw(st.sampled_from(["<", "<=", "<="]))
    return _some(draw, options).format(op=op), []


def _numbers(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    k = draw(st.integers(1, 40))
    form = draw(
        st.sampled_from(
            [
                "1/10**{k} == 0",
                "1/10**{k} > 0",
                "10**-{k} > 0",
                "(1 + 1/10**{k}) - 1 > 0",
                "sqrt(2)**2 == 2",
                "exp(-{k}) > 0",
                "1/3 + 1/3 + 1/3 == 1",
                "0.1 + 0.2 == 0.3",
                "2**64 + 1 > 2**64",
                "sqrt(10**{k} + 1) > sqrt(10**{k})",
            ]
        )
    )
    return form.format(k=k), []


def _vectors(draw: Any, voc: Vocabulary) -> tuple[str, list[str]]:
    names = set(voc.scalars)
    # Norms of explicit matrices (norm(J, oo), norm(J, 2) of a J that is not symmetric) the checker
    # can only sample, a second or more each, to "supported" at best: left out for the time they take.
    options = ["J == J.T", "dot(x, ones) == n * mean(x)", "norm(y)/norm(y) == 1", "norm(y)**2 > 0"]
    if "c" in voc.vectors:
        options += ["J @ ones == 0", "sum(J.T @ g) == 0", "dot(y, ones) == 0", "mean(y) == 0", "dot(c, ones) == 0"]
        options += ["norm(c)/norm(c) == 1", "norm(c)**2 == n * q"]
    if "second_moment" in names:
        options.append("norm(y)**2 == n * second_moment")
    if "spectral_norm" in names:
        options += ["norm(J, 2) == spectral_norm"]
    for name in names:
        if name.startswith("eigen_") and name != "eigen_complement":
            direction = {"eigen_centered": "c", "eigen_x": "x", "eigen_ones": "ones"}.get(name)
            if direction is not None and direction in voc.vectors:
                options.append(f"J @ {direction} == {name} * {direction}")
    if "s" in _statistics_and_s(voc.key) and "c" in voc.vectors:
        options.append("y == c/s")
    return _some(draw, options), []


@functools.cache
def _statistics_and_s(key: str) -> tuple[str, ...]:
    layer = LAYERS[key]
    names = [str(s.symbol) for s in layer.statistics]
    if any(str(new) == "s" for _, new in layer.display):
        names.append("s")
    return tuple(names)


# Weights: the families that find the most per second of checking come most often (bounds and
# vectors cost the checker two to three times the others, mostly to end "supported").
FAMILIES = (
    (_formula_claim, 5),
    (_at_zero_epsilon, 3),
    (_limit_in_t, 5),
    (_division, 5),
    (_positive, 4),
    (_bounds, 1),
    (_numbers, 1),
    (_vectors, 2),
)
_WEIGHTED = tuple(family for family, weight in FAMILIES for _ in range(weight))


@st.composite
def claims(draw: Any, keys: tuple[str, ...] = KEYS) -> Claim:
    """A claim about one of ``keys`` with 0 to 2 assumptions (sometimes a contradictory pair)."""
    key = draw(st.sampled_from(keys))
    voc = vocabulary(key)
    family = draw(st.sampled_from(_WEIGHTED))
    text, assumptions = family(draw, voc)
    extra = draw(st.sampled_from([0, 0, 0, 1, 1, 1, 2, 3]))
    if extra == 3:
        pairs = [
            pair
            for pair, needs in CONTRADICTIONS
            if (needs == "spread" and voc.spread)
            or (needs in ("t", "n"))
            or (needs in voc.scalars and needs != "spread")
        ]
        pair = _some(draw, pairs)
        assumptions += [a.format(spread=voc.spread) for a in pair]
    else:
        for _ in range(extra):
            assumptions.append(_some(draw, voc.assumptions))
    return Claim(text, key, tuple(dict.fromkeys(assumptions)), id=family.__name__.strip("_"))


# --- the domain of a claim ---------------------------------------------------------------


def _constant(node: ast.AST) -> Fraction | None:
    """A numeric literal expression's exact value, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp):
        a, b = _constant(node.left), _constant(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Div) and b != 0:
            return a / b
        if isinstance(node.op, ast.Pow) and b.denominator == 1 and abs(b) <= 64 and (a != 0 or b >= 0):
            return a ** int(b)
    return None


_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def single(condition: str) -> tuple[str, str, Fraction] | None:
    """``name op constant`` (either way round) as (name, op, constant), else None."""
    try:
        node = ast.parse(condition.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPS):
        return None
    op = _OPS[type(node.ops[0])]
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Name) and _constant(right) is not None:
        return left.id, op, _constant(right)  # type: ignore[return-value]
    if isinstance(right, ast.Name) and _constant(left) is not None:
        return right.id, _FLIP[op], _constant(left)  # type: ignore[return-value]
    return None


_ADMITS_ZERO = {"epsilon == 0", "epsilon >= 0", "epsilon <= 0"}


def admits_zero_epsilon(assumptions: tuple[str, ...]) -> bool:
    return any(" ".join(a.split()) in _ADMITS_ZERO for a in assumptions)


def _holds(value: Fraction, op: str, bound: Fraction) -> bool:
    return {
        "==": value == bound,
        "!=": value != bound,
        "<": value < bound,
        "<=": value <= bound,
        ">": value > bound,
        ">=": value >= bound,
    }[op]


_NONNEGATIVE = {"epsilon", "q", "r", "sigma", "sigma_u", "norm_x", "gamma_max", "s"}


def admits_nothing(assumptions: tuple[str, ...], key: str, pattern: int | None) -> str | None:
    """Which symbol the assumptions leave no value for, from the conditions on that one symbol
    alone (epsilon > 0 unless a condition admits 0; q, r, ... >= 0; n an integer >= 2, the
    pattern's size at a pattern), or None where each symbol keeps a value."""
    by_symbol: dict[str, list[tuple[str, Fraction]]] = {}
    for condition in assumptions:
        found = single(condition)
        if found is not None:
            by_symbol.setdefault(found[0], []).append(found[1:])
    for name, conditions in by_symbol.items():
        base: list[tuple[str, Fraction]] = []
        if name == "epsilon":
            base = [(">=", Fraction(0))] if admits_zero_epsilon(assumptions) else [(">", Fraction(0))]
        elif name in _NONNEGATIVE:
            base = [(">=", Fraction(0))]
        everything = base + conditions
        if name in ("n", "d"):
            sizes = [len(LAYERS[key].patterns[pattern].values)] if pattern is not None else range(2, 200)
            if not any(all(_holds(Fraction(m), op, c) for op, c in everything) for m in sizes):
                return name
            continue
        candidates = {c for _, c in everything}
        candidates |= {c + d for c in list(candidates) for d in (Fraction(1, 10**9), -Fraction(1, 10**9))}
        candidates |= {Fraction(10**9), -Fraction(10**9), Fraction(0)}
        if not any(all(_holds(value, op, c) for op, c in everything) for value in candidates):
            return name
    return None


def _dyadic_random(rng: random.Random, size: int, scale: Fraction) -> tuple[Fraction, ...]:
    return tuple(scale * Fraction(rng.randint(-999, 999), 128) for _ in range(size))


def _vector_shapes(size: int, rng: random.Random) -> list[tuple[Fraction, ...]]:
    ramp = tuple(Fraction(m - size // 2) for m in range(size))
    alternating = tuple(Fraction((-1) ** m) for m in range(size))
    return [
        ramp,
        (Fraction(0),) * size,
        (Fraction(1),) * size,
        (Fraction(-2),) * size,
        alternating,
        tuple(e / 2**20 for e in ramp),
        tuple(e * 2**20 for e in ramp),
        _dyadic_random(rng, size, Fraction(1)),
        _dyadic_random(rng, size, Fraction(1, 2**12)),
        _dyadic_random(rng, size, Fraction(2**12)),
    ]


def _values(name: str, assumptions: tuple[str, ...], nice: list[Fraction], boundary: list[Fraction]) -> list[Fraction]:
    """A symbol's candidate values: the nicest first, then boundaries and the constants the
    assumptions name about it (and their halves and doubles), kept where those assumptions hold."""
    conditions = [found[1:] for found in map(single, assumptions) if found is not None and found[0] == name]
    constants = [c for _, c in conditions]
    values = [nice[0], *boundary, *constants, *(c / 2 for c in constants), *(c * 2 for c in constants), *nice[1:]]
    kept = [value for value in dict.fromkeys(values) if all(_holds(value, op, c) for op, c in conditions)]
    return kept


def domain(
    claim: Claim,
    pattern: int | None,
    excluded: tuple[str, ...],
    rng_seed: int,
    budget: int = POINTS,
    fixed: dict[str, Any] | None = None,
) -> list[R.Point]:
    """Points of the claim's domain: boundary values first, then seeded random ones, each meeting
    every assumption and every exclusion as the reference decides them (TRUE).  ``fixed`` pins
    some of the values (a counterexample's), the rest vary."""
    key = claim.layer
    layer = LAYERS[key]
    assumptions = claim.assumptions
    rng = random.Random(rng_seed)
    zero_ok = admits_zero_epsilon(assumptions)
    choices: dict[str, list[Any]] = {}
    if layer.has_epsilon:
        eps = _values(
            "epsilon",
            assumptions,
            [Fraction(1, 4), Fraction(1), Fraction(2) ** -20, Fraction(4), Fraction(2) ** 20, Fraction(3, 7)],
            [Fraction(0)] if zero_ok else [],
        )
        choices["epsilon"] = [e for e in eps if e > 0 or (zero_ok and e == 0)]
    choices["t"] = _values(
        "t",
        assumptions,
        [Fraction(1), Fraction(-1), Fraction(1, 2), Fraction(2) ** 30, Fraction(-5, 3), -(Fraction(2) ** -30)],
        [Fraction(0)],
    )
    if any(str(symbol) == "alpha" for _, symbol in layer.scalars):
        choices["alpha"] = _values(
            "alpha", assumptions, [Fraction(1, 2), Fraction(1), Fraction(-1), Fraction(4), Fraction(-3)], [Fraction(0)]
        )
    if pattern is not None:
        sizes = [len(layer.patterns[pattern].values)]
    else:
        sizes = [m for m in (3, 2, 4, 5) if all(_holds(Fraction(m), op, c) for op, c in _on(assumptions, "n"))]
    if pattern is None:
        shapes = {size: _vector_shapes(size, rng) for size in sizes}
        # The default (a ramp), then the degenerate inputs first: zero, constant, at two sizes.
        first = [(0, 0), (1, 0), (2, 1), (4, 0), (0, 1), (2, 0), (1, 1), (5, 0), (6, 0), (7, 0), (3, 2), (1, 3)]
        order = [(shape, size) for shape, size in first if size < len(sizes)]
        order += [(shape, size) for shape in range(10) for size in range(len(sizes)) if (shape, size) not in order]
        choices["x"] = [shapes[sizes[size]][shape] for shape, size in order]
    if not sizes or any(not values for values in choices.values()):
        return []
    gains = [
        lambda m: (Fraction(1),) * m,
        lambda m: (Fraction(0),) * m,
        lambda m: tuple(Fraction(0) if j == min(2, m - 1) else Fraction(1) for j in range(m)),
        lambda m: tuple(Fraction(v) for v in itertools.islice(itertools.cycle((1, -2, Fraction(1, 2), 3)), m)),
        lambda m: _dyadic_random(rng, m, Fraction(1)),
    ]
    if layer.parameters:
        choices["gain"] = gains
        choices["bias"] = [
            lambda m: (Fraction(0),) * m,
            lambda m: tuple(Fraction((-1) ** j) for j in range(m)),
            lambda m: _dyadic_random(rng, m, Fraction(1)),
        ]
    choices["g"] = [lambda m: _dyadic_random(random.Random(m), m, Fraction(1)), lambda m: (Fraction(1),) * m]
    choices["v"] = [lambda m: _dyadic_random(random.Random(m + 7), m, Fraction(1)), lambda m: (Fraction(0),) * m]
    if "x" not in choices:
        choices["size"] = sizes
    for name, value in (fixed or {}).items():
        if name == "x" and pattern is None:
            choices["x"] = [value]
        elif name == "size" and "size" in choices:
            choices["size"] = [value]
        elif name in ("gain", "bias", "g", "v") and name in choices:
            choices[name] = [lambda m, value=value: value if len(value) == m else (Fraction(0),) * m]
        elif name in choices:
            choices[name] = [value]
    # The symbols whose boundaries matter most are varied first.
    names = sorted(choices, key=lambda name: _FIRST.index(name) if name in _FIRST else len(_FIRST))
    defaults = {name: 0 for name in names}

    def profiles():
        yield dict(defaults)
        longest = max(len(values) for values in choices.values())
        for index in range(1, longest):  # one symbol at a time, round robin over the symbols
            for name in names:
                if index < len(choices[name]):
                    yield {**defaults, name: index}
        for a, b in itertools.combinations(names, 2):  # two boundaries at once
            for i in range(min(3, len(choices[a]))):
                for j in range(min(3, len(choices[b]))):
                    yield {**defaults, a: i, b: j}
        while True:
            yield {name: rng.randrange(len(choices[name])) for name in names}

    out: list[R.Point] = []
    seen = set()
    for tried, profile in enumerate(profiles()):
        if tried >= TRIES or len(out) >= budget:
            break
        values = {name: choices[name][index] for name, index in profile.items()}
        candidate = _point(key, pattern, values, sizes)
        if candidate is None or candidate in seen:
            continue
        seen.add(candidate)
        if all(_true(text, key, candidate) for text in (*assumptions, *excluded)):
            out.append(candidate)
    return out


_FIRST = ("x", "t", "epsilon", "gain", "alpha", "size", "bias", "g", "v")


def _on(assumptions: tuple[str, ...], name: str) -> list[tuple[str, Fraction]]:
    return [found[1:] for found in map(single, assumptions) if found is not None and found[0] in (name, "d")]


def _point(key: str, pattern: int | None, values: dict[str, Any], sizes: list[int]) -> R.Point | None:
    x = values.get("x")
    size = len(x) if x is not None else (values.get("size") or sizes[0])
    if pattern is not None:
        size = sizes[0]

    def vector(name: str) -> tuple[Fraction, ...]:
        maker = values.get(name)
        return maker(size) if maker is not None else ()

    return R.point(
        key,
        pattern=pattern,
        t=values["t"],
        x=x or (),
        epsilon=values.get("epsilon"),
        alpha=values.get("alpha"),
        gain=vector("gain"),
        bias=vector("bias"),
        g=vector("g"),
        v=vector("v"),
    )


def _true(text: str, key: str, at: R.Point) -> bool:
    return R.confirmed(text, key, at) == R.TRUE


# --- reading a verdict ---------------------------------------------------------------------


def exclusions(verdict: Any) -> tuple[str, ...]:
    """The points a verdict leaves out: its ``excluded`` conditions."""
    return tuple(verdict.excluded)


def _number(value: Any) -> Fraction:
    if isinstance(value, bool):
        raise TypeError("a boolean is no number here")
    if isinstance(value, float):
        return Fraction(repr(value))
    return Fraction(str(value)) if not isinstance(value, int) else Fraction(value)


def counterexample_fixed(claim: Claim, pattern: int | None, example: dict[str, Any]) -> dict[str, Any]:
    """The values a refutation's counterexample gives, as `domain` pins them: epsilon, t (at a
    pattern, else the pattern's coordinate of x), alpha, x (moved to the statistics it states: the
    checker rounds an irrational x to 17 digits; or built from those statistics where no x is
    given), and the gain (from gain, or gamma and gamma_max), bias, g and v."""
    layer = LAYERS[claim.layer]
    get = dict(example)
    fixed: dict[str, Any] = {}
    for name in ("epsilon", "alpha"):
        if name in get:
            fixed[name] = _number(get[name])
    if pattern is not None:
        size = len(layer.patterns[pattern].values)
        if "t" in get:
            fixed["t"] = _number(get["t"])
        elif "x" in get and len(get["x"]) == size:
            fixed["t"] = _number(get["x"][layer.patterns[pattern].coordinate])
    else:
        if "t" in get:
            fixed["t"] = _number(get["t"])
        if "x" in get:
            fixed["x"] = _moved_to_statistics(tuple(_number(e) for e in get["x"]), get)
        else:
            # gamma and beta are the entries at the patterns' coordinate: an input that has one.
            named = R.names(claim.text) | set().union(*map(R.names, claim.assumptions))
            least = layer.patterns[0].coordinate + 1 if named & {"gamma", "beta"} else 2
            built = _input_with(get, int(get.get("n", least)))
            if built is not None:
                fixed["x"] = built
        if "x" in fixed:
            size = len(fixed["x"])
        elif "n" in get:
            size = fixed["size"] = int(get["n"])
        else:
            size = 0
    coordinate = layer.patterns[0].coordinate
    if layer.parameters and size:
        if "gain" in get and len(get["gain"]) == size:
            fixed["gain"] = tuple(_number(e) for e in get["gain"])
        elif "gamma" in get or "gamma_max" in get:
            own = _number(get["gamma"]) if "gamma" in get else None
            top = _number(get["gamma_max"]) if "gamma_max" in get else abs(own)  # type: ignore[arg-type]
            entries = [top] * size
            if own is not None and coordinate < size:
                entries[coordinate] = own
            fixed["gain"] = tuple(entries)
        if "bias" in get and len(get["bias"]) == size:
            fixed["bias"] = tuple(_number(e) for e in get["bias"])
        elif "beta" in get and coordinate < size:
            fixed["bias"] = tuple(_number(get["beta"]) if m == coordinate else Fraction(0) for m in range(size))
    for name in ("g", "v"):
        if name in get and size and len(get[name]) == size:
            fixed[name] = tuple(_number(e) for e in get[name])
    return fixed


def counterexample_points(claim: Claim, pattern: int | None, example: dict[str, Any]) -> tuple[R.Point, R.Point | None]:
    """The counterexample completed with the simplest values of what it leaves free, and the first
    completion that meets the assumptions (None where none does)."""
    fixed = counterexample_fixed(claim, pattern, example)
    simplest = domain(Claim(claim.text, claim.layer), pattern, (), 0, budget=1, fixed=fixed)
    if not simplest:
        raise R.Unsupported(f"no point completes the counterexample {example}")
    meeting = domain(claim, pattern, (), _stable(claim), budget=1, fixed=fixed)
    return simplest[0], (meeting[0] if meeting else None)


def _input_with(stated: dict[str, Any], size: int) -> tuple[Any, ...] | None:
    """An x of ``size`` entries with the mean mu and variance q (or mean square r) stated, or None."""
    import mpmath

    names = {"mu", "q", "r", "sigma", "sigma_u", "norm_x"}
    if not names & stated.keys():
        return None
    with mpmath.workdps(200):
        z = [mpmath.mpf((-1) ** m) for m in range(size)]
        if size % 2:  # mean 0 and mean square 1 at an odd size: (-1, 1, ..., -1, 1, 0) scaled
            z[-1] = mpmath.mpf(0)
            z = [e * mpmath.sqrt(mpmath.mpf(size) / (size - 1)) for e in z]
        start = tuple(Fraction(0) for _ in range(size))
        moved = _moved_to_statistics(start, stated, z)
    return moved


def _moved_to_statistics(x: tuple[Any, ...], stated: dict[str, Any], shape: list[Any] | None = None) -> tuple[Any, ...]:
    """x moved, at 200 digits, to the mean mu and the variance q (or the mean square r) the
    counterexample states, where x is within 1e-9 of them already (its entries rounded).  With a
    ``shape`` z (mean 0, mean square 1), x is built as mu + sqrt(q) z instead."""
    import mpmath

    stated = dict(stated)
    size = len(x)
    # Statistics that are functions of q or r: sigma = sqrt(r), ||x|| = sqrt(n r), sigma_u = sqrt(n q / (n - 1)).
    if "r" not in stated and "sigma" in stated:
        stated["r"] = _number(stated["sigma"]) ** 2
    if "r" not in stated and "norm_x" in stated:
        stated["r"] = _number(stated["norm_x"]) ** 2 / size
    if "q" not in stated and "sigma_u" in stated and size > 1:
        stated["q"] = _number(stated["sigma_u"]) ** 2 * (size - 1) / size

    def exact(name: str) -> Any:
        value = _number(stated[name])
        return mpmath.mpf(value.numerator) / value.denominator

    with mpmath.workdps(200):
        if shape is not None:
            mean = exact("mu") if "mu" in stated else mpmath.mpf(0)
            if "q" in stated:
                spread = exact("q")
            elif "r" in stated:
                spread = exact("r") - mean**2
            else:
                spread = mpmath.mpf(0)
            root = mpmath.sqrt(max(spread, 0))
            return tuple(mean + root * z for z in shape)
        values = [e if isinstance(e, mpmath.mpf) else mpmath.mpf(e.numerator) / e.denominator for e in x]
        mean = mpmath.fsum(values) / size
        if "mu" in stated:
            target = exact("mu")
            if abs(target - mean) <= mpmath.mpf(10) ** -9 * (1 + abs(target)):
                values = [e - mean + target for e in values]
                mean = target
        if "q" in stated:
            q = mpmath.fsum((e - mean) ** 2 for e in values) / size
            target = exact("q")
            if q > 0 and abs(target - q) <= mpmath.mpf(10) ** -9 * (1 + target):
                factor = mpmath.sqrt(target / q)
                values = [mean + (e - mean) * factor for e in values]
        elif "r" in stated and "mu" not in stated:
            r = mpmath.fsum(e**2 for e in values) / size
            target = exact("r")
            if r > 0 and abs(target - r) <= mpmath.mpf(10) ** -9 * (1 + target):
                values = [e * mpmath.sqrt(target / r) for e in values]
        return tuple(values)


# --- judging verdicts ----------------------------------------------------------------------


@dataclass
class Tally:
    """What a run saw: verdicts by kind, claims tried, wrong verdicts, claims the reference could
    not judge, points evaluated."""

    verdicts: Counter = field(default_factory=Counter)
    tried: int = 0
    wrong: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # the reference itself failed
    unjudged: int = 0
    unjudged_reasons: list[str] = field(default_factory=list)
    points: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        counts = ", ".join(f"{kind} {self.verdicts[kind]}" for kind in sorted(self.verdicts))
        return (
            f"{self.tried} claims ({counts}); {len(self.wrong)} wrong verdicts; {self.unjudged} not judged "
            f"by the reference; {self.points} points evaluated; {self.seconds:.0f} s"
        )


def judge(claim: Claim, verdict: Any, tally: Tally | None = None) -> str | None:
    """Why ``verdict`` on ``claim`` is wrong, as the reference finds it, or None.  Raises
    `reference_claims.Unsupported` where the reference cannot judge it."""
    kind = verdict.verdict
    if kind not in ("proved", "refuted", "vacuous"):
        return None
    key = claim.layer
    excluded = exclusions(verdict)
    pattern = R.pattern_of(key, [claim.text, *claim.assumptions, *excluded])
    where = f"{key}: {claim.text!r} with {list(claim.assumptions)}: {kind}"
    if kind == "proved":
        empty = admits_nothing(claim.assumptions, key, pattern)
        if empty is not None:
            return f"[vacuous proof] {where}, but the assumptions leave {empty} no value"
        judged = 0
        for at in domain(claim, pattern, excluded, _stable(claim)):
            if tally is not None:
                tally.points += 1
            try:
                found = R.confirmed(claim.text, key, at)
            except R.Unsupported:
                continue  # not judged at this point (an eigenvalue on an empty subspace)
            judged += 1
            if found in (R.FALSE, R.UNDEFINED):
                point = at.describe()
                return f"[proof {found} at a point] {where} ({verdict.quantifier}), but at {point} the claim is {found}"
        if not judged and tally is not None:
            tally.unjudged += 1
        return None
    if kind == "vacuous":
        for at in domain(claim, pattern, (), _stable(claim)):
            return f"[satisfiable, said vacuous] {where}, but the assumptions hold at {at.describe()}"
        return None
    example = verdict.counterexample or {}
    base, at = counterexample_points(claim, pattern, example)
    if tally is not None:
        tally.points += 1
    if at is None:
        # No completion of the counterexample meets the assumptions: say which fails at the simplest.
        for condition in claim.assumptions:
            found = R.confirmed(condition, key, base)
            if found != R.TRUE:
                tag = "counterexample not confirmed" if found == R.UNKNOWN else "counterexample outside the assumptions"
                return f"[{tag}] {where} at {example}, but there {condition!r} is {found} (point {base.describe()})"
        return f"[counterexample not confirmed] {where} at {example}: no completion of it meets the assumptions"
    for condition in excluded:
        if R.confirmed(condition, key, at) == R.FALSE:
            point = at.describe()
            return (
                f"[counterexample excluded] {where} at {example}, a point the verdict excludes ({condition}): {point}"
            )
    if layer_epsilon_inadmissible(claim, at):
        outside = "[counterexample outside the assumptions]"
        return f"{outside} {where} at {example}, but epsilon = 0 there and no assumption admits it"
    found = R.confirmed(claim.text, key, at)
    if found not in (R.FALSE, R.UNDEFINED):
        point = at.describe()
        return f"[counterexample not confirmed] {where} at {example}, but there the claim is {found} (point {point})"
    return None


def _stable(claim: Claim) -> int:
    """A seed for the claim's random points, the same in every process."""
    return zlib.crc32(repr((claim.text, claim.layer, claim.assumptions)).encode())


def layer_epsilon_inadmissible(claim: Claim, at: R.Point) -> bool:
    return at.epsilon is not None and at.epsilon <= 0 and not admits_zero_epsilon(claim.assumptions)


_CHECKED: dict[Claim, Any] = {}


class _OutOfTime(BaseException):
    """A claim past its budget (a BaseException: the checker turns any Exception into a verdict)."""


def _out_of_time(signum: int, frame: Any) -> None:
    raise _OutOfTime


def checked(claim: Claim) -> Any:
    """The checker's verdict, within its time budget; a claim drawn twice is checked once.  In
    this process, under an interval timer: every claim then finds what the others derived and
    compiled, where a forked child per claim (``check(..., timeout=...)``) would start cold."""
    if claim not in _CHECKED:
        previous = signal.signal(signal.SIGALRM, _out_of_time)
        signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
        try:
            _CHECKED[claim] = check(claim)
        except _OutOfTime:
            _CHECKED[claim] = Fabricated("error", quantifier=f"undecided within {TIMEOUT} s")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return _CHECKED[claim]


@functools.cache
def _warm() -> None:
    """Derive every claimable quantity in this process first, outside any claim's time budget."""
    for key in KEYS:
        vocabulary(key)


def audit(claim: Claim, tally: Tally, seen: set[Claim]) -> None:
    """Check one claim and judge its verdict into ``tally`` (a claim already seen counts once)."""
    if claim in seen:
        return
    seen.add(claim)
    verdict = checked(claim)
    tally.tried += 1
    tally.verdicts[verdict.verdict] += 1
    try:
        problem = judge(claim, verdict, tally)
    except R.Unsupported as error:
        tally.unjudged += 1
        tally.unjudged_reasons.append(f"{claim.layer}: {claim.text!r} {list(claim.assumptions)}: {error}")
        return
    except Exception as error:  # a fault of the reference: reported, the hunt goes on
        tally.failures.append(f"{claim}: {verdict.verdict}: {type(error).__name__}: {error}")
        return
    if problem is not None:
        tally.wrong.append(problem)


def _varied(problems: list[str], count: int) -> list[str]:
    """Up to ``count`` problems, taken in turn from each kind (a proof false or undefined at a
    point, a vacuous proof, a counterexample outside the assumptions, ...), in the order found."""
    kinds: dict[str, list[str]] = {}
    for problem in problems:
        kind = problem.split("]")[0]
        kinds.setdefault(kind, []).append(problem)
    out: list[str] = []
    for row in itertools.zip_longest(*kinds.values()):
        out += [problem for problem in row if problem is not None]
    return out[:count]


def _report(tally: Tally, record_property: Any, name: str) -> None:
    print(f"\n{name}: {tally.line()}")
    record_property("claims_tried", tally.tried)
    record_property("verdicts", dict(tally.verdicts))
    record_property("wrong_verdicts", len(tally.wrong))
    record_property("not_judged", tally.unjudged)
    shown = "\n".join(f"- {problem}" for problem in _varied(tally.wrong, 20))
    faults = "\n".join(f"- {failure}" for failure in tally.failures[:5])
    assert not tally.failures, f"the reference failed on {len(tally.failures)} claims:\n{faults}"
    tags = Counter(problem.split("]")[0].lstrip("[") for problem in tally.wrong)
    kinds = ", ".join(f"{tag} {count}" for tag, count in tags.most_common())
    assert not tally.wrong, f"{len(tally.wrong)} wrong verdicts among {tally.tried} claims ({kinds}):\n{shown}"


def _hunt(number: int, examples: int, record_property: Any, name: str) -> Tally:
    _warm()
    tally = Tally()
    seen: set[Claim] = set()
    start = time.monotonic()

    @seed(number)
    @settings(
        max_examples=examples,
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(claim=claims())
    def run(claim: Claim) -> None:
        audit(claim, tally, seen)

    run()
    tally.seconds = time.monotonic() - start
    _report(tally, record_property, name)
    return tally


# --- the tests -----------------------------------------------------------------------------


@dataclass
class Fabricated:
    """A verdict made up for the harness to judge: what `judge` reads of a real one."""

    verdict: str
    counterexample: dict[str, Any] | None = None
    excluded: tuple[str, ...] = ()
    quantifier: str = "fabricated"


# The fast tier takes 50 claims; the slow tier SLOW_CHUNKS chunks of SLOW_CLAIMS, each chunk its own
# seed, that pytest-xdist spreads over its workers.
CHUNKS = [
    pytest.param(1_000_000, FAST_CLAIMS, id="fast"),
    *(pytest.param(chunk, SLOW_CLAIMS, id=f"chunk{chunk}", marks=pytest.mark.slow) for chunk in range(SLOW_CHUNKS)),
]


@pytest.mark.parametrize(("number", "examples"), CHUNKS)
def test_random_claims_get_sound_verdicts(number, examples, record_property):
    """Every verdict on ``examples`` random claims (Hypothesis, seeded by ``number``) is sound."""
    _hunt(number, examples, record_property, f"seed {number}")


@pytest.mark.parametrize(
    ("claim", "verdict", "counterexample"),
    [
        (Claim("slope_at_zero == 1/epsilon", "layernorm"), "proved", None),
        (Claim("q/q == 1", "layernorm"), "proved", None),
        (Claim("gamma_max > 0", "layernorm_affine"), "proved", None),
        (Claim("slope_at_zero == 1/sqrt(epsilon)", "layernorm", ("epsilon < 0",)), "proved", None),
        (Claim("slope_at_zero == 1/sqrt(epsilon)", "layernorm"), "refuted", {"epsilon": 0.25}),
        (Claim("q > 1", "layernorm", ("q > 3*epsilon",)), "refuted", {"epsilon": 0.25, "x": [0.0, 0.0]}),
        (Claim("response == 1", "layernorm", ("epsilon == 1",)), "vacuous", None),
    ],
)
def test_the_harness_flags_a_fabricated_wrong_verdict(claim, verdict, counterexample):
    """The property can fail: a wrong proof (false at t, q or gamma = 0, or vacuous), a refutation
    at a point where the claim holds or the assumptions do not, and a wrong vacuous verdict are
    each found."""
    fabricated = Fabricated(verdict, counterexample)
    assert judge(claim, fabricated) is not None


def test_the_harness_accepts_sound_verdicts():
    """And it does not flag a verdict that is right: a proof of a true claim, a proof that
    excludes the point where the claim is undefined, a refutation at a real counterexample."""
    sound = [
        (Claim("slope_at_zero == 1/sqrt(epsilon)", "layernorm"), "proved", None, ()),
        (Claim("q/q == 1", "layernorm"), "proved", None, ("q != 0",)),
        (Claim("spectral_norm == 1/sqrt(q + epsilon)", "layernorm"), "refuted", {"epsilon": 0.25, "x": [-1, 1]}, ()),
        (Claim("gamma_max > 0", "layernorm_affine"), "refuted", {"gamma_max": 0, "n": 2}, ()),
    ]
    for claim, kind, example, excluded in sound:
        assert judge(claim, Fabricated(kind, example, excluded)) is None, claim


@pytest.mark.parametrize(
    "text",
    [
        "limit(t/((a - 1)*t + t**2), t, 0) * (a - 1) == 1",  # no limit at a = 1, hidden by the factor t
        "limit((a - 1)/((a - 1)**2 + t**2), t, 0) * (a - 1) == 1",  # 0 at a = 1
    ],
)
def test_a_limit_that_fails_at_one_value_of_a_scalar_is_never_proved(text):
    """Claims the prover proves for every a (a known gap, CHANGELOG): the audit finds each false
    or undefined at a = 1, so the verdict is an error saying so, or a refutation at a = 1."""
    verdict = check(Claim(text, "layernorm"))
    assert verdict.verdict in ("error", "refuted"), verdict.detail
    assert "a: 1" in verdict.detail
