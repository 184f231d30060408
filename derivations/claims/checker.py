"""Verdicts on claims: proved, refuted (with a counterexample), supported, or error.

Every quantity in a claim is taken at one input x in R^n and one epsilon; the
statistics are functions of that x.  A claim that mixes quantities of an
input pattern such as (-t, 0, t) with those of a general input is taken at
that pattern.  The checker first tries to prove the claim for every
admissible value, using the assumptions; failing that it samples inputs and
decides each exactly (`derivations.claims.sampling`), reporting the first
violation with the full input, or the number of inputs that satisfied it.
Every verdict says what it quantified over.  No input gives a traceback:
whatever goes wrong is an ``error`` verdict.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from derivations import LAYERS, quantities
from derivations._layer import Layer
from derivations.catalog import CORE
from derivations.claims import bounded, sampling
from derivations.claims.language import ClaimError, Relation
from derivations.claims.proof import describe_n, prove
from derivations.claims.semantics import Matrix, OpaqueNorm, Usage, Vector, build, mean_statistic
from derivations.sums import Indicator, PowerSum
from derivations.symbols import epsilon, gamma_max, k, mu, n, q, t, x

VERDICTS = ("proved", "refuted", "supported", "error")


@dataclass(frozen=True)
class Claim:
    """One claim to check, as a reviewer writes it.  ``problem`` marks an entry that
    cannot be checked at all (a duplicate id, say): its verdict is an error."""

    text: str
    layer: str = CORE
    assumptions: tuple[str, ...] = ()
    expect: str | None = None
    id: str = "claim"
    problem: str | None = None


@dataclass
class Verdict:
    """The outcome for one claim."""

    claim: Claim
    verdict: str
    detail: str
    counterexample: dict[str, Any] | None = None
    quantities: tuple[str, ...] = field(default=())
    quantifier: str = ""

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
            "quantifier": self.quantifier,
            "detail": self.detail,
        }
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        if self.claim.expect is not None:
            out["expect"] = self.claim.expect
        return out


Confirm = Callable[[Claim, dict[str, Any]], str]


def check(claim: Claim, confirm: Confirm | None = None, timeout: float | None = None) -> Verdict:
    """The verdict on ``claim``; ``confirm`` re-checks a counterexample numerically.

    With ``timeout`` (seconds) the claim is decided in a child process with a
    memory bound too, and one that does not finish gets an error verdict.
    """
    if claim.problem is not None:
        return Verdict(claim, "error", claim.problem)
    if timeout is not None:
        try:
            verdict: Verdict = bounded.run(lambda: check(claim, confirm), timeout)
        except bounded.Exceeded as error:
            return Verdict(claim, "error", str(error))
        return verdict
    try:
        return _check(claim, confirm)
    except ClaimError as error:
        return Verdict(claim, "error", str(error))
    except (RecursionError, MemoryError) as error:
        return Verdict(claim, "error", f"the claim is too large to decide ({type(error).__name__})")
    except Exception as error:
        return Verdict(claim, "error", f"undecided: {type(error).__name__}: {error}"[:500])


@dataclass
class _Setting:
    """How the claim is read: its sides after substitution, the domain and its description."""

    lhs: Any
    op: str
    rhs: Any
    usage: Usage
    conditions: list[sp.Basic]
    allowed: sp.Set
    pattern: Any = None
    inputs: bool = False  # sampled as explicit vectors
    notes: list[str] = field(default_factory=list)
    fixed: dict[sp.Basic, sp.Expr] = field(default_factory=dict)  # n, epsilon, t fixed by assumptions
    pinned: dict[sp.Basic, sp.Expr] = field(default_factory=dict)  # statistics the assumptions fix
    notes_where: list[str] = field(default_factory=list)  # where the claim is defined


def _check(claim: Claim, confirm: Confirm | None) -> Verdict:
    lhs, op, rhs, usage = build(claim.text, claim.layer)
    for key in sorted({*usage.layers, claim.layer}):
        if LAYERS[key].unclaimable:
            raise ClaimError(str(LAYERS[key].unclaimable))
    setting = _setting(claim, lhs, op, rhs, usage)
    quantifier = _quantifier(setting, claim)
    used = tuple(dict.fromkeys(f"{key}.{name}" for key, name in usage.quantities))
    if setting.allowed == sp.EmptySet:
        return Verdict(claim, "error", "the assumptions leave no admissible n >= 2", quantities=used)
    how = _prove(setting)
    if how is not None:
        return Verdict(claim, "proved", f"proved {quantifier}. {how}", quantities=used, quantifier=quantifier)
    return _sample(claim, setting, quantifier, used, confirm)


# --- reading the claim ----------------------------------------------------------------


def _setting(claim: Claim, lhs: Any, op: str, rhs: Any, usage: Usage) -> _Setting:
    conditions = [_condition(text, claim.layer, usage) for text in claim.assumptions]
    substitutions: dict[sp.Basic, sp.Expr] = {}
    kept = []
    for condition in conditions:
        if isinstance(condition, sp.Eq) and condition.lhs.is_Symbol and condition.rhs.is_number:
            if condition.lhs == n and not (condition.rhs.is_Integer and condition.rhs >= 2):
                raise ClaimError(f"n must be an integer >= 2; got n == {condition.rhs}")
            if condition.lhs == epsilon and condition.rhs < 0:
                raise ClaimError("epsilon must be >= 0")
            substitutions[condition.lhs] = condition.rhs
        else:
            kept.append(condition)
    allowed = _n_range(kept, substitutions)
    layers = [LAYERS[key] for key in sorted(usage.layers)] or [LAYERS[claim.layer]]
    statistics = {stat.symbol for layer in layers for stat in layer.statistics}
    setting = _Setting(lhs, op, rhs, usage, kept, allowed)
    for entry in _entries_of(lhs, rhs):
        if entry.xreplace(substitutions).has(sp.zoo, sp.nan):
            raise ClaimError("a side of the claim is undefined (a division by zero) under the assumptions")
    # A claim that names no statistic (the patterns' quantities alone) needs no common coordinates.
    mapping = _statistics_map(layers) if usage.general or usage.vectors else {}
    if len(usage.patterns) > 1:
        raise ClaimError("quantities of two different input patterns cannot share one input")
    if usage.patterns:
        (setting.pattern,) = usage.patterns.values()
        size = len(setting.pattern.values)
        sides = _entries_of(lhs, rhs)
        # The pattern's quantities are at its input, of its size: a claim that also names n or a
        # statistic is about that input, and assumptions that leave no such n leave no claim.
        on_n = any(e.has(n) for e in sides) or n in substitutions or any(c.has(n) for c in kept)
        if usage.general or usage.vectors or on_n:
            if setting.allowed.contains(sp.Integer(size)) is not sp.true:
                raise ClaimError(
                    f"the input pattern {setting.pattern} has n = {size} entries, which the assumptions exclude"
                )
            substitutions[n] = sp.Integer(size)
            setting.allowed = sp.FiniteSet(size)
        if usage.general or usage.vectors:
            mapping = _pattern_map(layers, setting.pattern)
        statistics_fixed = substitutions.keys() & statistics
        if statistics_fixed and not (usage.general or usage.vectors):
            # The pattern's quantities are functions of t: a statistic fixed by an assumption is a
            # condition on t there, which sampling t cannot meet; never decided at other statistics.
            raise ClaimError(
                f"an assumption fixes {', '.join(sorted(map(str, statistics_fixed)))}, which the pattern's "
                "quantities do not name; state the claim with it, or for a general x"
            )
    setting.inputs = (usage.general and _needs_vectors(lhs, rhs, usage)) or bool(usage.vectors)
    if usage.general and any(layer.subsets for layer in layers):
        # A partial mean and a full one are not independent coordinates (k r_k <= n r):
        # sampled as explicit inputs, whose statistics are consistent by construction.
        setting.inputs = True
    if setting.inputs and setting.pattern is not None and usage.patterns:
        # Explicit inputs are sampled apart from t: the pattern's quantities would be taken at
        # another input than the rest.  Undecided here, never decided at inconsistent inputs.
        raise ClaimError(
            "quantities at the input pattern cannot be combined here with ones that need an explicit input "
            f"({', '.join(sorted(layer.key for layer in layers))}); state the claim at the pattern or for a general x"
        )
    if setting.inputs and usage.gains:
        usage.vectors |= {"gamma", "beta"}
    # The statistics first (a mean square r becomes q + mu**2), then what the assumptions fix.
    setting.lhs = _substitute(_substitute(lhs, mapping), substitutions)
    setting.rhs = _substitute(_substitute(rhs, mapping), substitutions)
    setting.conditions = [c.xreplace(mapping).xreplace(substitutions) for c in kept]
    # Everything the assumptions fix but a statistic (n, epsilon, t, alpha, ...): also what a held
    # matrix (the J in norm(J, oo)) is taken at, so that no point samples it apart from the sides.
    setting.fixed = {symbol: value for symbol, value in substitutions.items() if symbol not in statistics}
    usage.matrices = {
        name: dataclasses.replace(matrix, entry=matrix.entry.xreplace(setting.fixed))
        for name, matrix in usage.matrices.items()
    }
    pinned = {symbol: value for symbol, value in substitutions.items() if symbol in statistics}
    setting.pinned = pinned
    if setting.inputs and pinned:
        # Explicit inputs carry their own statistics: a statistic fixed by an
        # assumption is a condition on the input there, not a substitution.
        setting.lhs = _substitute(_substitute(lhs, mapping), setting.fixed)
        setting.rhs = _substitute(_substitute(rhs, mapping), setting.fixed)
        setting.conditions = [c.xreplace(mapping).xreplace(setting.fixed) for c in kept]
        setting.conditions += [sp.Eq(s, v) for s, v in pinned.items()]
    if epsilon in substitutions:
        setting.notes.append(f"epsilon = {substitutions[epsilon]}")
    vanishing = substitutions.get(epsilon) == 0 or usage.limit_over_statistics
    if vanishing and setting.pattern is None:
        positive = {c.lhs for c in kept if isinstance(c, sp.StrictGreaterThan) and c.rhs == 0}
        for layer in layers:
            if layer.spread not in positive:
                raise ClaimError(
                    f"with epsilon == 0 (or tending to it), {layer.key} divides by zero where {layer.spread} = 0; "
                    f"assume {layer.spread} > 0"
                )
    for divisor in usage.divisors:
        nonzero = sp.Ne(_substitute(_substitute(divisor, mapping), substitutions), 0)
        if nonzero is not sp.true:
            setting.conditions.append(nonzero)
            setting.notes_where.append(f"{divisor} != 0")
    if setting.pattern is not None and (usage.general or usage.vectors):
        _explicit_pattern(setting, layers)
    return setting


def _condition(text: str, key: str, claim_usage: Usage) -> sp.Basic:
    lhs, op, rhs, usage = build(text, key)
    # A statistic named in an assumption belongs to the same input as the claim's.
    claim_usage.layers |= usage.layers
    if not (isinstance(lhs, sp.Expr) and isinstance(rhs, sp.Expr)):
        raise ClaimError(f"assumption {text!r} must compare scalars")
    if usage.quantities:
        raise ClaimError(f"assumption {text!r} may name symbols only, not derived quantities")
    relation = Relation(lhs, op, rhs).as_sympy()
    if not relation.free_symbols:
        if sampling.decide(lhs, op, rhs, {}) is not True:
            raise ClaimError(f"assumption {text!r} is false")
        return sp.true
    return relation


def _n_range(conditions: list[sp.Basic], substitutions: dict) -> sp.Set:
    allowed: sp.Set = sp.Range(2, sp.oo)
    if n in substitutions:
        return allowed.intersect(sp.FiniteSet(substitutions[n]))
    for condition in conditions:
        if condition.free_symbols == {n}:
            allowed = allowed.intersect(condition.as_set())
    return allowed


def _statistics_map(layers: list[Layer]) -> dict[sp.Basic, sp.Expr]:
    """Derived statistics by their definitions; statistics of several layers in one set of coordinates.

    With one layer (or layers sharing their mean statistics) the means are
    the coordinates; otherwise every mean is written in the mean mu and the
    variance q of x (a mean square r is q + mu**2), so that all describe one x.
    """
    means = {stat.symbol for layer in layers for stat in layer.statistics if stat.mean}
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
    del means
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


def _pattern_map(layers: list[Layer], pattern: Any) -> dict[sp.Basic, sp.Expr]:
    """The statistics of every used layer at the pattern's input."""
    out: dict[sp.Basic, sp.Expr] = {}
    entries = {x[m]: value for m, value in enumerate(pattern.values)}
    for layer in layers:
        for symbol, value in layer.explicit_statistics(len(pattern.values)).items():
            out[symbol] = sp.simplify(value.xreplace(entries))
    return out


