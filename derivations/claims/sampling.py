r"""Looking for a counterexample: sampled inputs, exact evaluation, decisions without a tolerance.

A point fixes every free symbol of a claim; where the claim involves vectors
(x, g, v) or sums the statistics do not fix, a point is an explicit input
with exact rational entries.  Both sides are evaluated at the point exactly
where they are rational, else at 30 significant digits; a difference that is
small relative to the sides is evaluated again at 60, 120 and 240 digits.
Only a difference that persists is a violation: a tie that no precision
decides is never one.  Samples span 1e-300 .. 1e300, log-spaced, plus 0 and
the nicest values first, so that the first violation found reads well.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import sympy as sp
from sympy.core.evalf import PrecisionExhausted

from derivations.claims.semantics import Matrix, OpaqueNorm, Vector, g, v
from derivations.derive.elementwise import Largest, apart
from derivations.derive.sums import PowerSum
from derivations.symbols import beta, gamma, gamma_max, i, k, x

_POWERS = (-300, -200, -100, -30, -12, -8, -5, -2, 2, 5, 8, 12, 30, 100, 200, 300)
_LOG = tuple(sp.Rational(10) ** p for p in _POWERS)
GRIDS: dict[str, tuple[sp.Expr, ...]] = {
    "n": tuple(map(sp.Integer, (2, 3, 4, 5, 8, 64, 768))),
    "epsilon": (*map(sp.Rational, ("1/4", "1", "1/100", "4", "100")), *_LOG),
    "nonnegative": (*map(sp.Rational, ("1", "0", "1/4", "4", "1/100", "100")), *_LOG),
    "real": (*map(sp.Rational, ("1", "0", "-1", "1/2", "-1/10", "3", "-3")), *_LOG, *(-value for value in _LOG)),
    # A zero gain is sampled too: max|gamma_i| = 0 there, and J = 0.
    "gain": tuple(map(sp.Rational, ("1", "-2", "1/2", "0", "3", "-1/10"))),
}
MAX_POINTS = 600
MAX_EXPLICIT = 80  # explicit inputs (vectors, matrices) cost more each
DIGITS = (30, 60, 120, 240)
# The most digits SymPy's adaptive evaluation may work at to give a value its asked-for digits
# (a Jacobian entry at x ~ 1e200 is a difference that cancels some 400 of them); a value it
# cannot give so is no value: the point is not decided.
MAXN = 3000


def grid(symbol: sp.Basic, where: sp.Set | None = None) -> tuple[sp.Expr, ...]:
    """The values a symbol is sampled at: by its name and properties, within ``where`` (its
    range in the claim's domain; a finite range is sampled whole)."""
    if where is not None and where.is_finite_set and isinstance(where, (sp.FiniteSet, sp.Range)):
        return tuple(sorted(where, key=lambda value: (abs(value), value)))[:16]
    values = _by_properties(symbol)
    if where is not None:
        values = tuple(value for value in values if where.contains(value) is sp.true)
        if not values and isinstance(where, sp.Interval) and where.inf.is_finite:
            values = (where.inf,) if where.contains(where.inf) is sp.true else ()
    return values


def _by_properties(symbol: sp.Basic) -> tuple[sp.Expr, ...]:
    """The grid a symbol's name and assumptions give: its sign, and for n, gains and epsilon
    their own values."""
    name = getattr(symbol, "name", "")
    if name == "n":
        return GRIDS["n"]
    if name in ("gamma_max", "gemma_max"):
        return tuple(dict.fromkeys(abs(value) for value in GRIDS["gain"]))
    if isinstance(symbol, sp.Indexed):
        return GRIDS["gain"]
    if symbol.is_positive:
        return GRIDS["epsilon"]
    if name == "epsilon" and symbol.is_nonnegative:
        return (GRIDS["epsilon"][0], sp.Integer(0), *GRIDS["epsilon"][1:])
    if symbol.is_nonnegative:
        return GRIDS["nonnegative"]
    if symbol.is_negative:
        return tuple(-value for value in GRIDS["epsilon"])
    if symbol.is_nonpositive:
        return tuple(-value for value in GRIDS["nonnegative"])
    return GRIDS["real"]


# How far the combinations of simple values move on per seed (`points`).
SEED_BLOCK = 6


def points(
    symbols: Sequence[sp.Basic],
    conditions: Sequence[sp.Basic],
    seed: int = 0,
    ranges: Mapping[sp.Basic, sp.Set] | None = None,
) -> Iterator[dict]:
    """Points over the symbols' grids: every combination of the first few values of
    each, then seeded random combinations of all, up to MAX_POINTS, those meeting
    ``conditions`` only.  ``ranges`` are the symbols' ranges in the claim's domain.  The
    combinations start at the ``seed``-th block of `SEED_BLOCK`: the few points taken beside
    each explicit input (seeded by its number) go through them all, not only the first."""
    grids = [grid(symbol, (ranges or {}).get(symbol)) for symbol in symbols]
    if any(not values for values in grids):
        return
    seen: set[tuple[Any, ...]] = set()
    combinations = list(itertools.product(*(values[:4] for values in grids)))
    start = seed * SEED_BLOCK % len(combinations)
    nice = combinations[start:] + combinations[:start]
    rng = random.Random(seed)
    spread = (tuple(rng.choice(values) for values in grids) for _ in range(4 * MAX_POINTS))
    count = 0
    for values in itertools.chain(nice, spread):
        if values in seen:
            continue
        seen.add(values)
        count += 1
        if count > MAX_POINTS:
            return
        point = dict(zip(symbols, values, strict=True))
        if all(_holds(condition, point) for condition in conditions):
            yield point


def _holds(condition: sp.Basic, point: Mapping[sp.Basic, sp.Expr]) -> bool:
    value = condition.xreplace(dict(point))
    if value in (sp.true, sp.false):
        return bool(value)
    try:
        return bool(value)
    except TypeError:
        decided = decide(value.lhs, _OPS[type(value)], value.rhs, {})
        return decided is True


_OPS = {sp.Eq: "==", sp.Le: "<=", sp.Lt: "<", sp.Ge: ">=", sp.Gt: ">", sp.Ne: "!="}


# --- explicit inputs ------------------------------------------------------------


@dataclass(frozen=True)
class Explicit:
    """Explicit vectors for a point: entries of x, g and v (exact rationals)."""

    x: tuple[sp.Expr, ...]
    g: tuple[sp.Expr, ...] = ()
    v: tuple[sp.Expr, ...] = ()
    gain: tuple[sp.Expr, ...] = ()
    bias: tuple[sp.Expr, ...] = ()

    @property
    def size(self) -> int:
        return len(self.x)

    def entries(self) -> dict[sp.Basic, sp.Expr]:
        """Each entry of each vector (and gamma_max) by its indexed symbol; built once per input."""
        return dict(self._entries)

    @functools.cached_property
    def _entries(self) -> dict[sp.Basic, sp.Expr]:
        out: dict[sp.Basic, sp.Expr] = {x[m]: value for m, value in enumerate(self.x)}
        out.update({g[m]: value for m, value in enumerate(self.g)})
        out.update({v[m]: value for m, value in enumerate(self.v)})
        out.update({gamma[m]: value for m, value in enumerate(self.gain)})
        out.update({beta[m]: value for m, value in enumerate(self.bias)})
        if self.gain:
            out[gamma_max] = max(abs(value) for value in self.gain)
        return out

    def power_sum(self, summand: sp.Expr, symbol: sp.Symbol) -> sp.Expr:
        entries = self._entries
        return sp.Add(*(summand.xreplace({symbol: m}).xreplace(entries) for m in range(self.size)))


def explicit_inputs(sizes: Sequence[int], vectors: set[str], seed: int = 0) -> Iterator[Explicit]:
    """Explicit inputs, the sizes taken in turn: small integers, a constant input (with a zero
    gain), zero, then seeded random rationals at scales 1e-300 .. 1e300."""
    rng = random.Random(seed)
    scales = (sp.Integer(1), *_LOG)
    kinds = len(scales) + 3
    for kind in range(kinds):
        for size in sizes:
            if kind == 0:
                entries = tuple(sp.Integer(m - size // 2) for m in range(size))
            elif kind == 1:
                entries = tuple(sp.Integer(1) for _ in range(size))
            elif kind == 2:
                entries = tuple(sp.Integer(0) for _ in range(size))
            else:
                scale = scales[kind - 3]
                entries = tuple(scale * sp.Rational(rng.randint(-999, 999), 100) for _ in range(size))
            extra = {
                name: tuple(sp.Rational(rng.randint(-99, 99), 10) for _ in range(size)) for name in sorted(vectors)
            }
            if kind == 1 and "gamma" in extra:
                # A zero gain, the boundary of every gain: max|gamma_i| = 0 and J = 0 there.
                extra["gamma"] = tuple(sp.Integer(0) for _ in range(size))
            yield Explicit(
                entries, extra.get("g", ()), extra.get("v", ()), extra.get("gamma", ()), extra.get("beta", ())
            )


def shifted(inputs: Explicit, mean: sp.Expr) -> Explicit:
    """The input moved to the given mean, exactly."""
    size = len(inputs.x)
    offset = mean - sp.Add(*inputs.x) / size
    return Explicit(tuple(e + offset for e in inputs.x), inputs.g, inputs.v, inputs.gain, inputs.bias)


def statistics_of(layers: Sequence[Any], inputs: Explicit) -> dict[sp.Basic, sp.Expr]:
    """Each used layer's statistics of the explicit input, exactly."""
    out: dict[sp.Basic, sp.Expr] = {}
    for layer in layers:
        values = layer.explicit_statistics(inputs.size)
        entries = {x[m]: value for m, value in enumerate(inputs.x)}
        out.update({symbol: value.xreplace(entries) for symbol, value in values.items()})
    return out


# --- evaluation -------------------------------------------------------------------


def at(value: Any, point: Mapping[sp.Basic, sp.Expr], inputs: Explicit | None = None, matrices: Any = None) -> Any:
    """``value`` at the point: a SymPy number, or a list (vector) or list of lists (matrix)."""
    if isinstance(value, (Vector, Matrix)):
        assert inputs is not None
        return _entrywise(value, point, inputs, matrices)
    expr = value
    if inputs is not None:
        expr = _sums_taken(expr, inputs)
        # The point and the entries in one pass (a point fixes symbols, never an entry of a
        # vector): a Max over the entries is evaluated once, at numbers, not at symbols first.
        expr = expr.xreplace({**inputs._entries, **point})
    else:
        expr = expr.xreplace(dict(point))
    if matrices and expr.has(OpaqueNorm):
        expr = expr.replace(
            lambda e: isinstance(e, OpaqueNorm),
            lambda e: _matrix_norm(matrices[str(e.args[0])], e.args[1], point, inputs),
        )
    return expr


def _sums_taken(expr: sp.Expr, inputs: Explicit) -> sp.Expr:
    """Each sum over the entries taken at the explicit input, each Kronecker delta evaluated,
    and the largest value over the entries (an elementwise layer's norm, max_k |J_kk|) as a Max
    of the entries, left unevaluated until they are numbers."""
    expr = expr.replace(lambda e: isinstance(e, PowerSum), lambda e: inputs.power_sum(e.args[0], _index(e.args[0])))
    expr = expr.replace(lambda e: isinstance(e, sp.KroneckerDelta), lambda e: sp.KroneckerDelta(*e.args))
    return expr.replace(
        lambda e: isinstance(e, Largest),
        lambda e: LargestEntry(*(e.over(m) for m in range(inputs.size))),
    )


class LargestEntry(sp.Max):
    """The largest of the entries: unevaluated while an entry holds a symbol; once every
    entry is a number, the entry that is largest.

    SymPy's Max compares the entries in pairs, each comparison a fresh adaptive
    evaluation (tens of milliseconds for sech(x_k)**2 at x_k near 1e300).  Here each entry
    is evaluated once, strictly to 30 digits; an entry ahead of every other by more than
    those digits can resolve is the largest.  Entries that are not (a near tie, or one that
    does not evaluate strictly) are left to SymPy's Max, as before.  This trusts SymPy's
    evaluation as `decide` does (and as SymPy's Max does): exact at the exact rational
    inputs the sampler draws; SymPy can lose digits of sech at a huge irrational argument.
    """

    def __new__(cls, *args: Any, **assumptions: Any) -> Any:
        args = tuple(map(sp.sympify, args))
        if args and all(arg.is_number for arg in args):
            return _largest_number(args)
        return sp.Max.__new__(cls, *args, evaluate=False)


def _largest_number(args: tuple[sp.Expr, ...]) -> sp.Expr:
    digits = DIGITS[0]
    try:
        values = [sp.N(arg, digits, strict=True) for arg in args]
    except Exception:
        return sp.Max(*args)
    if not all(value.is_real and value.is_finite for value in values):
        return sp.Max(*args)
    top = max(values)
    margin = abs(top) * sp.Float(10) ** (8 - digits)
    near = [arg for arg, value in zip(args, values, strict=True) if top - value <= margin]
    return near[0] if len(near) == 1 else sp.Max(*near)


def _entrywise(value: Vector | Matrix, point: Mapping[sp.Basic, sp.Expr], inputs: Explicit, matrices: Any) -> Any:
    """A vector's or a matrix's entries at the point: entry (r, c) is ``value.entry`` with i = r
    (and k = c), then evaluated as a scalar.

    A largest value's own index is renamed apart first: it ranges over the entries whatever
    the row and column are.  Where no sum or largest value in the entry then mentions i or k
    (and it holds no norm), its sums are taken and the point put in once, for every entry; each
    entry then gets its indices and the input's entries at them (each found once) in one pass.
    Otherwise each entry is evaluated whole, indices first.
    """
    indices = (i,) if isinstance(value, Vector) else (i, k)
    shape = [(r,) for r in range(inputs.size)] if isinstance(value, Vector) else None
    template = apart(value.entry)
    if template.has(OpaqueNorm) or any(node.has(*indices) for node in template.atoms(PowerSum, Largest)):

        def entry(*at_indices: int) -> Any:
            return at(template.xreplace(dict(zip(indices, at_indices, strict=True))), point, inputs, matrices)

    else:
        reduced = _sums_taken(template, inputs)
        # A point's key that holds i or k (gamma[i]) matches nothing once they are numbers.
        numbers = {**inputs._entries, **{key: val for key, val in point.items() if not key.has(*indices)}}
        # A largest value here holds neither i nor k: the same number at every entry, found once.
        reduced = reduced.xreplace({node: node.xreplace(numbers) for node in reduced.atoms(LargestEntry)})
        # The numbers put in once, for every entry: what is left holds i or k, and entries at them.
        reduced = reduced.xreplace(numbers)
        held = {atom: [s for s in indices if atom.has(s)] for atom in reduced.atoms(sp.Indexed) if atom.has(*indices)}
        # An entry at given indices (x_i at i = r) is the same number in every row or column
        # that does not move them: each is found once.
        found: dict[tuple[sp.Basic, tuple[int, ...]], sp.Expr] = {}

        def held_at(atom: sp.Basic, where: dict[sp.Symbol, int]) -> sp.Expr:
            key = (atom, tuple(where[s] for s in held[atom]))
            if key not in found:
                found[key] = atom.xreplace(where).xreplace(numbers)
            return found[key]

        def entry(*at_indices: int) -> Any:
            # One pass: the indices, and each entry at them (x_i as x_r's value).
            where = dict(zip(indices, at_indices, strict=True))
            return reduced.xreplace({**where, **{atom: held_at(atom, where) for atom in held}})

    if shape is not None:
        return [entry(*index) for index in shape]
    return [[entry(r, c) for c in range(inputs.size)] for r in range(inputs.size)]


def _index(summand: sp.Expr) -> sp.Symbol:
    (symbol,) = [s for s in summand.free_symbols if s.name == "p"] or [sp.Symbol("p", integer=True, nonnegative=True)]
    return symbol


def _matrix_norm(matrix: Matrix, order: sp.Expr, point: Mapping, inputs: Explicit | None) -> sp.Expr:
    """||M||_2 (largest singular value) or ||M||_oo (largest absolute row sum) of the explicit
    matrix, at more digits than any decision asks for."""
    digits = DIGITS[-1] + 20
    entries = at(matrix, point, inputs)
    with mpmath.workdps(digits):
        try:
            exact = [[sp.N(e, digits + 10, maxn=MAXN, strict=True) for e in row] for row in entries]
        except PrecisionExhausted as lost:
            raise ValueError(f"an entry of the matrix has no {digits + 10} digits here") from lost
        values = mpmath.matrix([[mpmath.mpf(str(e)) for e in row] for row in exact])
        if order == 2:
            norm = max(mpmath.svd_r(values, compute_uv=False))
        else:
            norm = max(sum(abs(values[r, c]) for c in range(values.cols)) for r in range(values.rows))
        return sp.Float(norm, digits)


def _number(expr: sp.Expr, digits: int) -> sp.Expr | None:
    try:
        value = sp.N(expr, digits, maxn=MAXN, strict=True)
    except (ZeroDivisionError, TypeError, ValueError, OverflowError, PrecisionExhausted):
        return None
    if not (value.is_number and value.is_real and value.is_finite):
        return None
    return value


def decide(lhs: Any, op: str, rhs: Any, point: Mapping) -> bool | None:
    """Whether ``lhs op rhs`` holds at the point: True, False, or None where it is undefined
    or no precision up to 240 digits separates a near tie (never a violation then)."""
    if isinstance(lhs, list):
        pairs = list(zip(_flat(lhs), _flat(rhs), strict=True))
        results = [decide(a, op, b, point) for a, b in pairs]  # entry by entry (all(...) for <, <=, ...)
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True
    # A rational difference is decided exactly, at any size: 1/10**40 is not 0.
    difference = lhs - rhs
    if difference.is_Rational:
        return _compare(difference, op)
    for digits in DIGITS:
        a, b = _number(lhs, digits), _number(rhs, digits)
        if a is None or b is None:
            return None
        gap = a - b
        size = max(abs(a), abs(b))
        if size != 0 and abs(gap) > size * sp.Float(10) ** (8 - digits):
            return _compare(gap, op)
    return exact_tie(lhs, op, rhs, point)


def exact_tie(lhs: sp.Expr, op: str, rhs: sp.Expr, point: Mapping) -> bool | None:
    """A difference no fixed precision separated.  Exactly 0 once the point is put in
    (a tie: decided as equality), or SymPy's adaptive evaluation, up to 3000 digits,
    gives its sign; else it is undecided, never a violation."""
    try:
        difference = (lhs - rhs).xreplace(dict(point))
        if difference == 0:
            return _compare(0, op)
        if difference.atoms(sp.Float):
            # A value computed to finite precision (a matrix norm) equal to the
            # other side at every digit it has: equal as far as can be told.
            return True if op in ("==", "<=", ">=") else None
        value = difference.evalf(15, maxn=3000, strict=True)
    except Exception:
        return None
    if not (value.is_number and value.is_real) or value == 0:
        return None
    return _compare(value, op)


def _compare(gap: Any, op: str) -> bool:
    return bool(
        {
            "==": gap == 0,
            "<=": gap <= 0,
            "<": gap < 0,
            ">=": gap >= 0,
            ">": gap > 0,
        }[op]
    )


class Compiled:
    """Both sides of a scalar claim as mpmath functions of the sampled symbols, decided
    at 30 digits and again at up to 240 where a difference is small against the sides."""

    def __init__(self, lhs: sp.Expr, rhs: sp.Expr, symbols: Sequence[sp.Basic]) -> None:
        names = [sp.Dummy() for _ in symbols]
        rename = dict(zip(symbols, names, strict=True))
        self.symbols = list(symbols)
        self.exact = not (lhs - rhs).free_symbols
        self.lhs, self.rhs = lhs, rhs
        self._lhs = sp.lambdify(names, lhs.xreplace(rename), modules="mpmath")
        self._rhs = sp.lambdify(names, rhs.xreplace(rename), modules="mpmath")

    def sides(self, point: Mapping[sp.Basic, sp.Expr], digits: int = 30) -> tuple[Any, Any] | None:
        with mpmath.workdps(digits):
            values = [mpmath.mpf(sp.Rational(point[s]).p) / sp.Rational(point[s]).q for s in self.symbols]
            try:
                a, b = self._lhs(*values), self._rhs(*values)
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                return None
            if not all(isinstance(e, (mpmath.mpf, int, float)) and not mpmath.isnan(e) for e in (a, b)):
                return None
            return mpmath.mpf(a), mpmath.mpf(b)

    def decide(self, op: str, point: Mapping[sp.Basic, sp.Expr]) -> bool | None:
        """Decided only where two precisions agree on both sides and on the separation:
        a side that loses its digits to cancellation (s - sqrt(q) at q = 1e100) is
        evaluated again at more digits before its value is trusted."""
        if self.exact:
            return decide(self.lhs, op, self.rhs, point)
        previous = None
        for digits in DIGITS:
            found = self.sides(point, digits)
            if found is None:
                return None
            a, b = found
            if mpmath.isinf(a) or mpmath.isinf(b):
                return None if a == b else _compare(a - b, op)
            if previous is not None:
                with mpmath.workdps(digits):
                    size = max(abs(a), abs(b))
                    stable = all(
                        abs(now - before) <= size * mpmath.mpf(10) ** (10 - previous[2])
                        for now, before in ((a, previous[0]), (b, previous[1]))
                    )
                    if stable and size != 0 and abs(a - b) > size * mpmath.mpf(10) ** (8 - previous[2]):
                        holds = _compare(a - b, op)
                        # A violation is confirmed by SymPy's adaptive evaluation of lhs - rhs,
                        # which sees through a cancellation fixed precision cannot.
                        return holds if holds else _adaptive(self.lhs - self.rhs, op, point)
            previous = (a, b, digits)
        return exact_tie(self.lhs, op, self.rhs, point)


def _adaptive(difference: sp.Expr, op: str, point: Mapping[sp.Basic, sp.Expr]) -> bool | None:
    """``difference op 0`` at the point by adaptive evaluation, or None where it cannot tell."""
    try:
        value = difference.xreplace(dict(point)).evalf(15, maxn=3000, strict=True)
    except Exception:
        return None
    if not (value.is_number and value.is_real):
        return None
    return _compare(value, op)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [e for item in value for e in _flat(item)]
    return [value]


def as_number(value: sp.Expr) -> int | float:
    return int(value) if value.is_Integer else float(value)


def input_for(point: Mapping[sp.Basic, sp.Expr], size: int) -> list[sp.Expr]:
    """An explicit x of ``size`` entries with the point's mean mu and variance q (or mean square r):
    x = mu + sqrt(q) z, with z of mean 0 and mean square 1."""
    from derivations.symbols import mu, q, r

    values = {str(symbol): value for symbol, value in point.items()}
    mean = values.get(str(mu), sp.Integer(0))
    variance = values.get(str(q), values.get(str(r), mean**2) - mean**2)
    centre = sp.Rational(size - 1, 2)
    spread = sp.sqrt(sp.Rational(size**2 - 1, 12))
    return [sp.N(mean + sp.sqrt(variance) * (m - centre) / spread, 30) for m in range(size)]
