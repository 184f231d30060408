r"""The one domain of a claim: every value it is checked for, built in small named steps.

A claim is checked over a `Domain`, and everything downstream derives from it:
what is substituted, which properties a symbol has, which points are
sampled and audited, and the quantifier the verdict prints.  It is built from

- the layer's natural ranges: epsilon > 0 (>= 0 only where an assumption admits
  0 itself: ``epsilon == 0``, ``epsilon >= 0``, ``epsilon <= 0``), n >= 2, each
  statistic's own range (q >= 0, r >= 0, ...), ``gamma_max = max|gamma_i| >= 0``
  (0 exactly at gamma = 0), t and the layer's scalars real;
- the input: a general x, or the input pattern the claim's quantities are taken
  at, with the statistics that pattern fixes (q = 2t^2/3 on (-t, 0, t)), so that an
  assumption on a statistic is a condition on t there;
- every assumption.

The steps, in order: `read` the assumptions, take the `fixed` values (two that
differ leave no input: `Vacuous`), `narrow` each symbol's range by the
assumptions on it alone (an empty range: `Vacuous`), `place` the input, give
each symbol the properties its range guarantees and no more (`renamed`), find
where the claim is `undefined` and exclude those points, and take the limits
(`derivations.claims.limits`).  `Domain.quantifier` then says what was covered.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import sympy as sp
from sympy.printing.str import StrPrinter

from derivations import LAYERS, quantities
from derivations.claims import limits, sampling, solver
from derivations.claims.definedness import Requirement
from derivations.claims.language import NOT_CONSTANT, ClaimError, Lim, Relation, parse_expression, phrase
from derivations.claims.proof import describe_n
from derivations.claims.semantics import Equal, Matrix, OpaqueNorm, Row, Usage, Vector, build, mean_statistic
from derivations.core.layer import Layer, Pattern
from derivations.derive import scaling
from derivations.derive.sums import PowerSum
from derivations.symbols import epsilon, gamma_max, gemma_max, i, j, mu, n, q, x

# The largest of |gain_i|: nonnegative, and 0 exactly where the whole gain is.
LARGEST_GAINS = {gamma_max: "gamma", gemma_max: "1 + w"}


class Vacuous(Exception):
    """The assumptions admit no input; the message names the conflict."""


@dataclass(frozen=True)
class Assumption:
    """One assumption as written, and as a relation over the derivations' symbols."""

    text: str
    relation: sp.Basic


@dataclass(frozen=True)
class Exclusion:
    """Points where a side is undefined: the claim is checked where ``condition`` holds."""

    condition: sp.Basic
    text: str
    origin: str


@dataclass
class Domain:
    """Everything a claim is checked for; see the module's docstring."""

    layers: list[Layer]
    usage: Usage
    assumptions: list[Assumption]
    ranges: dict[sp.Basic, sp.Set]
    fixed: dict[sp.Basic, sp.Expr] = field(default_factory=dict)
    conditions: list[sp.Basic] = field(default_factory=list)
    mapping: dict[sp.Basic, sp.Expr] = field(default_factory=dict)  # statistics -> coordinates or pattern values
    pattern: Pattern | None = None
    inputs: bool = False  # sampled as explicit vectors
    pinned: dict[sp.Basic, sp.Expr] = field(default_factory=dict)  # statistics the assumptions fix
    rename: dict[sp.Basic, sp.Basic] = field(default_factory=dict)  # derivation symbol -> the domain's
    exclusions: list[Exclusion] = field(default_factory=list)
    missing: list[limits.Nonexistent] = field(default_factory=list)  # limits that do not exist
    epsilon_zero: bool = False  # whether an assumption admits epsilon = 0
    named: set[sp.Basic] = field(default_factory=set)  # the symbols the claim's sides name
    vectors: bool = False  # whether a side needs explicit vectors (a sum the statistics do not fix)
    free: list[str] = field(default_factory=list)  # the symbols left free once settled
    outside: str = ""  # why z3 cannot decide the claim: the part outside the algebraic fragment
    undecided: bool = False  # whether it is unknown if the assumptions admit any input
    assumed: dict[sp.Basic, sp.Set] = field(default_factory=dict)  # the ranges before any exclusion

    @property
    def n_set(self) -> sp.Set:
        return self.ranges[n]

    def symbol(self, symbol: sp.Basic) -> sp.Basic:
        """The domain's own symbol for a derivation symbol (with the properties the domain guarantees)."""
        return self.rename.get(symbol, symbol)

    def apply(self, value: Any) -> Any:
        """A side with the statistics mapped, the fixed values put in and the domain's symbols,
        in one substitution: a relation is never evaluated with a property the domain drops."""
        after = {**self.rename, **{s: v.xreplace(self.rename) for s, v in self.fixed.items()}}
        whole = {**after, **{s: v.xreplace(after) for s, v in self.mapping.items()}}
        return substitute(value, whole)

    def statistics(self) -> set[sp.Basic]:
        return {stat.symbol for layer in self.layers for stat in layer.statistics}

    def quantifier(self, key: str) -> str:
        return _quantifier(self, key)

    @property
    def excluded(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(exclusion.text for exclusion in self.exclusions))

    def summary(self) -> dict[str, Any]:
        """The domain as plain data (JSON): what the verdict quantified over."""
        return {
            "n": describe_n(self.n_set),
            "epsilon": _epsilon_text(self),
            "input": "pattern " + str(self.pattern) if self.pattern is not None else "general x",
            "assumptions": [a.text for a in self.assumptions],
            "excluded": list(self.excluded),
        }


# --- the steps ----------------------------------------------------------------------


