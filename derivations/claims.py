"""Verdicts on claims about a layer: proved, refuted (with a counterexample), supported, or error.

A claim is parsed by `derivations.claim_language` into a relation between
expressions in the layer's derived quantities and symbols.  The checker
first tries to prove it for every admissible value (case by case where a
quantity is piecewise in n); failing that it evaluates both sides at
sampled points, edge cases first, at 30 significant digits, and either
reports the first violation as a counterexample or the number of points
checked and the worst margin.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

import mpmath
import sympy as sp

from derivations import eigen, moments, response, spectral
from derivations._layer import Layer, Pattern
from derivations._proof import DerivationError, less_equal
from derivations._symbols import beta, epsilon, gamma, gamma_max, n, s, t
from derivations.catalog import LAYERS
from derivations.claim_language import ClaimError, Relation, parse, parse_condition

VERDICTS = ("proved", "refuted", "supported", "error")

# Sample grids, nicest values first so that the first violation found reads well.
_GRID: dict[str, tuple[sp.Rational, ...]] = {
    "n": tuple(map(sp.Integer, (2, 3, 4, 5, 8, 64, 768))),
    "epsilon": tuple(map(sp.Rational, ("1/4", "1", "1/100", "4", "1/100000", "100", "1/100000000"))),
    "stat": tuple(map(sp.Rational, ("1", "0", "1/4", "4", "1/1000000", "1/100", "100", "1000000"))),
    "t": tuple(map(sp.Rational, ("1", "0", "-1", "1/2", "-1/10", "3", "-3", "1000", "-1000"))),
    "gain": tuple(map(sp.Rational, ("1", "-2", "1/2", "3", "-1/10"))),
}
_MAX_POINTS = 3000
_DIGITS = 30
# Relative size of a difference taken as a violation at 30 digits.
_TOLERANCE = sp.Rational(1, 10**15)


@dataclass(frozen=True)
class Claim:
    """One claim to check, as a reviewer writes it."""

    text: str
    layer: str = "layernorm"
    assumptions: tuple[str, ...] = ()
    expect: str | None = None
    id: str = "claim"


@dataclass
class Verdict:
    """The outcome for one claim."""

    claim: Claim
    verdict: str
    detail: str
    counterexample: dict[str, Any] | None = None
    quantities: tuple[str, ...] = field(default=())

    @property
    def met(self) -> bool:
        """Whether the verdict is what the claim expects (by default: proved or supported)."""
        if self.claim.expect is not None:
            return self.verdict == self.claim.expect
        return self.verdict in ("proved", "supported")

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.claim.id,
            "claim": self.claim.text,
            "layer": self.claim.layer,
            "verdict": self.verdict,
            "detail": self.detail,
        }
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        if self.claim.expect is not None:
            out["expect"] = self.claim.expect
        return out


@dataclass(frozen=True)
class Vocabulary:
    """What a claim about one layer may name.

    Quantities are derived on first use: a claim about the slope at zero does
    not wait for the eigenstructure.
    """

    makers: Mapping[str, Callable[[], sp.Expr]]  # derived quantity -> how to derive it
    symbols: Mapping[str, sp.Expr]  # symbol name -> SymPy object (s -> sqrt(q + epsilon))
    placeholders: Mapping[str, sp.Symbol]  # derived quantity -> stand-in symbol

    def names(self) -> dict[str, sp.Expr]:
        return {**self.symbols, **self.placeholders, "oo": sp.oo}

    def quantity(self, name: str) -> sp.Expr:
        return self.makers[name]()

    def expand(self, expr: sp.Expr) -> sp.Expr:
        """Replace each quantity's stand-in by its derived expression."""
        used = {name: stand_in for name, stand_in in self.placeholders.items() if expr.has(stand_in)}
        return expr.xreplace({stand_in: self.quantity(name) for name, stand_in in used.items()})


def _slope_at_zero(layer: Layer, pattern: Pattern) -> sp.Expr:
    return response.slope_at_zero(layer, pattern)[1]


def _asymptote(layer: Layer, pattern: Pattern) -> sp.Expr:
    return response.asymptote(layer, pattern)[0]