def _explicit_pattern(setting: _Setting, layers: list[Layer]) -> None:
    """Vectors at the pattern's input become explicit lists of entries in t."""
    size = len(setting.pattern.values)
    explicit = sampling.Explicit(tuple(setting.pattern.values))

    def expand(value: Any) -> Any:
        if isinstance(value, (Vector, Matrix)):
            return sampling.at(value, {n: size}, explicit)
        if isinstance(value, sp.Expr) and value.has(PowerSum):
            return sampling.at(value, {n: size}, explicit)
        return value

    setting.lhs, setting.rhs = expand(setting.lhs), expand(setting.rhs)
    setting.inputs = bool(setting.usage.vectors) or any(
        isinstance(e, sp.Expr) and e.has(OpaqueNorm) for e in sampling._flat([setting.lhs, setting.rhs])
    )


def _entries_of(*sides: Any) -> list[sp.Expr]:
    """The sides' expressions: each scalar itself, each vector's or matrix's entry."""
    entries = (value.entry if isinstance(value, (Vector, Matrix)) else value for value in sampling._flat(list(sides)))
    return [entry for entry in entries if isinstance(entry, sp.Expr)]


def _needs_vectors(lhs: Any, rhs: Any, usage: Usage) -> bool:
    for side in (lhs, rhs):
        if isinstance(side, (Vector, Matrix)):
            return True
        if side.has(PowerSum, OpaqueNorm) or side.atoms(sp.Indexed) - _gain_entries(side):
            return True
    return False