def build_domain(key: str, texts: Iterable[str], usage: Usage, lhs: Any, rhs: Any) -> Domain:
    """The domain of the claim ``lhs op rhs`` about ``key``, which uses ``usage``, under the
    assumptions ``texts``."""
    assumptions = [read(text, key, usage) for text in texts]
    layers = [LAYERS[name] for name in sorted(usage.layers)] or [LAYERS[key]]
    domain = Domain(layers, usage, assumptions, natural_ranges(layers, assumptions))
    domain.named = _leaves_of(lhs) | _leaves_of(rhs)
    domain.vectors = needs_vectors(lhs, rhs)
    domain.epsilon_zero = 0 in domain.ranges[epsilon]
    fixed, rest = fixed_values(domain, [a for a in assumptions if a.relation is not sp.true])
    domain.fixed = fixed
    domain.conditions = narrow(domain, rest)
    couple_gains(domain)
    place(domain)
    return domain


def read(text: str, key: str, claim_usage: Usage) -> Assumption:
    """An assumption: a relation between scalars that names symbols, never derived quantities.

    Written as papers write it, it is translated first (`in_relations`): ``x is not constant``,
    ``a != b`` where a cannot be below b (``q != 0``, ``norm(c) != 0``), and ``v != 0`` for a
    vector v.  The assumption keeps its own text."""
    try:
        translated = in_relations(text, key)
        if translated != text:
            return dataclasses.replace(read(translated, key, claim_usage), text=text)
        lhs, op, rhs, usage = build(text, key)
    except ClaimError as error:
        if str(error).startswith("assumption "):
            raise
        raise ClaimError(f"assumption {text!r}: {str(error).replace('the claim', 'it')}") from None
    # A statistic named in an assumption belongs to the same input as the claim's.
    claim_usage.layers |= usage.layers
    if not (isinstance(lhs, sp.Expr) and isinstance(rhs, sp.Expr)):
        raise ClaimError(f"assumption {text!r} must compare scalars")
    if usage.quantities or lhs.has(Lim) or rhs.has(Lim):
        raise ClaimError(f"assumption {text!r} may name symbols only, not derived quantities")
    relation = Relation(lhs, op, rhs).as_sympy()
    if not relation.free_symbols - {sp.Symbol("i", integer=True, nonnegative=True)}:
        if sampling.decide(lhs, op, rhs, {}) is not True:
            raise Vacuous(f"the assumption {text} is false")
        return Assumption(text, sp.true)
    return Assumption(text, relation)


def in_relations(text: str, key: str) -> str:
    """``text`` in the relations the checker reads (<, <=, >=, >, ==), or ``text`` itself."""
    if phrase(text) in NOT_CONSTANT:
        return _not_constant(text, key)
    body = parse_expression(text, {}, {})
    if not (isinstance(body, ast.Compare) and len(body.ops) == 1 and isinstance(body.ops[0], ast.NotEq)):
        return text
    return _not_equal(text, key, body)


def _not_constant(text: str, key: str) -> str:
    """ "x is not constant" for a centering layer: its centered variance is positive."""
    if not scaling.translation_invariant(LAYERS[key]):
        raise ClaimError(
            f"assumption {text!r}: {key} does not center x, so no statistic of it says x is not constant; "
            "state the condition in its statistics, e.g. norm(x) > 0 for x != 0"
        )
    return "q > 0" if q in {stat.symbol for stat in LAYERS[key].statistics} else "norm(c) > 0"


def _not_equal(text: str, key: str, body: ast.Compare) -> str:
    """``a != b`` as ``a > b`` where a cannot be below b (or ``a < b``); ``v != 0`` for a vector
    as ``norm(v) > 0``."""
    source = text.strip()
    left = ast.get_source_segment(source, body.left) or ""
    right = ast.get_source_segment(source, body.comparators[0]) or ""
    if right == "0" and left in ("x", "c", "y", "g", "v"):
        return f"norm({left}) > 0"
    lhs, _, rhs, _ = build(f"{left} >= {right}", key)  # >= and != are as long: columns stay right
    difference = sp.expand(lhs - rhs) if isinstance(lhs, sp.Expr) and isinstance(rhs, sp.Expr) else None
    if difference is not None and (difference.is_nonnegative or (_is_norm(body.left) and right == "0")):
        return f"{left} > {right}"
    if difference is not None and (difference.is_nonpositive or (_is_norm(body.comparators[0]) and left == "0")):
        return f"{left} < {right}"
    raise ClaimError(
        f"assumption {text!r}: != is read as > or < where one side cannot be below the other; "
        f"write {left} > {right} or {left} < {right}"
    )