def _eigenvalue(layer: Layer, position: int) -> sp.Expr:
    return eigen.eigenpairs(layer)[position].value


def _bound(layer: Layer) -> sp.Expr:
    if layer.base is not None:
        return gamma_max * spectral.bound(layer.base)[0]
    return spectral.bound(layer)[0]


def _makers(layer: Layer) -> dict[str, Callable[[], sp.Expr]]:
    out: dict[str, Callable[[], sp.Expr]] = {}
    for p in layer.patterns:
        out[f"response{p.suffix}"] = partial(response.response, layer, p)
        out[f"slope{p.suffix}"] = partial(response.slope, layer, p)
        out[f"slope_at_zero{p.suffix}"] = partial(_slope_at_zero, layer, p)
        out[f"asymptote{p.suffix}"] = partial(_asymptote, layer, p)
    for position, direction in enumerate(layer.directions):
        out[f"eigen_{direction.name}"] = partial(_eigenvalue, layer, position)
    if layer.base is None:
        out["spectral_norm"] = partial(spectral.spectral_norm, layer)
        out["second_moment"] = partial(moments.second_moment, layer)
    out["spectral_bound"] = partial(_bound, layer)
    return {name: cache(make) for name, make in out.items()}


@cache
def vocabulary(key: str) -> Vocabulary:
    """The names a claim about layer ``key`` may use."""
    if key not in LAYERS:
        raise ClaimError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}")
    layer = LAYERS[key]
    symbols: dict[str, sp.Expr] = {"t": t, "epsilon": epsilon, "n": n}
    symbols.update({str(stat.symbol): stat.symbol for stat in layer.statistics if str(stat.symbol) != "mu"})
    for old, new in layer.display:
        if new == s:
            symbols["s"] = old  # s is the display name of sqrt(q + epsilon)
    if layer.gain is not None:
        coordinate = layer.patterns[0].coordinate
        symbols.update({"gamma": gamma[coordinate], "beta": beta[coordinate], "gamma_max": gamma_max})
    makers = _makers(layer)
    placeholders = {name: sp.Symbol(f"<{name}>") for name in makers}
    return Vocabulary(makers, symbols, placeholders)


# --- proof -------------------------------------------------------------------


def _n_range(conditions: list[sp.Basic]) -> sp.Set:
    allowed: sp.Set = sp.Range(2, sp.oo)
    for condition in conditions:
        if condition.free_symbols == {n}:
            allowed = allowed.intersect(condition.as_set())
    return allowed


def _normalize(where: sp.Set) -> sp.Set:
    """Range(2, oo) minus {2} as Range(3, oo): SymPy leaves such differences unevaluated."""
    if isinstance(where, sp.Complement) and isinstance(where.args[0], sp.Range):
        kept, removed = where.args
        while kept.size != 0 and kept.inf in removed:
            kept = sp.Range(kept.inf + 1, kept.sup + 1 if kept.sup != sp.oo else sp.oo)
        if kept.intersect(removed) == sp.EmptySet:
            return kept
    return where


def _partition(expr: sp.Expr, allowed: sp.Set) -> list[sp.Set]:
    """The sets of n on which every Piecewise in ``expr`` keeps one branch."""
    parts = [allowed]
    for piecewise in expr.atoms(sp.Piecewise):
        refined = []
        for part in parts:
            rest = part
            for _, condition in piecewise.args:
                where = _normalize(rest if condition is sp.true else rest.intersect(condition.as_set()))
                if where != sp.EmptySet:
                    refined.append(where)
                rest = _normalize(rest - where)
        parts = refined
    return parts


def _restrict(expr: sp.Expr, where: sp.Set) -> sp.Expr:
    """``expr`` with each Piecewise replaced by its branch for n in ``where``."""

    def branch(piecewise: sp.Piecewise) -> sp.Expr:
        for value, condition in piecewise.args:
            if condition is sp.true or where.is_subset(condition.as_set()):
                return value
        raise DerivationError(f"no single branch of {piecewise} on {where}")

    return expr.replace(lambda e: isinstance(e, sp.Piecewise), branch)