def _gain_entries(expr: sp.Expr) -> set[sp.Basic]:
    return {e for e in expr.atoms(sp.Indexed) if str(e.base) in ("gamma", "beta")}


def _substitute(value: Any, replace: dict) -> Any:
    if isinstance(value, Vector):
        return Vector(value.entry.xreplace(replace))
    if isinstance(value, Matrix):
        return Matrix(value.entry.xreplace(replace), value.jacobian_of)
    return value.xreplace(replace)


def _quantifier(setting: _Setting, claim: Claim) -> str:
    usage = setting.usage
    extra = [f"{name} in R^n" for name in sorted(usage.vectors - {"gamma", "beta"})]
    extra += [
        f"{subset.keyword} = {subset.default} ({subset.meaning})"
        for key in sorted(usage.layers or {claim.layer})
        for subset in LAYERS[key].subsets
    ]
    if usage.gains:
        extra.append("gamma, beta in R^n with gamma_max = max|gamma_i|")
    extra += [f"{name} in R" for name in sorted(usage.scalars)]
    eps = ", ".join(setting.notes) if setting.notes else "epsilon > 0"
    if not usage.epsilon and not any(LAYERS[key].has_epsilon for key in usage.layers or {claim.layer}):
        eps = ""  # a layer without epsilon (Dynamic Tanh): nothing to quantify over
    assumed = [a for a in claim.assumptions if not a.replace(" ", "").startswith(("n>=", "n==", "d>=", "epsilon=="))]
    tail = "".join(f", {a}" for a in assumed)
    if setting.notes_where:
        tail += ", where " + " and ".join(setting.notes_where)
    if setting.pattern is not None:
        over = ", ".join(filter(None, ["t in R", eps, *extra]))
        return f"for all {over}, at x = {setting.pattern} (n = {len(setting.pattern.values)}){tail}"
    if usage.general or usage.vectors or usage.gains:
        constant = any(quantities.at_constant_input(name) for _, name in usage.quantities)
        inputs = "x in R^n, t in R, constant_response at x = t 1" if constant else "x in R^n"
        over = ", ".join(filter(None, [inputs, describe_n(setting.allowed), eps, *extra]))
        return f"for all {over}{tail}"
    free = sorted(
        {str(s) for side in (setting.lhs, setting.rhs) if isinstance(side, sp.Expr) for s in side.free_symbols}
    )
    free += [str(s) for d in setting.usage.divisors for s in d.free_symbols if str(s) not in free]
    if not free:
        return "(a statement about numbers)"
    positive = [f"{name} > 0" for name in free if name == "epsilon"]
    return f"for all {', '.join(free)}{''.join(', ' + p for p in positive)}{tail}"