def _is_norm(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "norm"


def natural_ranges(layers: list[Layer], assumptions: list[Assumption]) -> dict[sp.Basic, sp.Set]:
    """Each symbol's range before any assumption: epsilon > 0 (or >= 0 where an assumption
    admits 0 itself), n >= 2; any other symbol takes its range from its properties."""
    admits_zero = any(_admits_zero(a.relation) for a in assumptions)
    return {
        epsilon: sp.Interval(0, sp.oo) if admits_zero else sp.Interval.open(0, sp.oo),
        n: sp.Range(2, sp.oo),
        **{largest: sp.Interval(0, sp.oo) for largest in LARGEST_GAINS},
    }


@cache
def _admits_zero(relation: sp.Basic) -> bool:
    """``epsilon == 0``, ``epsilon >= 0``, ``epsilon <= 0`` (either way round): a bound on epsilon
    alone whose set holds 0 as an end point, so 0 is what the assumption is about."""
    if not isinstance(relation, sp.core.relational.Relational) or relation.free_symbols != {epsilon}:
        return False
    stand_in = sp.Symbol("epsilon", real=True)
    try:
        admitted = relation.xreplace({epsilon: stand_in}).as_set()
    except (NotImplementedError, TypeError, ValueError):
        return False
    return bool(admitted.contains(0) is sp.true and 0 in admitted.boundary)


def natural_range(domain: Domain, symbol: sp.Basic) -> sp.Set:
    if symbol in domain.ranges:
        return domain.ranges[symbol]
    if symbol.is_positive:
        return sp.Interval.open(0, sp.oo)
    if symbol.is_nonnegative:
        return sp.Interval(0, sp.oo)
    return sp.S.Reals


def _range_text(domain: Domain, symbol: sp.Basic) -> str:
    if symbol == epsilon:
        return "the layer needs epsilon >= 0" if domain.epsilon_zero else "epsilon > 0 (assume epsilon >= 0 to admit 0)"
    if symbol == n:
        return "n is an integer >= 2"
    if symbol in LARGEST_GAINS:
        return f"{symbol} = max|{LARGEST_GAINS[symbol]}_i| >= 0"
    meaning = {stat.symbol: stat.meaning for layer in domain.layers for stat in layer.statistics}.get(symbol)
    shown = _interval_text(symbol, natural_range(domain, symbol))
    return f"{shown} ({meaning})" if meaning else shown


def _interval_text(symbol: sp.Basic, where: sp.Set) -> str:
    if where == sp.Interval(0, sp.oo):
        return f"{symbol} >= 0"
    if where == sp.Interval.open(0, sp.oo):
        return f"{symbol} > 0"
    return f"{symbol} in {where}"


def fixed_values(domain: Domain, assumptions: list[Assumption]) -> tuple[dict, list[Assumption]]:
    """The values ``symbol == number`` fixes; two different values for one symbol, or a value
    outside its range, leave no input (`Vacuous`, naming both)."""
    fixed: dict[sp.Basic, sp.Expr] = {}
    source: dict[sp.Basic, str] = {}
    rest = []
    for assumption in assumptions:
        found = _fixes(assumption.relation)
        if found is None:
            rest.append(assumption)
            continue
        symbol, value = found
        if symbol in fixed and sp.simplify(fixed[symbol] - value) != 0:
            raise Vacuous(f"{source[symbol]} and {assumption.text} contradict each other")
        if symbol == n and value == 1:
            _one_feature(domain, assumption.text)
        if natural_range(domain, symbol).contains(value) is not sp.true:
            raise Vacuous(f"{assumption.text}, but {_range_text(domain, symbol)}")
        fixed[symbol], source[symbol] = value, assumption.text
    for symbol, value in fixed.items():
        domain.ranges[symbol] = sp.FiniteSet(value)
    return fixed, rest


def _one_feature(domain: Domain, text: str) -> None:
    """A claim at n = 1: refused in one line that says what the layer is there."""
    shown = []
    for layer in domain.layers:
        try:
            shown.append(
                f"{layer.key} is y_0 = {sp.sstr(layer.explicit_entry(1, 0).xreplace({x[0]: sp.Symbol('x_0')}))}"
            )
        except Exception:  # a layer that needs two entries (a partial mean of one) shows nothing
            continue
    there = f" (there {'; '.join(shown)})" if shown else ""
    raise ClaimError(f"{text}: n = 1 is outside what the derivations cover, which is n >= 2{there}")


def _fixes(relation: sp.Basic) -> tuple[sp.Basic, sp.Expr] | None:
    if not isinstance(relation, sp.Eq):
        return None
    for symbol, value in ((relation.lhs, relation.rhs), (relation.rhs, relation.lhs)):
        if (symbol.is_Symbol or isinstance(symbol, sp.Indexed)) and value.is_number and value.is_extended_real:
            return symbol, value
    return None


def narrow(domain: Domain, assumptions: list[Assumption]) -> list[sp.Basic]:
    """Each remaining assumption with the fixed values put in: one that fails leaves no input;
    one on a single symbol narrows that symbol's range (an empty range leaves no input). The
    relations that remain are returned, to be met by every sampled point."""
    kept = []
    by_symbol: dict[sp.Basic, list[str]] = {}
    for assumption in assumptions:
        relation = substitute(assumption.relation, domain.fixed)
        if relation is sp.false:
            fixed = ", ".join(f"{s} = {v}" for s, v in domain.fixed.items() if assumption.relation.has(s))
            raise Vacuous(f"{assumption.text} fails where {fixed}")
        if relation is sp.true:
            continue
        kept.append(relation)
        symbols = _leaves(relation)
        if len(symbols) == 1:
            (symbol,) = symbols
            by_symbol.setdefault(symbol, []).append(assumption.text)
            _narrow_one(domain, symbol, relation, by_symbol[symbol])
    return kept


def _narrow_one(domain: Domain, symbol: sp.Basic, relation: sp.Basic, texts: list[str]) -> None:
    admitted = _admitted(symbol, relation)
    if admitted is None:
        return
    if symbol == n:
        admitted = admitted.intersect(sp.S.Integers)
    narrowed = natural_range(domain, symbol).intersect(admitted)
    only_one = admitted.contains(1) is sp.true and admitted.intersect(sp.Interval(2, sp.oo)).is_empty
    if symbol == n and len(texts) == 1 and only_one:
        _one_feature(domain, texts[0])
    if narrowed == sp.EmptySet or (symbol == n and _no_integer(narrowed)):
        why = " and ".join(texts)
        unused = "" if symbol in _claim_symbols(domain) else f"; {symbol} does not appear in the claim"
        raise Vacuous(f"{why}, but {_range_text(domain, symbol)}{unused}")
    domain.ranges[symbol] = narrowed
    if isinstance(narrowed, (sp.FiniteSet, sp.Range)) and narrowed.is_finite_set and len(narrowed) == 1:
        (value,) = narrowed
        domain.fixed[symbol] = value


@cache
def _admitted(symbol: sp.Basic, relation: sp.Basic) -> sp.Set | None:
    """The values of ``symbol`` a relation on it alone admits, as a set of reals (None: unknown)."""
    stand_in = sp.Symbol("z", real=True)
    try:
        return relation.xreplace({symbol: stand_in}).as_set().xreplace({stand_in: symbol})
    except (NotImplementedError, TypeError, ValueError, AttributeError):
        return None


def _no_integer(where: sp.Set) -> bool:
    try:
        return where.is_empty is True or (isinstance(where, sp.Range) and where.size == 0)
    except (ValueError, TypeError):
        return False


def _claim_symbols(domain: Domain) -> set[sp.Basic]:
    return domain.named


def _leaves(expr: sp.Basic) -> set[sp.Basic]:
    """Free symbols, an entry such as gamma[2] counted as one symbol."""
    entries = expr.atoms(sp.Indexed)
    inside = {s for e in entries for s in e.free_symbols}
    return (expr.free_symbols - inside) | entries


# --- the input ------------------------------------------------------------------------


def place(domain: Domain) -> None:
    """The input the claim is taken at: a general x (the statistics as coordinates), or its
    input pattern (the statistics written in t); which symbols are sampled as explicit vectors."""
    usage = domain.usage
    general = usage.general or bool(usage.vectors)
    if general:
        domain.mapping = _statistics_map(domain.layers)
    if len(usage.patterns) > 1:
        raise ClaimError("quantities of two different input patterns cannot share one input")
    if usage.patterns:
        _place_pattern(domain)
    domain.inputs = _explicit_inputs(domain)
    if domain.inputs and domain.pattern is not None:
        raise ClaimError(
            "quantities at the input pattern cannot be combined here with ones that need an explicit input "
            f"({', '.join(sorted(layer.key for layer in domain.layers))}); state the claim at the pattern or for a "
            "general x"
        )
    if domain.inputs and usage.gains:
        usage.vectors |= {"gamma", "beta"}
    _pin_statistics(domain)
    if domain.pattern is not None:
        _conditions_at_pattern(domain)


def _place_pattern(domain: Domain) -> None:
    """Take the claim's one input pattern: n is its size, and the statistics are its own."""
    (domain.pattern,) = domain.usage.patterns.values()
    size = len(domain.pattern.values)
    # The pattern's quantities are at its input, of its size: n is that size.
    if domain.n_set.contains(sp.Integer(size)) is not sp.true:
        raise Vacuous(f"the input pattern {domain.pattern} has n = {size} entries, which the assumptions exclude")
    domain.fixed[n] = sp.Integer(size)
    domain.ranges[n] = sp.FiniteSet(size)
    domain.mapping = _pattern_map(domain.layers, domain.pattern)


def _explicit_inputs(domain: Domain) -> bool:
    """Whether the claim is sampled at explicit vectors rather than at its statistics."""
    usage = domain.usage
    if usage.general and any(layer.subsets for layer in domain.layers):
        # A partial mean and a full one are not independent coordinates (k r_k <= n r):
        # sampled as explicit inputs, whose statistics are consistent by construction.
        return True
    return (usage.general and domain.vectors) or bool(usage.vectors)


def _pin_statistics(domain: Domain) -> None:
    """Move the statistics the assumptions fix into ``domain.pinned``: a condition on an explicit
    input, otherwise a fixed value still."""
    statistics = domain.statistics()
    domain.pinned = {symbol: domain.fixed.pop(symbol) for symbol in list(domain.fixed) if symbol in statistics}
    if domain.inputs:
        # Explicit inputs carry their own statistics: a statistic fixed by an assumption is a
        # condition on the input there, not a substitution.
        domain.conditions += [sp.Eq(symbol, value) for symbol, value in domain.pinned.items()]
    else:
        domain.fixed.update(domain.pinned)


def _conditions_at_pattern(domain: Domain) -> None:
    """Write the conditions, and the statistics the assumptions fix, as conditions on t at the
    input pattern, narrowed."""
    # At the pattern a statistic is a function of t: an assumption on it is a condition on t.
    domain.conditions = [substitute(c, domain.mapping) for c in domain.conditions]
    pinned = {substitute(s, domain.mapping): substitute(v, domain.fixed) for s, v in domain.pinned.items()}
    for symbol in domain.pinned:
        domain.fixed.pop(symbol, None)
    domain.conditions += [sp.Eq(lhs, rhs) for lhs, rhs in pinned.items()]
    domain.conditions = narrow(domain, [Assumption(str(c), c) for c in domain.conditions])


def _statistics_map(layers: list[Layer]) -> dict[sp.Basic, sp.Expr]:
    """Derived statistics by their definitions; statistics of several layers in one set of coordinates.

    With one layer (or layers sharing their mean statistics) the means are
    the coordinates; otherwise every mean is written in the mean mu and the
    variance q of x (a mean square r is q + mu**2), so that all describe one x.
    """
    out: dict[sp.Basic, sp.Expr] = {}
    shared = len({tuple(s.symbol for s in layer.statistics if s.mean) for layer in layers}) == 1
    for layer in layers:
        values: dict[sp.Basic, sp.Expr] = {}
        for stat in layer.statistics:
            if stat.mean and (shared or stat.symbol in (mu, q)):
                continue
            if stat.mean:
                values[stat.symbol] = _canonical_mean(stat.summand.xreplace(values))
            else:
                values[stat.symbol] = stat.summand.xreplace(values)
        out.update(values)
    return out


def _canonical_mean(summand: sp.Expr) -> sp.Expr:
    """mean over j of a polynomial in x[j], in the raw moments mean(x) = mu, mean(x^2) = q + mu^2."""
    if any(e.base != x for e in summand.atoms(sp.Indexed)):
        # A partial mean (over a subset's indicator) is not a function of mean(x) and mean(x**2).
        raise ClaimError("statistics of several layers meet only through mean(x) and mean(x**2)")
    polynomial = sp.Poly(sp.expand(summand), x[sp.Symbol("j", integer=True, nonnegative=True)])
    moments = {0: sp.Integer(1), 1: mu, 2: q + mu**2}
    total = sp.Integer(0)
    for (power,), coefficient in polynomial.terms():
        if power not in moments:
            raise ClaimError("statistics of several layers meet only through mean(x) and mean(x**2)")
        total += coefficient * moments[power]
    return sp.expand(total)


def _pattern_map(layers: list[Layer], pattern: Pattern) -> dict[sp.Basic, sp.Expr]:
    """The statistics of every used layer at the pattern's input."""
    out: dict[sp.Basic, sp.Expr] = {}
    entries = {x[m]: value for m, value in enumerate(pattern.values)}
    for layer in layers:
        for symbol, value in layer.explicit_statistics(len(pattern.values)).items():
            out[symbol] = sp.simplify(value.xreplace(entries))
    return out


# --- properties, definedness, limits -------------------------------------------------


def renamed(domain: Domain, symbols: Iterable[sp.Basic]) -> dict[sp.Basic, sp.Basic]:
    """For each symbol whose range says more or less than its properties: a symbol of the same
    name with exactly the properties its range guarantees."""
    out: dict[sp.Basic, sp.Basic] = {}
    for symbol in symbols:
        if not isinstance(symbol, sp.Symbol) or symbol == n or symbol in domain.fixed:
            continue
        if symbol.is_integer:
            continue
        properties = _properties(natural_range(domain, symbol))
        current = {key: getattr(symbol, f"is_{key}") for key in ("positive", "nonnegative", "negative", "nonzero")}
        wanted = {key: properties.get(key) for key in current}
        if any(bool(wanted[key]) != bool(current[key]) for key in current):
            out[symbol] = sp.Symbol(symbol.name, **properties)
    return out


def _properties(where: sp.Set) -> dict[str, bool]:
    if where.is_subset(sp.Interval.open(0, sp.oo)):
        return {"positive": True}
    if where.is_subset(sp.Interval(0, sp.oo)):
        return {"nonnegative": True}
    if where.is_subset(sp.Interval.open(-sp.oo, 0)):
        return {"negative": True}
    if where.is_subset(sp.Interval(-sp.oo, 0)):
        return {"nonpositive": True}
    if where.contains(0) is sp.false:
        return {"real": True, "nonzero": True}
    return {"real": True}


def settle(domain: Domain, sides: list[Any], found: list[Requirement]) -> list[Any]:
    """The sides in the domain's symbols, with the points where they are undefined excluded
    and their limits taken; returns the sides."""
    symbols = set().union(*(_leaves_of(side) for side in sides), *(_leaves(c) for c in domain.conditions))
    for requirement in found:
        symbols |= _leaves(requirement.condition)
    # First the properties the ranges guarantee (gamma_max >= 0, not > 0), so that a requirement
    # is judged with exactly what the domain knows.
    domain.rename = renamed(domain, symbols)
    # The ranges the assumptions leave, before the points where the claim is undefined are taken
    # out: the audit's points come from these, and it checks the exclusions itself.
    domain.assumed = dict(domain.ranges)
    undefined(domain, found)
    # An exclusion such as q != 0 on a nonnegative q narrows its range: q > 0 from here on.
    for exclusion in domain.exclusions:
        condition = exclusion.condition
        if isinstance(condition, sp.Ne) and condition.rhs == 0 and condition.lhs.is_Symbol:
            base = _original(domain, condition.lhs)
            domain.ranges[base] = natural_range(domain, base) - sp.FiniteSet(0)
    first = dict(domain.rename)
    domain.rename = renamed(domain, symbols)
    # The exclusions were judged in the first symbols: each now in the final one of its name
    # (q != 0 is then true of a positive q, as it should be).
    final = {first.get(old, old): domain.symbol(old) for old in symbols if first.get(old, old) != domain.symbol(old)}
    excluded = {str(s) for e in domain.exclusions for s in _leaves(e.condition)}
    domain.exclusions = [dataclasses.replace(e, condition=e.condition.xreplace(final)) for e in domain.exclusions]
    domain.conditions = [domain.apply(c) for c in domain.conditions]
    satisfiable(domain)
    domain.conditions += [e.condition for e in domain.exclusions]
    domain.usage.matrices = {
        name: dataclasses.replace(matrix, entry=domain.apply(matrix.entry))
        for name, matrix in domain.usage.matrices.items()
    }
    out = [_limits_taken(domain, _untaken_dropped(domain, _cases(domain.apply(side)))) for side in sides]
    named = {str(s) for side in out for s in _leaves_of(side)}
    domain.free = sorted(named | excluded)
    return out


def _untaken_dropped(domain: Domain, side: Any) -> Any:
    """Each undefined case (zoo, nan) of a Piecewise that the domain never takes, dropped: at
    epsilon = 0 a clamp's case x/epsilon is taken only at x = 0, which the domain excludes."""
    if isinstance(side, (Vector, Row, Matrix)):
        return dataclasses.replace(side, entry=_untaken_dropped(domain, side.entry))
    if not isinstance(side, (sp.Basic, sp.MatrixBase)) or not side.has(sp.Piecewise):
        return side

    def taken(value: sp.Basic, condition: sp.Basic) -> bool:
        return not (value.has(sp.zoo, sp.nan) and _always(sp.Not(condition), domain))

    def pruned(piecewise: sp.Piecewise) -> sp.Basic:
        kept = [case for case in piecewise.args if taken(*case)]
        return sp.Piecewise(*kept) if kept else piecewise

    return side.replace(lambda e: isinstance(e, sp.Piecewise), pruned)


def _cases(side: Any) -> Any:
    """Each `Equal` as a case, now that the symbols have the properties the domain gives them."""
    if isinstance(side, sp.Expr) and side.has(Equal):
        return side.replace(lambda e: isinstance(e, Equal), lambda e: e.as_case())
    return side


def couple_gains(domain: Domain) -> None:
    """|gamma_i| <= max|gamma_i| for each gain entry the claim or its assumptions name, where
    either names the largest too: the one coupling between a gain entry and gamma_max."""
    named = domain.named | {s for a in domain.assumptions for s in _leaves(a.relation)}
    entries = [s for s in named if isinstance(s, sp.Indexed) and str(s.base) == "gamma" and s.indices[0].is_Integer]
    if not entries or not (gamma_max in named or domain.usage.gains):
        return
    for entry in entries:
        relation = substitute(sp.Le(sp.Abs(entry), gamma_max, evaluate=False), domain.fixed)
        if relation is sp.false:
            texts = " and ".join(a.text for a in domain.assumptions if a.relation is not sp.true)
            raise Vacuous(f"{texts}, but |gamma| <= gamma_max = max|gamma_i|")
        if relation is not sp.true:
            domain.conditions.append(relation)


def satisfiable(domain: Domain) -> None:
    """Whether the assumptions, over the domain's ranges, admit any input: `Vacuous` where z3's
    real arithmetic shows they do not (the ranges translated as an over-approximation, so that
    this is a proof); ``domain.undecided`` where it cannot tell."""
    if not domain.conditions:
        return
    ranges = [sp.Contains(n, domain.n_set)] if n not in domain.fixed else []
    try:
        answer = solver.satisfiable([*domain.conditions, *ranges])
    except solver.Outside:
        domain.undecided = True
        return
    if answer.status == "unsat":
        texts = [a.text for a in domain.assumptions if a.relation is not sp.true]
        raise Vacuous(f"{' and '.join(texts)} admit no input together (decided by z3's real arithmetic)")
    domain.undecided = answer.status != "sat"


def _original(domain: Domain, symbol: sp.Basic) -> sp.Basic:
    for old, new in domain.rename.items():
        if new == symbol:
            return old
    return symbol


def _leaves_of(value: Any) -> set[sp.Basic]:
    if isinstance(value, (Vector, Matrix)):
        return _leaves(value.entry)
    if isinstance(value, list):
        return set().union(*(_leaves_of(v) for v in value)) if value else set()
    return _leaves(value) if isinstance(value, sp.Basic) else set()


def _limits_taken(domain: Domain, side: Any) -> Any:
    if isinstance(side, (Vector, Matrix)):
        entry, missing = limits.take(side.entry)
        domain.missing += missing
        return dataclasses.replace(side, entry=entry)
    if isinstance(side, sp.Basic) and side.has(Lim):
        value, missing = limits.take(side)
        domain.missing += missing
        return value
    return side


def undefined(domain: Domain, found: list[Requirement]) -> None:
    """Each requirement judged in the domain: dropped where it always holds, the claim undefined
    everywhere where it never does (`ClaimError`), else an exclusion from the quantifier."""
    for requirement in found:
        condition = domain.apply(requirement.condition)
        if condition is sp.true:
            continue
        if requirement.stand_ins:
            if condition is not sp.false and _always(_plain(condition, domain), domain):
                continue
            condition = domain.apply(requirement.condition.xreplace(dict(requirement.stand_ins)))
        if condition is sp.false:
            raise ClaimError(f"the claim is undefined everywhere in its domain: {requirement.origin}")
        condition = _plain(condition, domain)
        if condition is not sp.false and _always(condition, domain):
            continue
        if condition is sp.false:
            raise ClaimError(f"the claim is undefined everywhere in its domain: {requirement.origin}")
        if any(e.condition == condition for e in domain.exclusions):
            continue
        text = _condition_text(condition, _entry_names(domain))
        domain.exclusions.append(Exclusion(condition, text, requirement.origin))


def _always(condition: sp.Basic, domain: Domain) -> bool:
    """Whether a condition holds at every point of the domain: SymPy's own judgment with n
    written as 2 + m for a nonnegative integer m, or z3's (no point of the domain violates it)."""
    if condition is sp.true:
        return True
    # SymPy's judgment first: it decides what z3 is not given (exp(t) >= 0 is no exclusion).
    beyond = sp.Symbol("m", integer=True, nonnegative=True)
    shifted = condition.xreplace({n: beyond + 2}) if domain.n_set == sp.Range(2, sp.oo) else condition
    if shifted is sp.true or (isinstance(shifted, sp.core.relational.Relational) and _relation_holds(shifted) is True):
        return True
    ranges = [sp.Contains(n, domain.n_set)] if n not in domain.fixed else []
    try:
        answer = solver.satisfiable([sp.Not(condition), *domain.conditions, *ranges], timeout_ms=500)
    except solver.Outside:
        return False
    return answer.status == "unsat"


def _relation_holds(relation: sp.Basic) -> bool | None:
    gap = sp.factor(sp.together(relation.lhs - relation.rhs))
    if isinstance(relation, sp.Ne):
        return True if gap.is_zero is False else None
    if isinstance(relation, (sp.Ge, sp.Gt)):
        return True if (gap.is_nonnegative if isinstance(relation, sp.Ge) else gap.is_positive) else None
    return None


def _plain(condition: sp.Basic, domain: Domain) -> sp.Basic:
    """A condition on one symbol as that symbol's admitted values: 2 t**2/3 != 0 is t != 0."""
    if isinstance(condition, sp.Ne) and condition.rhs == 0:
        condition = sp.Ne(_nonzero_part(condition.lhs), 0)
    symbols = _leaves(condition)
    if symbols == {n}:
        return _on_n(condition, domain.n_set)
    if len(symbols) != 1 or isinstance(condition, (sp.Or, sp.And)):
        return condition
    (symbol,) = symbols
    if not _plain_enough(condition, symbol):
        return condition
    admitted = _admitted(symbol, condition)
    if admitted is None:
        return condition
    where = natural_range(domain, _original(domain, symbol)) if symbol.is_Symbol else sp.S.Reals
    if where.is_subset(admitted):
        return sp.true
    if where.intersect(admitted) == sp.EmptySet:
        return sp.false
    left_out = where - admitted
    if isinstance(left_out, sp.FiniteSet) and len(left_out) <= 4:
        return sp.And(*(sp.Ne(symbol, value) for value in left_out))
    return condition


def _plain_enough(condition: sp.Basic, symbol: sp.Basic) -> bool:
    """Whether SymPy can solve a condition on one symbol quickly: a polynomial of low degree in
    it, or in its absolute value (a general solve can take seconds, and only shortens the text)."""
    if not isinstance(condition, sp.core.relational.Relational):
        return False
    gap = (condition.lhs - condition.rhs).replace(sp.Abs, lambda inside: inside if inside == symbol else sp.Abs(inside))
    try:
        return bool(gap.is_polynomial(symbol) and sp.degree(sp.expand(gap), symbol) <= 4)
    except sp.PolynomialError:  # a power SymPy calls polynomial but not a polynomial's (t**2.0)
        return False


def _nonzero_part(expr: sp.Expr) -> sp.Expr:
    """What must be nonzero for ``expr`` to be: its factors less those never zero, a power's base
    (n**2 q/(n - 1) - n q/(n - 1) != 0 is q != 0)."""
    factors = sp.Mul.make_args(sp.factor(expr))
    kept = [f.base if isinstance(f, sp.Pow) and f.exp.is_positive else f for f in factors if f.is_zero is not False]
    return sp.Mul(*kept) if kept else expr


# Conditions on n (a case of a piecewise result) are about small n and all large ones.
_SMALL_N = 24


def _on_n(condition: sp.Basic, allowed: sp.Set) -> sp.Basic:
    """A condition on n alone: true (or false) at every admissible n, else as it is; the
    cases of the derivations are n = 2, n >= 3 and the like, decided by the small n and by
    a symbolic n beyond them."""
    large = sp.Symbol("n_large", integer=True, positive=True)
    values = [condition.xreplace({n: size}) for size in range(2, _SMALL_N) if allowed.contains(size) is sp.true]
    if allowed.sup == sp.oo:
        values.append(condition.xreplace({n: _SMALL_N + large}))
    if all(value is sp.true for value in values):
        return sp.true
    if all(value is sp.false for value in values):
        return sp.false
    return condition


class _ClaimPrinter(StrPrinter):
    """SymPy terms in the claim language: abs(), max(), and conditions joined by ``and``/``or``."""

    def _print_Abs(self, expr: sp.Abs) -> str:
        return f"abs({self._print(expr.args[0])})"

    def _print_Max(self, expr: sp.Max) -> str:
        return f"max({', '.join(self._print(a) for a in expr.args)})"

    def _print_Min(self, expr: sp.Min) -> str:
        return f"min({', '.join(self._print(a) for a in expr.args)})"

    def _print_And(self, expr: sp.And) -> str:
        return " and ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Or(self, expr: sp.Or) -> str:
        return " or ".join(f"({self._print(a)})" for a in expr.args)

    def _print_Unequality(self, expr: sp.Ne) -> str:
        return f"{self._print(expr.lhs)} != {self._print(expr.rhs)}"


def claim_text(expr: sp.Basic, names: dict[sp.Basic, str] | None = None) -> str:
    """A condition or term as the claim language writes it, which the audit reads back; ``names``
    are the claim's names of entries (gamma[2] is ``gamma``, the gain at the pattern's coordinate)."""
    return _ClaimPrinter().doprint(expr.xreplace({e: sp.Symbol(name) for e, name in (names or {}).items()}))


def _condition_text(condition: sp.Basic, names: dict[sp.Basic, str] | None = None) -> str:
    if isinstance(condition, sp.And):
        return " and ".join(_condition_text(c, names) for c in condition.args)
    return claim_text(condition, names)


def _entry_names(domain: Domain) -> dict[sp.Basic, str]:
    return {
        value: name
        for layer in domain.layers
        for name, value in layer.named_symbols.items()
        if isinstance(value, sp.Indexed)
    }


def substitute(value: Any, replace: dict) -> Any:
    """``value`` with ``replace`` put in everywhere but a limit's own variable."""
    if not replace:
        return value
    if isinstance(value, Vector):
        return Vector(substitute(value.entry, replace))
    if isinstance(value, Matrix):
        return Matrix(substitute(value.entry, replace), value.jacobian_of)
    if isinstance(value, list):
        return [substitute(v, replace) for v in value]
    if not isinstance(value, sp.Basic):
        return value
    if not value.has(Lim):
        return value.xreplace(replace)
    if isinstance(value, Lim):
        body, variable, point, side = value.args
        inside = {key: new for key, new in replace.items() if getattr(key, "name", None) != variable.name}
        return Lim(substitute(body, inside), variable, point, side)
    return value.func(*(substitute(argument, replace) for argument in value.args))


# --- what the verdict quantified over ----------------------------------------------------


def _epsilon_text(domain: Domain) -> str:
    if epsilon in domain.fixed:
        return f"epsilon = {domain.fixed[epsilon]}"
    # A narrower range comes from assumptions, which the quantifier lists after it.
    return (
        "epsilon > 0"
        if (domain.assumed or domain.ranges)[epsilon].is_subset(sp.Interval.open(0, sp.oo))
        else ("epsilon >= 0")
    )


def _quantifier(domain: Domain, key: str) -> str:
    """What a verdict quantified over, as printed: the variables and their ranges, then the
    assumptions a reader would not take for granted."""
    usage = domain.usage
    eps = _epsilon_text(domain)
    if not usage.epsilon and not any(LAYERS[name].has_epsilon for name in usage.layers or {key}):
        eps = ""  # a layer without epsilon (Dynamic Tanh): nothing to quantify over
    tail = _assumptions_shown(domain)
    if domain.pattern is not None:
        over = ", ".join(filter(None, ["t in R", eps, *_ranges(domain, key)]))
        return f"for all {over}, at x = {domain.pattern} (n = {len(domain.pattern.values)}){tail}"
    if usage.general or usage.vectors or usage.gains:
        constant = any(quantities.at_constant_input(name) for _, name in usage.quantities)
        inputs = "x in R^n, t in R, constant_response at x = t 1" if constant else "x in R^n"
        over = ", ".join(filter(None, [inputs, describe_n(domain.n_set), eps, *_ranges(domain, key)]))
        return f"for all {over}{tail}"
    free = domain.free
    if not free:
        return "(a statement about numbers)" + tail
    # n's range and epsilon's are said with them, as above (the assumptions on n alone are left out of the tail).
    said = {"n": describe_n(domain.n_set), "epsilon": eps or "epsilon"}
    return f"for all {', '.join(said.get(name, name) for name in free)}{tail}"


def _ranges(domain: Domain, key: str) -> list[str]:
    """The vectors, subsets, gains and scalars the claim ranges over, besides x, t, n and epsilon."""
    usage = domain.usage
    extra = [f"{name} in R^n" for name in sorted(usage.vectors - {"gamma", "beta"})]
    extra += [
        f"{subset.keyword} = {subset.default} ({subset.meaning})"
        for name in sorted(usage.layers or {key})
        for subset in LAYERS[name].subsets
    ]
    if usage.gains:
        extra.append("gamma, beta in R^n with gamma_max = max|gamma_i|")
    return extra + [f"{name} in R" for name in sorted(usage.scalars)]


def _assumptions_shown(domain: Domain) -> str:
    """The assumptions the quantifier does not already say, the pattern's values they use, and
    the exclusions: ", ..." to follow it."""
    shown = [a.text for a in domain.assumptions if not _said_by_a_range(a)]
    shown = [a for a in shown if not (a.replace(" ", "").startswith("epsilon==") and epsilon in domain.fixed)]
    shown = [a for a in shown if a.replace(" ", "") not in ("epsilon>=0", "0<=epsilon")]  # said by "epsilon >= 0"
    tail = "".join(f", {a}" for a in shown)
    at_pattern = [
        f"{symbol} = {value}"
        for symbol, value in domain.mapping.items()
        if any(a.has(symbol) for a in _assumed(domain))
    ]
    if domain.pattern is not None and at_pattern:
        tail += f" ({', '.join(at_pattern)} at this input)"
    if domain.exclusions:
        tail += ", where " + " and ".join(domain.excluded)
    return tail


def _said_by_a_range(assumption: Assumption) -> bool:
    """Whether the quantifier's range of n (or of d) already says an assumption: one on that
    symbol alone.  One relating it to another symbol (n >= q + 3) is shown."""
    names = {symbol.name for symbol in getattr(assumption.relation, "free_symbols", set())}
    return names in ({"n"}, {"d"})


def _assumed(domain: Domain) -> list[sp.Basic]:
    return [a.relation for a in domain.assumptions]


def entry_facts(domain: Domain) -> list[sp.Basic]:
    """What one entry x_i satisfies, whatever the others: each of its terms in a mean of
    nonnegative terms is at most n times the mean (s(x_i) <= n m), and a centered square at
    most n - 1 times its mean ((x_i - mu)**2 <= (n - 1) q: the other entries' deviations sum to
    -(x_i - mu), and their squares to n q - (x_i - mu)**2, so Cauchy-Schwarz gives it).  In
    the domain's symbols: true at every point of it, for an entrywise proof."""
    out: list[sp.Basic] = []
    for layer in domain.layers:
        mean = mean_statistic(layer)
        for stat in layer.statistics:
            others = {e for e in stat.summand.atoms(sp.Indexed) if e != x[j]}
            if not stat.mean or others or not stat.summand.is_nonnegative:
                continue
            term = stat.summand.xreplace({x[j]: x[i]})
            out.append(sp.Le(term, n * stat.symbol))
            if mean is not None and sp.expand(stat.summand - (x[j] - mean) ** 2) == 0:
                out.append(sp.Le(term, (n - 1) * stat.symbol))
    return [domain.apply(fact) for fact in out]


def needs_vectors(lhs: Any, rhs: Any) -> bool:
    """Whether a side holds a vector, a matrix, a sum the statistics do not fix, or an entry of x."""
    for side in (lhs, rhs):
        if isinstance(side, (Vector, Matrix)):
            return True
        gains = {e for e in side.atoms(sp.Indexed) if str(e.base) in ("gamma", "beta", "w")}
        if side.has(PowerSum, OpaqueNorm) or side.atoms(sp.Indexed) - gains:
            return True
    return False