def describe_n(where: sp.Set) -> str:
    """``n >= 3``, ``n = 2``, ... for a set of feature counts."""
    if isinstance(where, sp.Range) and where.sup == sp.oo:
        return f"n >= {where.inf}"
    if isinstance(where, (sp.Range, sp.FiniteSet)) and where.inf == where.sup:
        return f"n = {where.inf}"
    if isinstance(where, sp.Range):
        return f"{where.inf} <= n <= {where.sup}"
    if isinstance(where, sp.FiniteSet):
        return "n in {" + ", ".join(map(str, where)) + "}"
    return f"n in {where}"


def _is_zero(expr: sp.Expr) -> str | None:
    tactics = (("expand", sp.expand), ("cancel", lambda e: sp.cancel(sp.together(e))), ("simplify", sp.simplify))
    for name, tactic in tactics:
        if tactic(expr) == 0:
            return f"simplification to 0 ({name})"
    return None


def _prove_case(lhs: sp.Expr, op: str, rhs: sp.Expr) -> str | None:
    if op == "==":
        return _is_zero(lhs - rhs)
    small, large = (lhs, rhs) if op in ("<=", "<") else (rhs, lhs)
    if op in ("<", ">"):
        difference = sp.factor(sp.together(large - small))
        return "the difference is positive under the assumptions" if difference.is_positive else None
    try:
        return f"reduced to a known-nonnegative form: {less_equal(small, large, 'claim')}"
    except DerivationError:
        return None


def _strengthened(relation: Relation, conditions: list[sp.Basic]) -> Relation:
    """The relation with each symbol assumed positive (``q > 0``) replaced by a positive one,
    so that the proof tactics can use the assumption; other assumptions only restrict sampling."""
    swap = {}
    for condition in conditions:
        if isinstance(condition, sp.StrictGreaterThan) and condition.rhs == 0 and condition.lhs.is_Symbol:
            swap[condition.lhs] = sp.Dummy(str(condition.lhs), positive=True)
    return Relation(relation.lhs.xreplace(swap), relation.op, relation.rhs.xreplace(swap))


def _prove(relation: Relation, allowed: sp.Set) -> str | None:
    """How the relation holds for every admissible value, or None."""
    pieces = []
    for where in _partition(relation.lhs - relation.rhs, allowed):
        how = _prove_case(_restrict(relation.lhs, where), relation.op, _restrict(relation.rhs, where))
        if how is None:
            return None
        pieces.append(f"{describe_n(where)}: {how}")
    return "; ".join(pieces)


# --- sampling ----------------------------------------------------------------


def _grid_for(symbol: sp.Basic) -> tuple[sp.Expr, ...]:
    if symbol == n:
        return _GRID["n"]
    if symbol == epsilon:
        return _GRID["epsilon"]
    if symbol == t:
        return _GRID["t"]
    if symbol in (gamma_max,):
        return tuple(abs(g) for g in _GRID["gain"] if g != 0)
    if isinstance(symbol, sp.Indexed):
        return _GRID["gain"]
    return _GRID["stat"]


def _points(symbols: list[sp.Basic], conditions: list[sp.Basic]) -> Iterator[dict[sp.Basic, sp.Expr]]:
    grids = [_grid_for(symbol) for symbol in symbols]
    for count, values in enumerate(itertools.product(*grids)):
        if count >= _MAX_POINTS:
            return
        point = dict(zip(symbols, values, strict=True))
        if all(bool(condition.xreplace(point)) for condition in conditions):
            yield point


def _evaluate(expr: sp.Expr, point: Mapping[sp.Basic, sp.Expr]) -> mpmath.mpf | None:
    try:
        value = sp.N(expr.xreplace(dict(point)), _DIGITS)
    except (ZeroDivisionError, TypeError, ValueError):
        return None
    if not value.is_real or not value.is_finite:
        return None
    return value