# --- proof -------------------------------------------------------------------------


def _prove(setting: _Setting) -> str | None:
    lhs, rhs = setting.lhs, setting.rhs
    if isinstance(lhs, (Vector, Matrix)):
        from derivations._proof import is_zero

        how = is_zero(lhs.entry - rhs.entry)
        return None if how is None else f"entry by entry for symbolic n: {how}(lhs - rhs) = 0"
    if isinstance(lhs, list):
        from derivations._proof import is_zero

        hows = [is_zero(a - b) for a, b in zip(sampling._flat(lhs), sampling._flat(rhs), strict=True)]
        return None if None in hows else "entry by entry at the pattern's input"
    if lhs.has(OpaqueNorm) or rhs.has(OpaqueNorm):
        return None
    # gamma_max is the largest |gamma_i|, so at least |gamma| at the pattern's coordinate.
    largest = sp.Symbol("gamma_max", positive=True)
    entries = [e for e in (lhs - rhs).atoms(sp.Indexed) if str(e.base) == "gamma"]
    if largest in (lhs - rhs).free_symbols and len(entries) == 1:
        bound = sp.Abs(entries[0]) + sp.Dummy("u", nonnegative=True)
        lhs, rhs = lhs.xreplace({largest: bound}), rhs.xreplace({largest: bound})
    return prove(Relation(lhs, setting.op, rhs), setting.allowed, setting.conditions)


