"""A brute-force reference for claims: a claim evaluated at one concrete point, in plain mpmath.

Nothing here comes from the derivations the claims checker uses (`derivations.quantities`,
`response`, `jacobian`, `eigen`, `spectral`, `numeric`, `derivations.claims`).  It reads only
each layer's *definition* (`derivations.LAYERS[key]`: its explicit output entries and
statistics, its input patterns, its eigen directions, its parameters and the s it displays),
has SymPy turn those expressions into mpmath functions, parses the claim with `ast` itself, and
computes everything else:

- the response on an input pattern is the definition written out at that input (`on_pattern`);
  the slope is its derivative in t by central differences at twice the digits and more, at two
  step sizes; it is undefined where the response is, or at a kink (the one-sided differences
  disagree); the slope at zero is that derivative at t = 0, the asymptote the limit as t -> oo;
- the Jacobian is the matrix of those differences of the written-out output entries, column
  by column (undefined at a kink of any entry: on ||x|| = epsilon of the clamped layers); its
  spectral norm (and ``norm(J, 2)``) the largest singular value (``mpmath.svd_r``), ``norm(J, oo)``
  the largest absolute row sum;
- ``eigen_<direction>`` is the lambda with J d = lambda d along the direction the layer names
  (on a subspace, one lambda on all of an orthonormal basis of it).  Where d is the zero vector
  (c at a constant input, x at 0) it is the limit as the input leaves that point along two
  generic directions, undefined where they differ; on an empty subspace (the complement of 1
  and c at n = 2) there is no eigenvalue and the reference does not judge (`Unsupported`);
- the statistics (mu, q, r, sigma, sigma_u, norm_x, and s where the layer writes s) are the
  definition's statistics of the explicit input; the second moment is the mean of the squared
  outputs; the output at a constant input is output entry 0 at x = t 1;
- a limit is evaluated on points approaching its point (2**-40, 2**-80, 2**-160 and 2**-320
  times the point's smallest scale; 2**40 .. 2**320 times its largest toward +-oo), from each
  side asked for (t -> p is two-sided unless "+" or "-" is given; epsilon -> 0 from above): a
  limit whose sides differ is undefined, one that grows by orders of magnitude with one sign is
  +-oo, one that does neither clearly is unknown.

Every number carries an estimate of its error: each definition function is evaluated at two
precisions (their difference is its error), each derivative at two steps, each limit by the
distance its last steps leave, and arithmetic propagates them to first order.  `evaluate`
decides a relation at one precision: where the sides are apart by more than four times their
errors and by more than 10**-(digits/2) of their size (1e-30 at 60 digits); exactly equal sides
without error are equal; anything else is UNKNOWN, never FALSE.  `confirmed` settles it at 60
and again at 90 digits: FALSE and UNDEFINED only where both say so, and a gap that is within
the errors at both precisions while the errors shrink by 15 digits and more (rounding noise
around 0) is a tie: equal, so ``q > 0`` is false at a constant input of 3 entries, whose q is
computed as 1e-120 at 60 digits and 1e-150 at 90.

`evaluate` and `confirmed` return TRUE, FALSE, UNDEFINED (a side is undefined: a division by
zero, 0/0, a square root of a negative number or a fractional power of one, a limit that does
not exist, a derivative at a kink) or UNKNOWN; `Unsupported` is raised for what the reference
does not evaluate (a name the layer lacks, a construct outside the claim language).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import mpmath
import sympy as sp

from derivations import LAYERS

TRUE, FALSE, UNDEFINED, UNKNOWN = "true", "false", "undefined", "unknown"

DIGITS = 60  # working digits of a value
SECOND = 90  # the digits a finding is confirmed at
_STORE = 200  # digits a point's coordinates are stored with
_digits = [DIGITS]

PATTERN_QUANTITIES = ("response", "slope", "slope_at_zero", "asymptote")
GENERAL_NAMES = {"x", "y", "c", "ones", "J", "g", "v", "n", "d", "s", "second_moment", "spectral_norm"}
GENERAL_NAMES |= {"constant_response"}
FUNCTIONS = {"sqrt", "abs", "exp", "max", "min", "limit", "norm", "sum", "mean", "dot"}
# Also read in a condition a verdict states in SymPy's spelling (today's "where Abs(t) != 0").
FUNCTIONS |= {"Abs", "Max", "Min", "tanh", "sech", "sign", "Piecewise"}


class Undefined(Exception):
    """A side of the claim has no value at the point."""


class Unknown(Exception):
    """The value cannot be told at this precision."""


class Unsupported(Exception):
    """A construct the reference does not evaluate."""


@contextlib.contextmanager
def precision(digits: int) -> Iterator[None]:
    """Evaluate at ``digits`` working digits inside the block."""
    _digits.append(digits)
    try:
        yield
    finally:
        _digits.pop()


def _work() -> int:
    return _digits[-1]


def _mpf(value: Any) -> mpmath.mpf:
    """A coordinate of a point, exactly where it is an integer, a dyadic or a short decimal."""
    if isinstance(value, mpmath.mpf):
        return value
    if isinstance(value, float):
        value = Fraction(repr(value))
    if isinstance(value, str):
        value = Fraction(value)
    if isinstance(value, sp.Rational):
        value = Fraction(int(value.p), int(value.q))
    value = Fraction(value)
    with mpmath.workdps(_STORE):
        return mpmath.mpf(value.numerator) / value.denominator


# --- values with an error estimate ------------------------------------------------------


@dataclass(frozen=True)
class Val:
    """A real number (possibly +-inf) and an estimate of its absolute error."""

    v: Any
    e: Any = 0

    @property
    def exact(self) -> bool:
        return self.e == 0

    def zeroish(self) -> bool:
        with mpmath.workdps(_work()):
            return _abs(self.v) <= 4 * self.e


@dataclass(frozen=True)
class Vec:
    """A vector of values; ``row`` marks a transposed one."""

    items: tuple[Val, ...]
    row: bool = False


@dataclass(frozen=True)
class Mat:
    rows: tuple[tuple[Val, ...], ...]


def _neg(value: Any) -> Any:
    """-value, exactly (a plain - rounds to mpmath's global precision, 53 bits)."""
    return mpmath.fneg(value, exact=True)


def _abs(value: Any) -> Any:
    """|value|, exactly."""
    return _neg(value) if value < 0 else value


def _round(value: Any) -> Any:
    """The rounding error one operation adds at the working precision."""
    if mpmath.isinf(value):
        return mpmath.mpf(0)
    return abs(value) * mpmath.mpf(10) ** (3 - _work())


def _checked(value: Any) -> Any:
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            raise Undefined("a complex value")
        value = value.real
    if mpmath.isnan(value):
        raise Unknown("an indeterminate form")
    return mpmath.mpf(value)


def exact(value: Any) -> Val:
    return Val(_mpf(value), mpmath.mpf(0))


ZERO, ONE = Val(mpmath.mpf(0), mpmath.mpf(0)), Val(mpmath.mpf(1), mpmath.mpf(0))
INF = Val(mpmath.inf, mpmath.mpf(0))


def add(a: Val, b: Val) -> Val:
    with mpmath.workdps(_work()):
        if mpmath.isinf(a.v) or mpmath.isinf(b.v):
            if mpmath.isinf(a.v) and mpmath.isinf(b.v) and a.v != b.v:
                raise Unknown("oo - oo")
            return Val(a.v + b.v, mpmath.mpf(0))
        value = a.v + b.v
        return Val(value, a.e + b.e + (0 if a.exact and b.exact and _small_int(value) else _round(value)))


def neg(a: Val) -> Val:
    return Val(_neg(a.v), a.e)


def sub(a: Val, b: Val) -> Val:
    return add(a, neg(b))


def _small_int(value: Any) -> bool:
    return mpmath.isint(value) and abs(value) < mpmath.mpf(2) ** 100


def mul(a: Val, b: Val) -> Val:
    with mpmath.workdps(_work()):
        if mpmath.isinf(a.v) or mpmath.isinf(b.v):
            other = b if mpmath.isinf(a.v) else a
            if other.zeroish():
                raise Unknown("0 * oo")
            return Val(a.v * b.v, mpmath.mpf(0))
        value = a.v * b.v
        error = abs(a.v) * b.e + abs(b.v) * a.e + a.e * b.e
        if not (a.exact and b.exact and _small_int(value)):
            error += _round(value)
        return Val(value, error)


def div(a: Val, b: Val) -> Val:
    with mpmath.workdps(_work()):
        if b.v == 0 and b.exact:
            raise Undefined("a division by zero")
        if b.zeroish():
            raise Unknown("a division by a value that may be zero")
        if mpmath.isinf(b.v):
            if mpmath.isinf(a.v):
                raise Unknown("oo / oo")
            return ZERO
        if mpmath.isinf(a.v):
            return Val(a.v * mpmath.sign(b.v), mpmath.mpf(0))
        value = a.v / b.v
        error = (a.e + abs(value) * b.e) / (abs(b.v) - b.e) + _round(value)
        if a.exact and b.exact and value * b.v == a.v and _small_int(value):
            error = mpmath.mpf(0)
        return Val(value, error)


def power(a: Val, b: Val) -> Val:
    with mpmath.workdps(_work()):
        if mpmath.isinf(b.v):
            raise Unsupported("an infinite exponent")
        if b.exact and mpmath.isint(b.v):
            k = int(b.v)
            if k < 0:
                return div(ONE, power(a, Val(mpmath.mpf(-k), mpmath.mpf(0))))
            if k == 0:
                return ONE
            if mpmath.isinf(a.v):
                return Val(a.v**k, mpmath.mpf(0))
            value = a.v**k
            error = (abs(a.v) + a.e) ** k - abs(a.v) ** k if a.e else mpmath.mpf(0)
            if not (a.exact and _small_int(value)):
                error += _round(value)
            return Val(value, error)
        if mpmath.isinf(a.v):
            if a.v < 0:
                raise Undefined("a negative base to a fractional power")
            return INF if b.v > 0 else ZERO
        if a.v == 0 and a.exact:
            if b.zeroish():
                raise Unknown("0 ** (about 0)")
            if b.v < 0:
                raise Undefined("0 to a negative power")
            return ZERO
        if a.v < -4 * a.e:
            raise Undefined("a negative base to a fractional power")
        if a.zeroish():
            if b.v > 4 * b.e:
                top = (abs(a.v) + a.e) ** b.v
                return Val(top / 2, top / 2)
            raise Unknown("about 0 to a negative power")
        value = a.v**b.v
        error = abs(value) * (abs(b.v) * a.e / (abs(a.v) - a.e) + abs(mpmath.log(a.v)) * b.e) + _round(value)
        return Val(value, error)


def sqrt(a: Val) -> Val:
    with mpmath.workdps(_work()):
        if mpmath.isinf(a.v):
            if a.v < 0:
                raise Undefined("sqrt of -oo")
            return INF
        if a.v == 0 and a.exact:
            return ZERO
        if a.v < -4 * a.e:
            raise Undefined("a square root of a negative number")
        if a.zeroish():
            top = mpmath.sqrt(abs(a.v) + a.e)
            return Val(top / 2, top / 2)
        value = mpmath.sqrt(a.v)
        exact_root = a.exact and _small_int(value) and value * value == a.v
        return Val(value, mpmath.mpf(0) if exact_root else a.e / (2 * value) + _round(value))


def absolute(a: Val) -> Val:
    return Val(_abs(a.v), a.e)


def exponential(a: Val) -> Val:
    with mpmath.workdps(_work()):
        if mpmath.isinf(a.v):
            return INF if a.v > 0 else ZERO
        if a.v == 0 and a.exact:
            return ONE
        value = mpmath.exp(a.v)
        return Val(value, value * (mpmath.exp(a.e) - 1) + _round(value))


def largest(values: Sequence[Val], sign: int = 1) -> Val:
    best = max(values, key=lambda value: sign * value.v)
    return Val(best.v, max(value.e for value in values))


def compare(a: Val, op: str, b: Val) -> str:
    """TRUE or FALSE where the sides are apart by more than their errors and 1e-30 relative
    (or are equal with no error at all), else UNKNOWN."""
    with mpmath.workdps(_work()):
        if mpmath.isinf(a.v) or mpmath.isinf(b.v):
            sign = 0 if a.v == b.v else (1 if a.v > b.v else -1)
        else:
            gap = a.v - b.v
            error = a.e + b.e
            size = max(abs(a.v), abs(b.v))
            if gap == 0 and error == 0:
                sign = 0
            elif abs(gap) > 4 * error + size * mpmath.mpf(10) ** -(_work() // 2):
                sign = 1 if gap > 0 else -1
            else:
                return UNKNOWN
    holds = {
        "==": sign == 0,
        "!=": sign != 0,
        "<=": sign <= 0,
        "<": sign < 0,
        ">=": sign >= 0,
        ">": sign > 0,
    }[op]
    return TRUE if holds else FALSE


# --- points --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One input and one value of every other symbol a claim may name.

    ``pattern`` is the index of the layer's input pattern the claim is taken at (x is then that
    pattern's values at t, n = its size), or None for an explicit input ``x``.  ``gain`` and
    ``bias`` have n entries for a layer with parameters; ``g`` and ``v`` n entries where used.
    """

    layer: str
    pattern: int | None = None
    t: Any = None
    x: tuple[Any, ...] = ()
    epsilon: Any = None
    alpha: Any = None
    gain: tuple[Any, ...] = ()
    bias: tuple[Any, ...] = ()
    g: tuple[Any, ...] = ()
    v: tuple[Any, ...] = ()

    @property
    def n(self) -> int:
        return len(LAYERS[self.layer].patterns[self.pattern].values) if self.pattern is not None else len(self.x)

    def inputs(self) -> tuple[Any, ...]:
        """The explicit input: the pattern's values at t, or x."""
        if self.pattern is None:
            return self.x
        return _pattern_inputs(self.layer, self.pattern, self.t)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("t", "epsilon", "alpha"):
            value = getattr(self, name)
            if value is not None:
                out[name] = mpmath.nstr(value, 12)
        if self.pattern is not None:
            out["pattern"] = str(LAYERS[self.layer].patterns[self.pattern])
        out["x"] = [mpmath.nstr(e, 12) for e in self.inputs()]
        for name in ("gain", "bias", "g", "v"):
            value = getattr(self, name)
            if value:
                out[name] = [mpmath.nstr(e, 12) for e in value]
        return out


def point(
    layer: str,
    *,
    pattern: int | None = None,
    t: Any = None,
    x: Sequence[Any] = (),
    epsilon: Any = None,
    alpha: Any = None,
    gain: Sequence[Any] = (),
    bias: Sequence[Any] = (),
    g: Sequence[Any] = (),
    v: Sequence[Any] = (),
) -> Point:
    """A `Point` from numbers (int, Fraction, float read as its shortest decimal, str, mpf)."""

    def one(value: Any) -> Any:
        return None if value is None else _mpf(value)

    def many(values: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(_mpf(value) for value in values)

    return Point(layer, pattern, one(t), many(x), one(epsilon), one(alpha), many(gain), many(bias), many(g), many(v))


@functools.cache
def _pattern_function(layer: str, pattern: int) -> Callable[..., Any]:
    values = LAYERS[layer].patterns[pattern].values
    t = sp.Symbol("t", real=True)
    (symbol,) = {s for e in values for s in e.free_symbols} or {t}
    return sp.lambdify([symbol], list(values), modules="mpmath")


def _pattern_inputs(layer: str, pattern: int, t: Any) -> tuple[Any, ...]:
    with mpmath.workdps(max(_STORE, mpmath.mp.dps + 10)):
        return tuple(mpmath.mpf(e) for e in _pattern_function(layer, pattern)(t))


# --- the definition, as mpmath functions -------------------------------------------------


@dataclass(frozen=True)
class _Compiled:
    """Expressions of a layer's definition as one mpmath function, and what to call it with."""

    function: Callable[..., Any]
    arguments: tuple[tuple[str, int], ...]  # ("x", m), ("epsilon", 0), ("gain", m), ...

    def call(self, at: Point, inputs: Sequence[Any], t: Any = None) -> list[Any]:
        values = []
        for kind, index in self.arguments:
            if kind == "x":
                values.append(inputs[index])
            elif kind == "t":
                values.append(at.t if t is None else t)
            elif kind in ("gain", "bias"):
                entries = getattr(at, kind)
                if index >= len(entries):
                    raise Unsupported(f"no {kind} entry {index} at this point")
                values.append(entries[index])
            else:
                value = getattr(at, kind)
                if value is None:
                    raise Unsupported(f"the point has no {kind}")
                values.append(value)
        try:
            out = self.function(*values)
        except ZeroDivisionError as error:
            raise Undefined("a division by zero in the definition") from error
        except (ValueError, OverflowError) as error:
            raise Undefined(f"the definition has no value here ({error})") from error
        return [_checked(e) for e in out]


def _compile(layer: str, expressions: Sequence[sp.Expr]) -> _Compiled:
    definition = LAYERS[layer]
    parameters = {str(base): name for name, base in definition.parameters}
    scalars = {str(symbol): name for name, symbol in definition.scalars}
    arguments: list[tuple[str, int]] = []
    dummies: dict[sp.Basic, sp.Symbol] = {}
    atoms: set[sp.Basic] = set()
    for expr in expressions:
        atoms |= expr.atoms(sp.Indexed)
        atoms |= {s for s in expr.free_symbols if not any(s in i.free_symbols for i in expr.atoms(sp.Indexed))}
    for atom in sorted(atoms, key=str):
        if isinstance(atom, sp.Indexed):
            base, index = str(atom.base), atom.indices[0]
            if not index.is_Integer:
                raise Unsupported(f"entry {atom} at a symbolic index")
            if base == "x":
                kind = "x"
            elif base in parameters:
                kind = parameters[base]
            else:
                raise Unsupported(f"{atom} in the definition of {layer}")
            arguments.append((kind, int(index)))
        else:
            name = str(atom)
            if name in ("t", "epsilon"):
                arguments.append((name, 0))
            elif name in scalars and scalars[name] == "alpha":
                arguments.append(("alpha", 0))
            else:
                raise Unsupported(f"symbol {name} in the definition of {layer}")
        dummies[atom] = sp.Dummy(str(atom).replace("[", "_").replace("]", ""))
    function = sp.lambdify(
        [dummies[a] for a in sorted(atoms, key=str)],
        [e.xreplace(dummies) for e in expressions],
        modules="mpmath",
    )
    return _Compiled(function, tuple(arguments))


@functools.cache
def _outputs_function(layer: str, size: int) -> _Compiled:
    return _compile(layer, [LAYERS[layer].explicit_entry(size, m) for m in range(size)])


@functools.cache
def _statistics_function(layer: str, size: int) -> tuple[tuple[str, ...], _Compiled]:
    values = LAYERS[layer].explicit_statistics(size)
    names = tuple(str(symbol) for symbol in values if not isinstance(symbol, sp.Indexed))
    if len(names) != len(values):
        raise Unsupported(f"{layer} takes a mean over a subset")
    return names, _compile(layer, [values[symbol] for symbol in values])


@functools.cache
def _response_function(layer: str, pattern: int) -> _Compiled:
    definition = LAYERS[layer]
    return _compile(layer, [definition.on_pattern(definition.patterns[pattern])])


@functools.cache
def _s_function(layer: str) -> tuple[tuple[str, ...], Callable[..., Any]] | None:
    """s as the layer writes it (sqrt(q + epsilon) -> s), as a function of its statistics and epsilon."""
    for old, new in LAYERS[layer].display:
        if str(new) == "s":
            symbols = sorted(old.free_symbols, key=str)
            return tuple(map(str, symbols)), sp.lambdify(symbols, old, modules="mpmath")
    return None


def _twice(compute: Callable[[], list[Any]]) -> list[Val]:
    """``compute()`` at the working precision and 30 digits more: the value from the second,
    the difference as its error.  Undefined at both is undefined; at one only, unknown."""
    results = []
    for digits in (_work(), _work() + 30):
        with mpmath.workdps(digits):
            try:
                results.append(compute())
            except Undefined as error:
                results.append(error)
    low, high = results
    if isinstance(low, Undefined) and isinstance(high, Undefined):
        raise high
    if isinstance(low, Undefined) or isinstance(high, Undefined):
        raise Unknown("defined at one precision only")
    out = []
    with mpmath.workdps(_work() + 30):
        for a, b in zip(low, high, strict=True):
            if mpmath.isinf(a) or mpmath.isinf(b):
                if a != b:
                    raise Unknown("infinite at one precision only")
                out.append(Val(b, mpmath.mpf(0)))
                continue
            error = abs(a - b)
            if error:
                error += abs(b) * mpmath.mpf(10) ** (2 - _work())
            out.append(Val(b, error))
    return out


# --- atoms at a point (cached) ---------------------------------------------------------------

_CACHED: list[Any] = []


def _cached(function: Callable[..., Any]) -> Callable[..., Any]:
    """Cache by the point and the working precision; a raised Undefined or Unknown is cached too."""

    @functools.lru_cache(maxsize=20000)
    def inner(at: Point, digits: int, *extra: Any) -> Any:
        try:
            return ("ok", function(at, *extra))
        except (Undefined, Unknown, Unsupported) as error:
            return ("raised", error)

    _CACHED.append(inner)

    @functools.wraps(function)
    def outer(at: Point, *extra: Any) -> Any:
        kind, value = inner(at, _work(), *extra)
        if kind == "raised":
            raise value
        return value

    return outer


@_cached
def statistics(at: Point) -> dict[str, Val]:
    names, compiled = _statistics_function(at.layer, at.n)
    inputs = at.inputs()
    values = _twice(lambda: compiled.call(at, inputs))
    out = dict(zip(names, values, strict=True))
    s = _s_function(at.layer)
    if s is not None:
        symbols, function = s

        def compute() -> list[Any]:
            known = {**dict(zip(names, compiled.call(at, inputs), strict=True)), "epsilon": at.epsilon}
            if any(known.get(name) is None for name in symbols):
                raise Unsupported("s needs epsilon")
            try:
                return [_checked(function(*(known[name] for name in symbols)))]
            except ZeroDivisionError as error:
                raise Undefined("s") from error

        try:
            (out["s"],) = _twice(compute)
        except (Undefined, Unknown) as error:
            out["s"] = error
    return out


@_cached
def outputs(at: Point) -> tuple[Val, ...]:
    compiled = _outputs_function(at.layer, at.n)
    inputs = at.inputs()
    return tuple(_twice(lambda: compiled.call(at, inputs)))


@_cached
def response(at: Point, pattern: int) -> Val:
    compiled = _response_function(at.layer, pattern)
    inputs = _pattern_inputs(at.layer, pattern, at.t)
    (value,) = _twice(lambda: compiled.call(at, inputs))
    return value


def _scales(at: Point, without: str | None = None) -> list[Any]:
    """The lengths over which the definition can change at this point: epsilon, 1/|alpha|, the
    input's entries and their differences, t (each also squared and as a square root)."""
    base: list[Any] = []
    if at.epsilon is not None and without != "epsilon":
        base.append(at.epsilon)
    if at.alpha is not None and at.alpha != 0:
        base.append(1 / at.alpha)
    if without != "t":
        if at.t is not None:
            base.append(at.t)
        entries = at.inputs()
        base += list(entries)
        base += [a - b for a, b in itertools.combinations(entries, 2)]
    elif at.pattern is None:
        base += list(at.x)
        base += [a - b for a, b in itertools.combinations(at.x, 2)]
    out = [mpmath.mpf(1)]
    with mpmath.workdps(_STORE):
        for value in base:
            if value != 0:
                out += [abs(value), abs(value) ** 2, mpmath.sqrt(abs(value))]
    return out


def derivative(function: Callable[[Any], list[Any]], u: Any, scale: Any, size: Any = 1) -> list[Val]:
    """d/du of each entry of ``function`` at u, by central differences at two steps (``scale``
    times 10**-(digits/2 + 5), and that over 1024), worked at twice the digits and more (more
    again as the arguments' ``size`` exceeds the scale).  Undefined where the function is, or
    at a kink (the one-sided differences disagree); unknown where a step leaves its domain."""
    digits = _work()
    with mpmath.workdps(_STORE):
        ratio = max(abs(u), size, 1) / scale
    work = 2 * digits + 40 + max(0, int(mpmath.log10(ratio)) + 1)
    with mpmath.workdps(work):
        f0 = function(u)
        step = scale * mpmath.mpf(2) ** -int(3.33 * (digits / 2 + 5))
        small = step / 1024
        try:
            plus, minus = function(u + step), function(u - step)
            plus2, minus2 = function(u + small), function(u - small)
        except Undefined as error:
            raise Unknown("a step leaves the domain") from error
        out = []
        for a0, ap, am, ap2, am2 in zip(f0, plus, minus, plus2, minus2, strict=True):
            coarse = (ap - am) / (2 * step)
            fine = (ap2 - am2) / (2 * small)
            largest_value = max(abs(a0), abs(ap2), abs(am2), abs(ap), abs(am))
            noise = largest_value * mpmath.mpf(10) ** (5 - work) / small
            right, left = (ap2 - a0) / small, (a0 - am2) / small
            slope = max(abs(right), abs(left))
            allowed = slope * mpmath.mpf(10) ** -12 + 10**6 * (small / scale) * (abs(a0) / scale + slope) + 10 * noise
            if abs(right - left) > allowed:
                raise Undefined("a kink: the one-sided derivatives differ")
            error = abs(coarse - fine) + noise + abs(fine) * mpmath.mpf(10) ** (2 - digits)
            out.append(Val(fine, error))
    return out


@_cached
def slope(at: Point, pattern: int) -> Val:
    """d response / dt at the point's t."""
    response(at, pattern)  # undefined where the response is
    compiled = _response_function(at.layer, pattern)

    def function(u: Any) -> list[Any]:
        return compiled.call(at, _pattern_inputs(at.layer, pattern, u), t=u)

    scales = _scales(at)
    (value,) = derivative(function, at.t, min(scales), max(scales))
    return value


@_cached
def jacobian(at: Point) -> Mat:
    compiled = _outputs_function(at.layer, at.n)
    inputs = list(at.inputs())
    scales = _scales(at)
    columns = []
    for column in range(at.n):

        def function(u: Any, column: int = column) -> list[Any]:
            moved = list(inputs)
            moved[column] = u
            return compiled.call(at, moved)

        columns.append(derivative(function, inputs[column], min(scales), max(scales)))
    return Mat(tuple(tuple(columns[c][r] for c in range(at.n)) for r in range(at.n)))


def _matrix_values(matrix: Mat) -> tuple[Any, Any]:
    """The matrix of values and the Frobenius norm of its errors."""
    if any(mpmath.isinf(e.v) for row in matrix.rows for e in row):
        raise Unknown("an infinite entry")
    values = mpmath.matrix([[e.v for e in row] for row in matrix.rows])
    error = mpmath.sqrt(mpmath.fsum(e.e**2 for row in matrix.rows for e in row))
    return values, error


def spectral(matrix: Mat) -> Val:
    """The largest singular value; its error at most the norm of the entries' errors."""
    with mpmath.workdps(_work()):
        values, error = _matrix_values(matrix)
        top = max(mpmath.svd_r(values, compute_uv=False))
        return Val(top, error + _round(top))


def row_sum_norm(matrix: Mat) -> Val:
    with mpmath.workdps(_work()):
        sums = []
        for row in matrix.rows:
            total = ZERO
            for entry in row:
                total = add(total, absolute(entry))
            sums.append(total)
        return largest(sums)


# --- eigen directions -----------------------------------------------------------------------


@functools.cache
def _direction_function(expr: sp.Expr, size: int) -> tuple[tuple[str, ...], Callable[..., Any]]:
    """A direction's entries at ``size`` entries, as one function of x_0 .. and the statistics."""
    k = next((s for s in expr.free_symbols if str(s) == "k"), sp.Symbol("k"))
    entries = []
    for m in range(size):
        entry = expr.xreplace({k: m})
        replaced: dict[sp.Basic, Any] = {}
        for atom in entry.atoms(sp.Indexed):
            if str(atom.base) != "x":
                raise Unsupported(f"{atom} in a direction")
            replaced[atom] = sp.Symbol(f"x_{int(atom.indices[0])}")
        entries.append(entry.xreplace(replaced))
    symbols = sorted(set().union(*(e.free_symbols for e in entries)), key=str)
    return tuple(map(str, symbols)), sp.lambdify(symbols, entries, modules="mpmath")


def _direction_entries(at: Point, expr: sp.Expr) -> list[Val]:
    """A direction's entry at each k, at the point's input (its statistics put in)."""
    names, function = _direction_function(expr, at.n)
    stats = statistics(at)
    inputs = at.inputs()
    args = []
    for name in names:
        if name.startswith("x_"):
            args.append(Val(inputs[int(name[2:])], mpmath.mpf(0)))
        elif name in stats:
            value = stats[name]
            if isinstance(value, Exception):
                raise value
            args.append(value)
        else:
            raise Unsupported(f"{name} in a direction")
    # A statistic with an error: the entries move by about that error.
    spread = max(a.e for a in args) if any(not a.exact for a in args) else mpmath.mpf(0)
    with mpmath.workdps(_work()):
        values = [_checked(e) for e in function(*(a.v for a in args))]
        return [Val(value, spread * 4 + _round(value) if spread or value != 0 else 0) for value in values]


def _eigenvalue_along(matrix: Mat, vectors: list[list[Val]]) -> Val:
    """The one lambda with M w = lambda w for every w of ``vectors`` (orthonormal), else unknown."""
    if not vectors:
        raise Unknown("an empty subspace has no eigenvalue")
    found = []
    for w in vectors:
        image = [_dot(row, w) for row in matrix.rows]
        value = _dot(w, image)
        for a, b in zip(image, w, strict=True):
            if compare(a, "==", mul(value, b)) == FALSE:
                raise Unknown("not an eigenvector here")
        found.append(value)
    for other in found[1:]:
        if compare(other, "==", found[0]) == FALSE:
            raise Unknown("not one eigenvalue on the subspace")
    return Val(found[0].v, max(value.e for value in found))


def _dot(a: Sequence[Val], b: Sequence[Val]) -> Val:
    total = ZERO
    for x, y in zip(a, b, strict=True):
        total = add(total, mul(x, y))
    return total


def _orthonormal(vectors: list[list[Val]], completing: bool = False, floor: Any = None) -> list[list[Val]]:
    """Gram-Schmidt on the values.  A vector exactly zero is dropped; one zero within its errors
    makes the result unknown, except when ``completing`` a basis, where a vector (nearly) in the
    span so far, shorter than ``floor`` (default 1e-20) once projected, is dropped."""
    out: list[list[Val]] = []
    for vector in vectors:
        current = list(vector)
        for basis in out:
            projection = _dot(current, basis)
            current = [sub(a, mul(projection, b)) for a, b in zip(current, basis, strict=True)]
        length = sqrt(_dot(current, current))
        if length.v == 0 and length.exact:
            continue
        if completing and length.v < (mpmath.mpf(10) ** -20 if floor is None else floor):
            continue
        if length.zeroish():
            raise Unknown("a direction that may be zero")
        out.append([div(a, length) for a in current])
    return out


@_cached
def eigenvalue(at: Point, name: str) -> Val:
    """The eigenvalue of J along the named direction.  Where that direction is the zero vector
    (c at a constant input, x at x = 0) it is the limit as the input leaves that point along two
    generic directions (undefined where those differ); on an empty subspace (the complement of
    1 and c at n = 2) there is none, and the reference does not judge (Unsupported)."""
    definition = LAYERS[at.layer]
    directions = {d.name: d for d in definition.directions}
    if name not in directions:
        raise Unsupported(f"{at.layer} has no direction {name}")
    direction = directions[name]
    matrix = jacobian(at)
    with mpmath.workdps(_work()):
        if not direction.complement:
            entries = _direction_entries(at, direction.entry)
            try:
                basis = _orthonormal([entries])
            except Unknown:
                basis = []
            if not basis:
                return _continued(at, name)
            return _eigenvalue_along(matrix, basis)
        # The subspace where each constraint's sum over k vanishes: orthogonal to each
        # constraint's coefficient vector of w_k (a coefficient vector that is zero, or zero
        # but for rounding, constrains nothing).
        normals = []
        for constraint in direction.constraints:
            (w,) = [a for a in constraint.atoms(sp.Indexed) if str(a.base) == "w"]
            coefficient = sp.expand(constraint).coeff(w)
            normals.append(_direction_entries(at, coefficient))
        size = max((_abs(e) for e in at.inputs()), default=mpmath.mpf(0))
        spanned = _orthonormal(normals, completing=True, floor=size * mpmath.mpf(10) ** -25)
        unit = [[ONE if r == c else ZERO for r in range(at.n)] for c in range(at.n)]
        basis = _orthonormal(spanned + unit, completing=True)[len(spanned) :]
        if not basis:
            raise Unsupported(f"eigen_{name} of {at.layer} at n = {at.n}: the subspace is empty")
        return _eigenvalue_along(matrix, basis)


def _continued(at: Point, name: str) -> Val:
    """The eigenvalue along a direction that vanishes at the point, as the limit along two
    generic ways out of it (x + delta u, delta -> 0+)."""
    if _continuing:
        raise Unknown("the direction is zero here")
    base = list(at.inputs())
    found = []
    _continuing.append(True)
    try:
        # The last points are 2**-320 (1e-96) from the input: worked at 110 digits more.
        with precision(_work() + 110):
            for way in ([m + 1 for m in range(at.n)], [(-1) ** m * (m + 2) for m in range(at.n)]):

                def function(delta: Any, way: list[int] = way) -> Val:
                    with mpmath.workdps(_STORE):
                        moved = tuple(b + delta * u for b, u in zip(base, way, strict=True))
                    inner = Point(at.layer, None, at.t, moved, at.epsilon, at.alpha, at.gain, at.bias, at.g, at.v)
                    return eigenvalue(inner, name)

                found.append(limit(function, at, "delta", ZERO, "+"))
            same = compare(found[0], "==", found[1])
    finally:
        _continuing.pop()
    if same == FALSE:
        raise Undefined("the eigenvalue has no limit where its direction vanishes")
    return Val(found[0].v, max(found[0].e, found[1].e))


_continuing: list[bool] = []


# --- limits -------------------------------------------------------------------------------

_BITS = (40, 80, 160, 320)


def _sequence(function: Callable[[Any], Val], points: list[Any]) -> Val:
    """The limit of the values at ``points`` (approaching the limit point): the last value where
    the steps between them shrink, +-oo where they grow by orders of magnitude with one sign."""
    values = []
    undefined = None
    for u in points:
        try:
            values.append(function(u))
        except Undefined as error:
            undefined = error
    if undefined is not None:
        if values:
            raise Unknown("undefined at some points of the sequence only")
        raise undefined
    with mpmath.workdps(_work()):
        if any(mpmath.isinf(v.v) for v in values):
            if all(v.v == values[-1].v for v in values[-2:]):
                return values[-1]
            raise Unknown("an infinite value on the way")
        steps = [abs(b.v - a.v) for a, b in itertools.pairwise(values)]
        last = values[-1]
        floor = 10 * (values[-1].e + values[-2].e)
        if steps[-1] <= floor or steps[-1] <= abs(last.v) * mpmath.mpf(10) ** -(_work() // 2 + 10):
            return Val(last.v, last.e + 2 * steps[-1] + values[-2].e)
        if steps[-1] < steps[-2] < steps[-3] and steps[-1] <= mpmath.mpf(10) ** -6 * max(abs(last.v), steps[0]):
            # The points' exponents double, so a power law's next step is the last one times
            # the square of the last ratio of steps: the distance left to the limit, times 100.
            ratio = steps[-1] / steps[-2]
            left = 100 * steps[-1] * ratio**2 if ratio < mpmath.mpf(10) ** -3 else 4 * steps[-1]
            return Val(last.v, last.e + values[-2].e + left)
        determined = all(abs(v.v) > 4 * v.e for v in values[1:])
        magnitudes = [abs(v.v) for v in values]
        signs = {mpmath.sign(v.v) for v in values[1:]}
        growing = magnitudes[3] > 10**6 * magnitudes[2] and magnitudes[2] > 10**3 * magnitudes[1]
        if determined and len(signs) == 1 and growing:
            return Val(mpmath.inf * signs.pop(), mpmath.mpf(0))
        raise Unknown("the limit is not clear on the sequence")


def limit(function: Callable[[Any], Val], at: Point, variable: str, target: Val, direction: str) -> Val:
    """The limit of ``function(u)`` as the variable tends to ``target`` from ``direction``
    ("+", "-" or "" for both sides: undefined where they differ)."""
    with mpmath.workdps(_STORE):
        scales = _scales(at, without=variable)
        if mpmath.isinf(target.v):
            size = max(scales)
            sign = 1 if target.v > 0 else -1
            return _sequence(function, [sign * size * mpmath.mpf(2) ** b for b in _BITS])
        size = min(scales)
        if target.v != 0:
            size = min(size, abs(target.v))
        sides = {"+": [1], "-": [-1], "": [1, -1]}[direction]
        points = {side: [target.v + side * size * mpmath.mpf(2) ** -b for b in _BITS] for side in sides}
    found = {}
    for side in sides:
        try:
            found[side] = _sequence(function, points[side])
        except Undefined as error:
            found[side] = error
    values = list(found.values())
    if all(isinstance(v, Undefined) for v in values):
        raise values[0]
    if any(isinstance(v, Undefined) for v in values):
        raise Undefined("defined on one side only")
    if len(values) == 2:
        verdict = compare(values[0], "==", values[1])
        if verdict == FALSE:
            raise Undefined("the one-sided limits differ")
        if verdict == UNKNOWN:
            # Not told apart: the limit, if it exists, lies within both; it is their hull.
            with mpmath.workdps(_work()):
                gap = abs(values[0].v - values[1].v)
            return Val(values[0].v, max(values[0].e, values[1].e) + gap)
        return Val(values[0].v, max(values[0].e, values[1].e))
    return values[0]


# --- the claim language -----------------------------------------------------------------------


@functools.cache
def parse(text: str) -> ast.AST:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        raise Unsupported(f"cannot parse {text!r}") from error


def names(text: str) -> set[str]:
    """Every name a claim or condition uses (the limit variables too)."""
    return {node.id for node in ast.walk(parse(text)) if isinstance(node, ast.Name)}


def pattern_of(layer: str, texts: Sequence[str]) -> int | None:
    """The input pattern a claim is taken at (by the suffix of the pattern quantities it names),
    or None for a claim about a general input x."""
    used = set().union(*(names(text) for text in texts)) if texts else set()
    patterns = LAYERS[layer].patterns
    found = set()
    for name in used:
        for index, pattern in enumerate(patterns):
            if any(name == stem + pattern.suffix for stem in PATTERN_QUANTITIES):
                found.add(index)
    if len(found) > 1:
        raise Unsupported("quantities of two patterns")
    if found:
        return found.pop()
    general = GENERAL_NAMES | {str(s.symbol) for s in LAYERS[layer].statistics} | {"gamma_max"}
    general |= {name for name in used if name.startswith("eigen_")}
    if used & general:
        return None
    return 0  # scalars only (t, epsilon, alpha, gamma, beta): at the first pattern


def sides(text: str, layer: str, at: Point) -> tuple[str, list[tuple[Val, Val]]]:
    """The relation of ``text`` and its pairs of sides at the point (one pair for scalars, one per
    entry for vectors and matrices), at the working precision.  Raises Undefined where a side is
    undefined (whatever the other), Unknown where a side cannot be told, Unsupported."""
    node = parse(text)
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        raise Unsupported(f"{text!r} is not one relation")
    op = _RELATIONS.get(type(node.ops[0]))
    if op is None:
        raise Unsupported(f"relation in {text!r}")
    walker = _Walker(layer, text)
    values = []
    unknown: Unknown | None = None
    for side in (node.left, node.comparators[0]):
        try:
            values.append(walker.value(side, at))
        except Unknown as error:
            unknown = error
    if unknown is not None:
        raise unknown
    left, right = values
    if isinstance(left, Val) and isinstance(right, Val):
        return op, [(left, right)]
    if op not in ("==", "!="):
        raise Unsupported("vectors and matrices compare with == only")
    a, b = _entries(left, right), _entries(right, left)
    if len(a) != len(b):
        raise Unsupported("sides of different shapes")
    return op, list(zip(a, b, strict=True))


def _combined(op: str, results: list[str]) -> str:
    """One result from each pair's: for == every pair equal, for != some pair unequal."""
    if len(results) == 1:
        return results[0]
    equal = FALSE if FALSE in results else (UNKNOWN if UNKNOWN in results else TRUE)
    if op == "!=" and equal != UNKNOWN:
        return TRUE if equal == FALSE else FALSE
    return equal


def evaluate(text: str, layer: str, at: Point) -> str:
    """The claim or condition ``text`` about ``layer`` at the point, at the working precision:
    TRUE, FALSE, UNDEFINED or UNKNOWN."""
    try:
        op, pairs = sides(text, layer, at)
    except Undefined:
        return UNDEFINED
    except Unknown:
        return UNKNOWN
    relation = op if len(pairs) == 1 else "=="
    return _combined(op, [compare(a, relation, b) for a, b in pairs])


def decide(text: str, layer: str, at: Point, digits: int = DIGITS) -> str:
    """`evaluate` at ``digits`` working digits."""
    with precision(digits):
        return evaluate(text, layer, at)


def _at(text: str, layer: str, at: Point, digits: int) -> Any:
    with precision(digits):
        try:
            return sides(text, layer, at)
        except (Undefined, Unknown) as error:
            return error


def confirmed(text: str, layer: str, at: Point) -> str:
    """The claim or condition at the point, settled at two precisions (`DIGITS`, `SECOND`).

    TRUE from the first where it decides so.  FALSE only where both decide so; UNDEFINED only
    where a side is undefined at both.  A pair of sides that neither tells apart is a tie (equal)
    where their gap is zero at both, or within the errors at both while the errors shrink with
    the precision by 15 digits and more (a gap that is rounding noise); one the second precision
    alone decides is taken where the gap is the same at both.  Anything else is UNKNOWN.  A
    condition may join relations with ``and`` and ``or`` (a verdict's exclusion may).
    """
    node = parse(text)
    if isinstance(node, ast.BoolOp):
        parts = [confirmed(ast.get_source_segment(text.strip(), value) or "", layer, at) for value in node.values]
        return _joined(isinstance(node.op, ast.And), parts)
    low = _at(text, layer, at, DIGITS)
    if not isinstance(low, Exception):
        op, pairs = low
        relation = op if len(pairs) == 1 else "=="
        with precision(DIGITS):
            first = _combined(op, [compare(a, relation, b) for a, b in pairs])
        if first == TRUE:
            return TRUE
    high = _at(text, layer, at, SECOND)
    if isinstance(low, Undefined) or isinstance(high, Undefined):
        return UNDEFINED if isinstance(low, Undefined) and isinstance(high, Undefined) else UNKNOWN
    if isinstance(low, Exception) or isinstance(high, Exception):
        return UNKNOWN
    op, pairs_low = low
    _, pairs_high = high
    relation = op if len(pairs_low) == 1 else "=="
    results = [_settle(relation, a, b) for a, b in zip(pairs_low, pairs_high, strict=True)]
    return _combined(op, results)


OUTSIDE = "outside"


def claim_at(text: str, layer: str, assumptions: Sequence[str], at: Point) -> str:
    """The claim at the point, `confirmed`, where every assumption holds there (TRUE); OUTSIDE
    where one does not, UNKNOWN where one cannot be told."""
    for condition in assumptions:
        found = confirmed(condition, layer, at)
        if found != TRUE:
            return UNKNOWN if found == UNKNOWN else OUTSIDE
    return confirmed(text, layer, at)


def _joined(conjunction: bool, parts: list[str]) -> str:
    """``and`` (``conjunction``) or ``or`` of the parts' results."""
    decisive, other = (FALSE, TRUE) if conjunction else (TRUE, FALSE)
    if decisive in parts:
        return decisive
    if all(part == other for part in parts):
        return other
    return UNDEFINED if UNDEFINED in parts else UNKNOWN


def _settle(op: str, low: tuple[Val, Val], high: tuple[Val, Val]) -> str:
    with precision(DIGITS):
        first = compare(low[0], op, low[1])
    with precision(SECOND):
        second = compare(high[0], op, high[1])
    if first == second and first != UNKNOWN:
        return first
    values = [*low, *high]
    if any(mpmath.isinf(value.v) for value in values):
        return UNKNOWN
    with mpmath.workdps(SECOND + 10):
        gap_low, gap_high = low[0].v - low[1].v, high[0].v - high[1].v
        error_low, error_high = low[0].e + low[1].e, high[0].e + high[1].e
        tie = Val(mpmath.mpf(0), mpmath.mpf(0))
        if gap_low == 0 and gap_high == 0:
            return compare(tie, op, tie)
        if first == UNKNOWN and second == UNKNOWN:
            # Errors that shrink with the precision are rounding (and step) errors, not a limit's
            # last step; a gap within them at both precisions is noise around 0.
            shrinks = error_high <= mpmath.mpf(10) ** -15 * error_low
            if shrinks and abs(gap_low) <= 4 * error_low and abs(gap_high) <= 4 * error_high:
                return compare(tie, op, tie)
            return UNKNOWN
        if UNKNOWN not in (first, second):
            return UNKNOWN
        if gap_low * gap_high > 0 and abs(gap_low - gap_high) <= abs(gap_high) * mpmath.mpf(10) ** -3:
            return first if first != UNKNOWN else second
    return UNKNOWN


def _entries(value: Any, other: Any) -> list[Val]:
    if isinstance(value, Val):
        if isinstance(other, Val):
            return [value]
        if not (value.v == 0 and value.exact):
            raise Unsupported("a vector or matrix compared with a nonzero scalar")
        return [ZERO] * len(_entries(other, None))
    if isinstance(value, Vec):
        return list(value.items)
    return [e for row in value.rows for e in row]


_RELATIONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


class _Walker:
    """Evaluates a syntax tree of the claim language at a point."""

    def __init__(self, layer: str, text: str) -> None:
        self.layer = layer
        self.text = text
        self.definition = LAYERS[layer]

    # --- names ---

    def name(self, identifier: str, at: Point) -> Any:
        definition = self.definition
        if identifier == "oo":
            return INF
        if identifier in ("t", "epsilon", "alpha"):
            if identifier == "epsilon" and not definition.has_epsilon:
                raise Unsupported(f"{self.layer} has no epsilon")
            value = getattr(at, identifier)
            if value is None:
                raise Unsupported(f"the point has no {identifier}")
            return Val(value, mpmath.mpf(0))
        if identifier in ("n", "d"):
            return exact(at.n)
        if identifier in ("gamma", "beta"):
            entries = at.gain if identifier == "gamma" else at.bias
            coordinate = definition.patterns[0].coordinate
            if not entries or coordinate >= len(entries):
                raise Unsupported(f"{identifier} at this point")
            return Val(entries[coordinate], mpmath.mpf(0))
        if identifier == "gamma_max":
            if not at.gain:
                raise Unsupported("no gain at this point")
            return Val(max(_abs(e) for e in at.gain), mpmath.mpf(0))
        stats = statistics(at) if identifier in self._statistic_names() else None
        if stats is not None:
            value = stats[identifier]
            if isinstance(value, Exception):
                raise value
            return value
        if identifier == "x":
            return Vec(tuple(Val(e, mpmath.mpf(0)) for e in at.inputs()))
        if identifier == "ones":
            return Vec((ONE,) * at.n)
        if identifier in ("g", "v"):
            entries = getattr(at, identifier)
            if len(entries) != at.n:
                raise Unsupported(f"no {identifier} at this point")
            return Vec(tuple(Val(e, mpmath.mpf(0)) for e in entries))
        if identifier == "c":
            if not any(s.mean and str(s.summand) == "x[j]" for s in definition.statistics):
                raise Unsupported(f"{self.layer} does not center its input")
            xs = [Val(e, mpmath.mpf(0)) for e in at.inputs()]
            total = ZERO
            for e in xs:
                total = add(total, e)
            mean = div(total, exact(at.n))
            return Vec(tuple(sub(e, mean) for e in xs))
        if identifier == "y":
            return Vec(outputs(at))
        if identifier == "J":
            return jacobian(at)
        return self.quantity(identifier, at)

    def _statistic_names(self) -> set[str]:
        names = {str(s.symbol) for s in self.definition.statistics}
        if _s_function(self.layer) is not None:
            names.add("s")
        return names

    def quantity(self, identifier: str, at: Point) -> Val:
        for index, pattern in enumerate(self.definition.patterns):
            for stem in PATTERN_QUANTITIES:
                if identifier == stem + pattern.suffix:
                    return self.on_pattern(stem, index, at)
        if identifier == "second_moment":
            total = ZERO
            for e in outputs(at):
                total = add(total, mul(e, e))
            return div(total, exact(at.n))
        if identifier == "spectral_norm":
            return spectral(jacobian(at))
        if identifier.startswith("eigen_"):
            return eigenvalue(at, identifier.removeprefix("eigen_"))
        if identifier == "constant_response":
            if self.definition.parameters:
                raise Unsupported("constant_response of a layer with a gain is one value per entry")
            if at.t is None:
                raise Unsupported("no t at this point")
            constant = Point(at.layer, None, at.t, (at.t,) * at.n, at.epsilon, at.alpha, at.gain, at.bias)
            return outputs(constant)[0]
        raise Unsupported(f"unknown name {identifier!r}")

    def on_pattern(self, stem: str, index: int, at: Point) -> Val:
        if at.t is None:
            raise Unsupported("no t at this point")
        if stem == "response":
            return response(at, index)
        if stem == "slope":
            return slope(at, index)
        if stem == "slope_at_zero":
            return slope(replace(at, t=mpmath.mpf(0)), index)
        return limit(lambda u: response(replace(at, t=u), index), at, "t", INF, "+")

    # --- the tree ---

    def value(self, node: ast.AST, at: Point) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise Unsupported(f"literal {node.value!r}")
            if isinstance(node.value, int):
                return exact(node.value)
            source = ast.get_source_segment(self.text.strip(), node) or repr(node.value)
            return Val(_mpf(Fraction(source.replace("_", ""))), mpmath.mpf(0))
        if isinstance(node, ast.Name):
            return self.name(node.id, at)
        if isinstance(node, ast.Attribute):
            if node.attr != "T":
                raise Unsupported(f"attribute .{node.attr}")
            value = self.value(node.value, at)
            if isinstance(value, Vec):
                return Vec(value.items, not value.row)
            if isinstance(value, Mat):
                return Mat(tuple(zip(*value.rows, strict=True)))
            raise Unsupported(".T of a scalar")
        if isinstance(node, ast.Subscript):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("gamma", "beta")):
                raise Unsupported("a subscript")
            index = node.slice
            if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
                raise Unsupported("a subscript")
            entries = at.gain if node.value.id == "gamma" else at.bias
            if index.value >= len(entries):
                raise Unsupported("a subscript beyond the entries")
            return Val(entries[index.value], mpmath.mpf(0))
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand, at)
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.USub):
                return _scale(operand, exact(-1))
            raise Unsupported("a unary operator")
        if isinstance(node, ast.BinOp):
            return self.binary(node, at)
        if isinstance(node, ast.Call):
            return self.call(node, at)
        raise Unsupported(f"{type(node).__name__}")

    def binary(self, node: ast.BinOp, at: Point) -> Any:
        left, right = self.value(node.left, at), self.value(node.right, at)
        op = node.op
        if isinstance(op, ast.MatMult) or (
            isinstance(op, ast.Mult)
            and (isinstance(left, Mat) or (isinstance(left, Vec) and left.row))
            and not isinstance(right, Val)
        ):
            return _matmul(left, right)
        if isinstance(op, (ast.Add, ast.Sub)):
            sign = 1 if isinstance(op, ast.Add) else -1
            return _combine(left, right, sign)
        if isinstance(op, ast.Mult):
            if isinstance(left, Val) and isinstance(right, Val):
                return mul(left, right)
            if isinstance(left, Val):
                return _scale(right, left)
            if isinstance(right, Val):
                return _scale(left, right)
            raise Unsupported("* of two vectors")
        if isinstance(op, ast.Div):
            if not isinstance(right, Val):
                raise Unsupported("division by a vector")
            if isinstance(left, Val):
                return div(left, right)
            return _map(left, lambda e: div(e, right))
        if isinstance(op, ast.Pow):
            if not (isinstance(left, Val) and isinstance(right, Val)):
                raise Unsupported("** of a vector")
            return power(left, right)
        raise Unsupported(f"operator {type(op).__name__}")

    def call(self, node: ast.Call, at: Point) -> Any:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            raise Unsupported("a call")
        name = node.func.id
        if name == "limit":
            return self.limit(node, at)
        if name == "Piecewise":
            return self.piecewise(node, at)
        args = [self.value(a, at) for a in node.args]
        if name in ("sqrt", "abs", "Abs", "exp", "tanh", "sech", "sign"):
            if len(args) != 1 or not isinstance(args[0], Val):
                raise Unsupported(f"{name} of a vector")
            if name in ("tanh", "sech", "sign"):
                return _elementary(name, args[0])
            return {"sqrt": sqrt, "abs": absolute, "Abs": absolute, "exp": exponential}[name](args[0])
        if name in ("max", "min", "Max", "Min"):
            if len(args) < 2 or not all(isinstance(a, Val) for a in args):
                raise Unsupported(f"{name} of vectors")
            return largest(args, 1 if name in ("max", "Max") else -1)
        if name in ("sum", "mean"):
            (vector,) = args
            if not isinstance(vector, Vec):
                raise Unsupported(f"{name} of a non-vector")
            total = ZERO
            for e in vector.items:
                total = add(total, e)
            return total if name == "sum" else div(total, exact(len(vector.items)))
        if name == "dot":
            a, b = args
            if not (isinstance(a, Vec) and isinstance(b, Vec)):
                raise Unsupported("dot of non-vectors")
            return _dot(a.items, b.items)
        # norm
        if isinstance(args[0], Vec) and (len(args) == 1 or (len(args) == 2 and _is_number(args[1], 2))):
            return sqrt(_dot(args[0].items, args[0].items))
        if isinstance(args[0], Mat) and len(args) == 2:
            if _is_number(args[1], 2):
                return spectral(args[0])
            if isinstance(args[1], Val) and mpmath.isinf(args[1].v) and args[1].v > 0:
                return row_sum_norm(args[0])
        raise Unsupported("norm(...) of this kind")

    def piecewise(self, node: ast.Call, at: Point) -> Any:
        """Piecewise((value, condition), ...): the value of the first condition that holds."""
        for branch in node.args:
            if not (isinstance(branch, ast.Tuple) and len(branch.elts) == 2):
                raise Unsupported("Piecewise((value, condition), ...)")
            value, condition = branch.elts
            if isinstance(condition, ast.Constant) and condition.value is True:
                return self.value(value, at)
            if not (isinstance(condition, ast.Compare) and len(condition.ops) == 1):
                raise Unsupported("a Piecewise condition that is not one relation")
            op = _RELATIONS.get(type(condition.ops[0]))
            left, right = self.value(condition.left, at), self.value(condition.comparators[0], at)
            if op is None or not (isinstance(left, Val) and isinstance(right, Val)):
                raise Unsupported("a Piecewise condition")
            holds = compare(left, op, right)
            if holds == UNKNOWN:
                raise Unknown("a Piecewise condition that cannot be told")
            if holds == TRUE:
                return self.value(value, at)
        raise Undefined("no Piecewise condition holds")

    def limit(self, node: ast.Call, at: Point) -> Val:
        if len(node.args) not in (3, 4) or not isinstance(node.args[1], ast.Name):
            raise Unsupported("limit(e, variable, point[, side])")
        variable = node.args[1].id
        if variable not in ("t", "epsilon"):
            raise Unsupported(f"a limit in {variable}")
        target = self.value(node.args[2], at)
        if not isinstance(target, Val):
            raise Unsupported("a limit point that is not a number")
        direction = ""
        if len(node.args) == 4:
            side = node.args[3]
            if not (isinstance(side, ast.Constant) and side.value in ("+", "-")):
                raise Unsupported("a limit's side is '+' or '-'")
            direction = side.value
        if variable == "epsilon":
            if not (target.v == 0 and target.exact) or direction == "-":
                raise Unsupported("epsilon tends to 0 from above only")
            if at.epsilon is None:
                raise Unsupported(f"{self.layer} has no epsilon")
            direction = "+"
        body = node.args[0]

        def function(u: Any) -> Val:
            value = self.value(body, replace(at, **{variable: u}))
            if not isinstance(value, Val):
                raise Unsupported("a limit of a vector")
            return value

        return limit(function, at, variable, target, direction)


def _elementary(name: str, a: Val) -> Val:
    """tanh, sech (each changes by at most its argument's error) and sign (unknown near 0)."""
    with mpmath.workdps(_work()):
        if name == "sign":
            if a.v == 0 and a.exact:
                return ZERO
            if a.zeroish():
                raise Unknown("the sign of a value that may be zero")
            return exact(int(mpmath.sign(a.v)))
        value = mpmath.tanh(a.v) if name == "tanh" else mpmath.sech(a.v)
        return Val(value, a.e + _round(value))


def _is_number(value: Any, number: int) -> bool:
    return isinstance(value, Val) and value.exact and value.v == number


def _map(value: Any, function: Callable[[Val], Val]) -> Any:
    if isinstance(value, Val):
        return function(value)
    if isinstance(value, Vec):
        return Vec(tuple(function(e) for e in value.items), value.row)
    return Mat(tuple(tuple(function(e) for e in row) for row in value.rows))


def _scale(value: Any, factor: Val) -> Any:
    return _map(value, lambda e: mul(e, factor))


def _combine(left: Any, right: Any, sign: int) -> Any:
    if isinstance(left, Val) and isinstance(right, Val):
        return add(left, right) if sign > 0 else sub(left, right)
    if isinstance(left, Vec) and isinstance(right, Vec) and len(left.items) == len(right.items):
        items = (add(a, b) if sign > 0 else sub(a, b) for a, b in zip(left.items, right.items, strict=True))
        return Vec(tuple(items), left.row)
    if isinstance(left, Mat) and isinstance(right, Mat):
        rows = (
            tuple(add(a, b) if sign > 0 else sub(a, b) for a, b in zip(ra, rb, strict=True))
            for ra, rb in zip(left.rows, right.rows, strict=True)
        )
        return Mat(tuple(rows))
    raise Unsupported("+ or - of a scalar and a vector")


def _matmul(left: Any, right: Any) -> Any:
    if isinstance(left, Mat) and isinstance(right, Vec):
        return Vec(tuple(_dot(row, right.items) for row in left.rows))
    if isinstance(left, Mat) and isinstance(right, Mat):
        columns = list(zip(*right.rows, strict=True))
        return Mat(tuple(tuple(_dot(row, column) for column in columns) for row in left.rows))
    if isinstance(left, Vec) and isinstance(right, Vec):
        return _dot(left.items, right.items)
    if isinstance(left, Vec) and isinstance(right, Mat):
        columns = list(zip(*right.rows, strict=True))
        return Vec(tuple(_dot(left.items, column) for column in columns), left.row)
    raise Unsupported("@ of these kinds")


def clear_caches() -> None:
    """Forget every value computed at a point (the compiled definitions stay)."""
    for cache in _CACHED:
        cache.cache_clear()