def _margin(lhs: sp.Expr, op: str, rhs: sp.Expr) -> sp.Expr:
    """How far the relation is from failing, relative to the sides' size; < 0 means it fails."""
    scale = sp.Max(1, abs(lhs), abs(rhs))
    if op == "==":
        return _TOLERANCE - abs(lhs - rhs) / scale
    if op in ("<=", ">="):
        gap = (rhs - lhs) if op == "<=" else (lhs - rhs)
        return gap / scale + _TOLERANCE
    gap = (rhs - lhs) if op == "<" else (lhs - rhs)
    return gap / scale - _TOLERANCE


def _name(symbol: sp.Basic) -> str:
    return str(symbol.base) if isinstance(symbol, sp.Indexed) else str(symbol)


def _as_number(value: sp.Expr) -> int | float:
    return int(value) if value.is_Integer else float(value)


# --- the checker -------------------------------------------------------------

Confirm = Callable[[str, Relation, Vocabulary, dict[str, Any]], str]


def check(claim: Claim, confirm: Confirm | None = None) -> Verdict:
    """The verdict on ``claim``; ``confirm`` re-checks a counterexample numerically."""
    try:
        words = vocabulary(claim.layer)
        parsed = parse(claim.text, words.names(), {"t": t}, words.expand)
        conditions = [parse_condition(c, words.symbols).as_sympy() for c in claim.assumptions]
    except ClaimError as error:
        return Verdict(claim, "error", str(error))
    relation = Relation(words.expand(parsed.lhs), parsed.op, words.expand(parsed.rhs))
    used = tuple(name for name, stand_in in words.placeholders.items() if parsed.as_sympy().has(stand_in))
    allowed = _n_range(conditions)
    if allowed == sp.EmptySet:
        return Verdict(claim, "error", "the assumptions leave no admissible n >= 2", quantities=used)
    how = _prove(_strengthened(relation, conditions), allowed)
    others = [text for text, c in zip(claim.assumptions, conditions, strict=True) if c.free_symbols != {n}]
    domain = ", ".join(["epsilon > 0", describe_n(allowed), *others])
    if how is not None:
        return Verdict(claim, "proved", f"proved for all values with {domain}. {how}", quantities=used)
    return _sample(claim, parsed, relation, conditions, allowed, domain, used, words, confirm)


def _sample(
    claim: Claim,
    parsed: Relation,
    relation: Relation,
    conditions: list[sp.Basic],
    allowed: sp.Set,
    domain: str,
    used: tuple[str, ...],
    words: Vocabulary,
    confirm: Confirm | None,
) -> Verdict:
    # What a point must fix: plain symbols (n included, through a Piecewise's
    # conditions) and indexed entries such as gamma[2], not their bases.
    difference = relation.lhs - relation.rhs
    indexed = difference.atoms(sp.Indexed)
    inside = {s for entry in indexed for s in entry.free_symbols}
    free = sorted((difference.free_symbols - inside) | indexed, key=sp.default_sort_key)
    n_conditions = [*conditions, *([sp.Contains(n, allowed)] if n in free else [])]
    checked, worst = 0, None
    margin = _margin(relation.lhs, relation.op, relation.rhs)
    for point in _points(free, n_conditions):
        value = _evaluate(margin, point)
        if value is None:
            continue
        checked += 1
        worst = value if worst is None else min(worst, value)
        if value < 0:
            example = {_name(symbol): _as_number(v) for symbol, v in point.items()}
            sides = f"lhs = {sp.N(relation.lhs.xreplace(point), 8)}, rhs = {sp.N(relation.rhs.xreplace(point), 8)}"
            detail = f"fails at {example}: {sides}"
            if confirm is not None:
                detail += "; " + confirm(claim.layer, parsed, words, example)
            return Verdict(claim, "refuted", detail, example, quantities=used)
    if checked == 0:
        return Verdict(claim, "error", f"no admissible point to evaluate under {domain}", quantities=used)
    return Verdict(
        claim,
        "supported",
        f"not proved; no violation at {checked} sampled points (edge cases 0, tiny and huge values included) "
        f"with {domain}; worst relative margin {sp.N(worst, 3)}",
        quantities=used,
    )


# --- claim files -------------------------------------------------------------

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
                layer=entry.get("layer", "layernorm"),
                assumptions=tuple(assumptions),
                expect=expect,
                id=entry.get("id", f"claim-{number}"),
            )
        )
    return claims