# --- sampling -----------------------------------------------------------------------


def _sample(
    claim: Claim, setting: _Setting, quantifier: str, used: tuple[str, ...], confirm: Confirm | None
) -> Verdict:
    checked = 0
    compiled = None
    for point, inputs in _points(setting, claim):
        matrices = setting.usage.matrices
        if inputs is None and not isinstance(setting.lhs, list):
            compiled = compiled or sampling.Compiled(setting.lhs, setting.rhs, list(point))
            result = compiled.decide(setting.op, point)
            # Shown only for a refutation, at the most digits a decision takes: a side that is a
            # cancellation (1 - response at t = 1e30 is 5e-63) keeps its value.
            left, right = (
                compiled.sides(point, sampling.DIGITS[-1]) or (None, None) if result is False else (None, None)
            )
        else:
            try:
                left = sampling.at(setting.lhs, point, inputs, matrices)
                right = sampling.at(setting.rhs, point, inputs, matrices)
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                continue  # not evaluable exactly here (SymPy overflows on some huge powers): no decision
            result = sampling.decide(left, setting.op, right, point)
        if result is None:
            continue
        checked += 1
        if result is False:
            example = _example(point, inputs, setting)
            shown = _apart(left, right)
            detail = f"fails at {_shown(example)} (claimed {quantifier}): lhs = {shown[0]}, rhs = {shown[1]}"
            if confirm is not None:
                confirmation = confirm(claim, example)
                detail += "; " + confirmation
                if confirmation.startswith("NOT confirmed"):
                    # A refutation stands only where an independent evaluation fails too.
                    return Verdict(claim, "error", f"undecided: {detail}", quantities=used, quantifier=quantifier)
            return Verdict(claim, "refuted", detail, example, quantities=used, quantifier=quantifier)
    if checked == 0:
        return Verdict(
            claim, "error", f"no admissible point where both sides are defined, {quantifier}", quantities=used
        )
    sampled = (
        f"explicit inputs x of {', '.join(map(str, _sizes(setting)))} entries, up to {_budget(setting)} points, "
        "the other symbols at simple and seeded random values"
        if setting.inputs
        else "0, tiny and huge values, 1e-300 .. 1e300, included"
    )
    return Verdict(
        claim,
        "supported",
        f"not proved; no violation at {checked} sampled points {quantifier} ({sampled}; "
        "each decided exactly or at up to 240 digits)",
        quantities=used,
        quantifier=quantifier,
    )


def _points(setting: _Setting, claim: Claim):
    sides = _entries_of(setting.lhs, setting.rhs)
    symbols: set[sp.Basic] = set().union(*(_sampled(expr) for expr in sides))
    # A symbol only a held matrix has (epsilon in norm(J, oo) >= norm(J, 2)/sqrt(n)); its indices are its own.
    for matrix in setting.usage.matrices.values():
        symbols |= _sampled(matrix.entry) - {k}
    for condition in setting.conditions:
        symbols |= condition.free_symbols
    symbols.discard(sp.Symbol("i", integer=True, nonnegative=True))
    symbols -= {sp.Symbol(name) for name in setting.usage.matrices}  # held matrices, not numbers
    if setting.inputs:
        yield from _explicit_points(setting, sorted(symbols, key=sp.default_sort_key), claim)
        return
    ordered = sorted(symbols, key=sp.default_sort_key)
    conditions = [*setting.conditions, *([sp.Contains(n, setting.allowed)] if n in symbols else [])]
    for point in sampling.points(ordered, conditions):
        if not _gain_consistent(point, setting.fixed):
            continue
        yield point, None


def _sampled(expr: sp.Expr) -> set[sp.Basic]:
    """The symbols a point of ``expr`` fixes: its free symbols outside indexed entries, and each
    gain or bias entry (gamma[i]) it names."""
    inside = {s for e in expr.atoms(sp.Indexed) for s in e.free_symbols}
    return (expr.free_symbols - inside) | _gain_entries(expr)


def _sizes(setting: _Setting) -> list[int]:
    """The sizes n of the explicit inputs sampled: 2 to 5, and for a mean over a subset of k of the
    n entries that is one entry at all of them (k = ceil(n/16)), also the first n where it is two."""
    sizes = [size for size in (2, 3, 4, 5) if size in setting.allowed] or [int(setting.allowed.inf)]
    for subset in (subset for key in sorted(setting.usage.layers) for subset in LAYERS[key].subsets):
        if all(sum(subset.entries(size, subset.default)) < 2 for size in sizes):
            more = (size for size in range(sizes[-1] + 1, 65) if size in setting.allowed)
            larger = next((size for size in more if sum(subset.entries(size, subset.default)) >= 2), None)
            sizes += [larger] if larger is not None else []
    return sizes


# Values of the other symbols tried at each explicit input: the nicest first, then seeded random ones.
_PER_INPUT = 6
# Points at a larger size (one input, the nicest values of the rest): an explicit matrix of 17
# entries a side costs a hundred times one of 5, and a claim has 10 s.
_LARGER = 1


def _budget(setting: _Setting) -> int:
    """How many points the explicit inputs take at most: whole inputs until `sampling.MAX_EXPLICIT`
    is reached, and `_LARGER` more with a larger size."""
    small = -(-sampling.MAX_EXPLICIT // _PER_INPUT) * _PER_INPUT
    return small + (_LARGER if max(_sizes(setting)) > 5 else 0)


def _explicit_points(setting: _Setting, symbols: list[sp.Basic], claim: Claim):
    sizes = _sizes(setting)
    layers = [LAYERS[key] for key in sorted(setting.usage.layers)] or [LAYERS[claim.layer]]
    stats = {stat.symbol for layer in layers for stat in layer.statistics}
    given = {gamma_max} if setting.usage.gains else set()
    rest = [
        s
        for s in symbols
        if s not in stats and s != n and s not in given and not isinstance(s, sp.Indexed) and not str(s).startswith("j")
    ]
    means = {mean_statistic(layer) for layer in layers} - {None}
    # The small sizes first, with the whole budget; a larger size a partial mean needs, after them.
    small = [size for size in sizes if size <= 5] or sizes
    larger = [size for size in sizes if size not in small]
    for group, budget in ((small, sampling.MAX_EXPLICIT), (larger, _LARGER)):
        seen = 0
        for number, inputs in enumerate(sampling.explicit_inputs(group, setting.usage.vectors) if group else ()):
            for symbol, value in setting.pinned.items():
                if symbol in means:  # a fixed mean: shift the input to it, exactly
                    inputs = sampling.shifted(inputs, value)
            inputs = _scaled_to_pinned(setting, layers, inputs, means)
            inputs = _gains_to_fixed_largest(setting, inputs)
            if inputs is None:
                continue  # all-zero gains cannot have the largest |gamma_i| the assumptions fix
            statistics = sampling.statistics_of(layers, inputs)
            if any(sp.simplify(statistics[s] - value) != 0 for s, value in setting.pinned.items() if s in statistics):
                continue  # no input of this kind has the statistics the assumptions fix
            for point in itertools.islice(sampling.points(rest, [], seed=number), min(_PER_INPUT, budget)):
                seen += 1
                full = {**point, **statistics, n: sp.Integer(inputs.size)}
                if _gain_consistent(full, setting.fixed) and all(sampling._holds(c, full) for c in setting.conditions):
                    yield full, inputs
            if seen >= budget:
                break


def _gains_to_fixed_largest(setting: _Setting, inputs: Any) -> Any:
    """The sampled gains scaled, exactly, so that their largest |gamma_i| is the gamma_max an
    assumption fixes (gamma_max == 1); unchanged where none is fixed; None where it cannot be."""
    largest = setting.fixed.get(gamma_max)
    if largest is None or not inputs.gain:
        return inputs
    top = max(abs(value) for value in inputs.gain)
    if top == 0:
        return inputs if largest == 0 else None
    return dataclasses.replace(inputs, gain=tuple(value * largest / top for value in inputs.gain))


def _scaled_to_pinned(setting: _Setting, layers: list[Any], inputs: Any, means: set[Any]) -> Any:
    """The input scaled so that a statistic the assumptions fix (r == 1/4) has that value, by the
    statistic's degree in x; unchanged where none is fixed, or a mean is fixed too (scaling would move it)."""
    from derivations import scaling

    if len(setting.pinned) != 1 or any(s in means for s in setting.pinned):
        return inputs
    degrees = {symbol: d for layer in layers for symbol, d in scaling.statistic_degrees(layer).items()}
    fixed = [(s, value) for s, value in setting.pinned.items() if s in degrees]
    if not fixed or degrees[fixed[0][0]] == 0:
        return inputs
    (symbol, value), current = fixed[0], sampling.statistics_of(layers, inputs).get(fixed[0][0])
    if current is None or current == 0 or not (value / current).is_positive:
        return inputs
    factor = (value / current) ** sp.Rational(1, degrees[symbol])
    return dataclasses.replace(inputs, x=tuple(sp.nsimplify(factor) * e for e in inputs.x))


def _gain_consistent(point: dict, fixed: dict) -> bool:
    """gamma_max is the largest |gamma_i|: at least |gamma| at the pattern's coordinate (gamma_max
    sampled, or fixed by an assumption)."""
    from derivations.symbols import gamma

    largest = point.get(gamma_max, fixed.get(gamma_max))
    for symbol, value in point.items():
        if isinstance(symbol, sp.Indexed) and symbol.base == gamma and largest is not None and abs(value) > largest:
            return False
    return True


def _example(point: dict, inputs: sampling.Explicit | None, setting: _Setting) -> dict[str, Any]:
    out: dict[str, Any] = {}
    subsets: dict[str, dict[int, int]] = {}
    for symbol, value in point.items():
        if isinstance(symbol, sp.Indexed) and isinstance(symbol.base, Indicator):
            subsets.setdefault(str(symbol.base), {})[int(symbol.indices[0])] = int(value)
            continue
        if symbol == k:
            continue  # a matrix's column index: every entry is evaluated, whatever the point's k
        name = str(symbol.base) if isinstance(symbol, sp.Indexed) else str(symbol)
        if value.is_number:
            out[name] = sampling.as_number(sp.N(value, 17)) if not value.is_Integer else int(value)
    for symbol, value in setting.fixed.items():
        out.setdefault(str(symbol), sampling.as_number(sp.N(value, 17)) if not value.is_Integer else int(value))
    for name, entries in subsets.items():  # a subset's indicator, as the 0/1 vector it is
        out[name] = [entries[m] for m in sorted(entries)]
    # The size the point samples, else the one the assumptions fix (n == 3), else 4.
    size = int(point.get(n, setting.fixed.get(n, 4)))
    if inputs is not None:
        out["x"] = [float(e) for e in inputs.x]
        if inputs.gain:
            out["gain"] = [float(e) for e in inputs.gain]
            out["bias"] = [float(e) for e in inputs.bias]
        if inputs.g:
            out["g"] = [float(e) for e in inputs.g]
        if inputs.v:
            out["v"] = [float(e) for e in inputs.v]
    elif setting.pattern is not None and t in point:
        out["x"] = [float(sp.N(e.xreplace({t: point[t]}), 17)) for e in setting.pattern.values]
    elif t in point and any(quantities.at_constant_input(name) for _, name in setting.usage.quantities):
        out["x"] = [float(sp.N(point[t], 17))] * size  # the constant input t 1
    elif setting.usage.general:
        # The statistics the assumptions fix (r == 1/4) are not in the point: they were substituted.
        out["x"] = [float(e) for e in sampling.input_for({**setting.pinned, **point}, size)]
    return out


def _shown(example: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in example.items()) + "}"


def _apart(left: Any, right: Any) -> tuple[str, str]:
    """Both sides to 8 digits, or to as many more as it takes to tell them apart (at most 60)."""
    for digits in (8, 17, 30, 60):
        shown = _brief(left, digits), _brief(right, digits)
        if shown[0] != shown[1]:
            break
    return shown


def _brief(value: Any, digits: int = 8) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, list):
        return "[" + ", ".join(_brief(e, digits) for e in value[:6]) + (", ..." if len(value) > 6 else "") + "]"
    if not isinstance(value, sp.Basic):
        return sp.N(sp.Float(value, digits + 22), digits).__str__()
    number = sampling._number(value, digits)
    return str(number) if number is not None else str(value)
