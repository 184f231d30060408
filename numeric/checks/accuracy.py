"""Accuracy against mpmath at 50 digits, across the floating-point range.

The reference evaluates the canonical derived expressions (lambdified for
mpmath, not the rescaled forms the numeric functions use) at the exact
binary value of each input.  Errors are in units of the format's machine
epsilon: relative for the scalar functions, normwise
(max |computed - true| / max |true|) for the vector ones.

Centering an input whose entries nearly cancel is ill-conditioned in any
floating-point code, so the vector grid uses x = 10**k z with z a seeded
standard-normal vector, not inputs built to cancel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import mpmath
import numpy as np
import sympy as sp
from numpy.typing import DTypeLike

from derivations import LAYERS, quantities, symmetric
from derivations.derive import eigen, jacobian, scaling
from derivations.derive.elementwise import Largest
from derivations.derive.sums import Mean, p
from derivations.symbols import g, i, j, k, n, t, v, x
from numeric._layer import facade
from numeric.kernels import rescale as _rescale

DIGITS = 50
# Two precisions agree when they differ by at most this, relatively (made once, not per comparison).
_AGREE = mpmath.mpf(10) ** -30
# ulp: a function of t, and a derivative in t (one more rounding through the chain rule)
SCALAR_BOUND, DERIVATIVE_BOUND = 4, 8
VECTOR_BOUND_PER_FEATURE = 8  # ulp times n
SIZES = (2, 3, 16)


def layer_keys() -> tuple[str, ...]:
    """The layers measured: those with a symmetric Jacobian, whose every function is derived,
    and those whose partial means run over a subset (at its default), of x and epsilon alone
    (no scalar such as ScaleNorm's gain), or, for a layer without epsilon (Dynamic Tanh), of x and
    the scalar parameter that takes its place."""
    chosen = set(symmetric()) | {key for key, layer in LAYERS.items() if layer.subsets}
    return tuple(key for key in LAYERS if key in chosen and (not LAYERS[key].scalars or not LAYERS[key].has_epsilon))


def parameter(key: str) -> sp.Symbol:
    """The second argument of the layer's functions: epsilon, or the scalar in its place (alpha)."""
    return scaling.scale_parameter(LAYERS[key])


def parameter_values(key: str, epsilons: np.ndarray) -> np.ndarray:
    """The grid of the second argument: epsilon's, or for a real parameter in its place
    (alpha, of either sign) the same magnitudes with both signs."""
    values = np.asarray(epsilons)
    return values if LAYERS[key].has_epsilon else np.concatenate([values, -values])


def _defaults(key: str, expr: sp.Expr) -> sp.Expr:
    """``expr`` at the parameters a function uses when none are given: a layer without
    epsilon takes gain 1 and bias 0 (a layer with epsilon and parameters is measured through
    its backward products alone, which are given them)."""
    if LAYERS[key].has_epsilon:
        return expr
    ones = {base: sp.Integer(1) if name == "gain" else sp.Integer(0) for name, base in LAYERS[key].parameters}
    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base in ones, lambda e: ones[e.base])


def scalar_functions(key: str) -> dict[str, int]:
    """Each function of (t, epsilon) of the layer, with its ulp bound."""
    out = {}
    for quantity, item in quantities.rows(LAYERS[key]):
        name = quantity.numeric_name(item)
        if quantity.evaluate == "of_t" and name is not None and facade(key).function(name) is not None:
            out[name] = DERIVATIVE_BOUND if quantity.derivative_of else SCALAR_BOUND
    return out


def vector_functions(key: str) -> tuple[str, ...]:
    """The functions of x measured normwise: forward, the Jacobian, the eigenvalues, and each
    function of the statistics (eigenvalues by direction, the spectral norm, the second moment)."""
    # An identically zero quantity (J 1 = 0) has no relative error to measure.
    statistics = [name for name in _by_strategy(key, "of_statistics") if _derived(key, name) != 0]
    spectrum = ("eigenvalues",) if key in symmetric() else ()  # assembled from the eigenpairs of a symmetric J
    return (*_by_strategy(key, "applied", "entrywise"), *spectrum, *statistics)


def backward_functions(key: str) -> tuple[str, ...]:
    """The backward products of the layer measured normwise: vjp, jvp and hvp (a parameter's
    gradient, returned by vjp, is g times the output or g itself).  A layer with a scalar input
    (ScaleNorm's gain) has none here: its products are its base's, measured, times c(gain)."""
    if LAYERS[key].scalars and LAYERS[key].has_epsilon:
        return ()
    if LAYERS[key].derived_as is not LAYERS[key] and LAYERS[key].parameters:
        return ()  # a reparametrized layer's products are its base's at other parameters, measured there
    rows = quantities.rows(LAYERS[key])
    return tuple(
        name
        for quantity, item in rows
        if quantity.evaluate == "backward" and quantity.returned_by is None and (name := quantity.numeric_name(item))
    )


def _by_strategy(key: str, *strategies: str) -> list[str]:
    """The numeric names of the layer's quantities evaluated by one of ``strategies``, in that order."""
    rows = list(quantities.rows(LAYERS[key]))
    return [
        name
        for strategy in strategies
        for quantity, item in rows
        if quantity.evaluate == strategy and (name := quantity.numeric_name(item)) is not None
    ]


def exponents(dtype: DTypeLike, step: int) -> np.ndarray:
    """Powers of ten k with 10**k normal in ``dtype``, from the smallest up in ``step``."""
    info = np.finfo(dtype)
    low, high = int(np.ceil(np.log10(info.tiny))), int(np.floor(np.log10(info.max)))
    low = -((-low) // step) * step
    return np.arange(low, high + 1, step)


def scalar_grid(dtype: DTypeLike, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """t: 0, +-10**k (step 10) and seeded random magnitudes; epsilon: 10**k (step 20, 10 in float32)."""
    rng = np.random.default_rng(seed)
    powers = exponents(dtype, 10)
    spread = 10.0 ** rng.uniform(powers[0], powers[-1], 200) * rng.choice([-1, 1], 200)
    ts = np.concatenate([[0.0], 10.0**powers, -(10.0**powers), spread]).astype(dtype)
    return ts, (10.0 ** exponents(dtype, 10 if np.dtype(dtype) == np.float32 else 20)).astype(dtype)


@dataclass
class Result:
    """The worst error of one function over a grid."""

    function: str
    dtype: str
    worst: float  # in ulp
    where: str
    bound: float
    points: int
    silent: int  # inf, NaN or 0 where the true value is finite, normal and non-zero

    @property
    def ok(self) -> bool:
        return self.worst <= self.bound and self.silent == 0


def _derived(key: str, numeric: str) -> sp.Expr:
    """The derived expression of the registry row whose numeric function is ``numeric``."""
    layer = LAYERS[key]
    found = quantities.by_numeric(layer, numeric)
    assert found is not None, f"{key} has no function {numeric}"
    _, quantity, item = found
    return quantity.derive(layer, item)


@cache
def _reference(key: str, name: str) -> Any:
    return sp.lambdify((t, parameter(key)), _defaults(key, _derived(key, name)), modules="mpmath")


def scalar(key: str, name: str, dtype: DTypeLike, ts: np.ndarray, epsilons: np.ndarray) -> Result:
    """Relative error of ``response`` or ``slope`` against mpmath, over every (t, epsilon) pair."""
    info = np.finfo(dtype)
    function = getattr(facade(key), name)
    tt, ee = np.meshgrid(ts, parameter_values(key, epsilons))
    computed = np.asarray(function(tt, ee), dtype=np.float64)
    reference = _reference(key, name)
    worst, where, silent, points = 0.0, "", 0, 0
    with mpmath.workdps(DIGITS):
        for index in np.ndindex(tt.shape):
            true = reference(mpmath.mpf(float(tt[index])), mpmath.mpf(float(ee[index])))
            if true == 0 or not info.tiny <= abs(true) <= info.max:
                continue  # the true value is not a normal number of this format
            points += 1
            value = computed[index]
            if not np.isfinite(value) or value == 0:
                silent += 1
                error = float("inf")
            else:
                error = float(abs((mpmath.mpf(float(value)) - true) / true)) / float(info.eps)
            if error > worst:
                worst, where = error, f"t = {tt[index]:.3g}, {parameter(key)} = {ee[index]:.3g}"
    return Result(f"{key}.{name}", str(np.dtype(dtype)), worst, where, scalar_functions(key)[name], points, silent)


_xi, _xj, _xk = sp.symbols("x_i x_j x_k", real=True)


def _indicators(key: str, index: sp.Symbol) -> dict[sp.Expr, sp.Symbol]:
    """Each subset's indicator entry at ``index``, as the symbol it is lambdified as."""
    return {
        subset.indicator[index]: sp.Symbol(f"{subset.indicator.label}_{index}", real=True)
        for subset in LAYERS[key].subsets
    }


def _indicator_values(key: str, size: int) -> list[list[Any]]:
    """Each subset's indicator entries at ``size`` entries, at its default: one list per entry."""
    columns = [subset.entries(size, subset.default) for subset in LAYERS[key].subsets]
    return [[mpmath.mpf(column[m]) for column in columns] for m in range(size)]


@cache
def _vector_reference(key: str) -> dict[str, Any]:
    """mpmath functions for the statistics and the derived entry-wise forms of one layer."""
    layer = LAYERS[key]
    stats = [stat.symbol for stat in layer.statistics]
    at_i, at_k = _indicators(key, i), _indicators(key, k)
    entries = {x[i]: _xi, x[j]: _xj, x[k]: _xk, **at_i, **at_k}
    e = parameter(key)

    def compile(expr: sp.Expr, *args: sp.Basic) -> Any:
        return sp.lambdify(args, _defaults(key, expr).xreplace(entries), modules="mpmath")

    def of_statistics(expr: sp.Expr) -> Any:
        # A value at entry k (an elementwise layer's eigenvalue J_kk) is taken at every entry,
        # and a largest value over the entries (its norm) is that maximum: a list either way.
        if not expr.has(x[k]):
            single = compile(expr, *stats, e, n)
            return lambda xs, *rest: [single(*rest)]
        (largest,) = expr.atoms(Largest) or {None}
        inner = compile(largest.args[0] if largest else expr, _xk, *stats, e, n)
        outside = compile(expr.xreplace({largest: 1}), *stats, e, n) if largest else None
        if outside is None:
            return lambda xs, *rest: [inner(value, *rest) for value in xs]
        return lambda xs, *rest: [outside(*rest) * max(inner(value, *rest) for value in xs)]

    delta = sp.Symbol("delta")
    return {
        "applied": compile(layer.output, _xi, *at_i.values(), *stats, e),
        "entrywise": compile(
            jacobian.entry(layer).subs(sp.KroneckerDelta(i, k), delta),
            _xi,
            _xk,
            *at_i.values(),
            *at_k.values(),
            delta,
            *stats,
            e,
            n,
        ),
        "degenerate": compile(jacobian.at_degenerate(layer).subs(sp.KroneckerDelta(i, k), delta), delta, *stats, e, n)
        if layer.approach
        else None,
        "spread": stats.index(layer.spread) if layer.spread in stats else None,
        "eigenpairs": [(of_statistics(p.value), p.multiplicity) for p in eigen.eigenpairs(layer)],
        "of_statistics": {name: of_statistics(_derived(key, name)) for name in _by_strategy(key, "of_statistics")},
    }


@cache
def _summands(key: str) -> list[Any]:
    layer = LAYERS[key]
    stats = [stat.symbol for stat in layer.statistics]
    at_j = _indicators(key, j)
    return [
        sp.lambdify((_xj, *at_j.values(), *stats[:m], n), s.summand.xreplace({x[j]: _xj, **at_j}), modules="mpmath")
        for m, s in enumerate(layer.statistics)
    ]


def _statistics(key: str, xs: list[Any]) -> list[Any]:
    """The layer's statistics of the mpmath entries ``xs``, each mean by an exact-rounding sum."""
    stats: list[Any] = []
    size = len(xs)
    marks = _indicator_values(key, size)
    for stat, summand in zip(LAYERS[key].statistics, _summands(key), strict=True):
        value = (
            summand(xs[0], *marks[0], *stats, size)
            if not stat.mean
            else mpmath.fsum(summand(v, *mark, *stats, size) for v, mark in zip(xs, marks, strict=True)) / size
        )
        stats.append(value)
    return stats


@cache
def _product_reference(key: str, name: str) -> tuple[Any, Any]:
    """The derived product ``name`` for mpmath, and its derived limit at the degenerate input."""
    layer = LAYERS[key]
    quantity, item = quantities.names(layer)[name]
    bases = (x, g, v, *(base for _, base in layer.parameters), *(subset.indicator for subset in layer.subsets))
    symbols = [sp.Symbol(f"{base.label}_k", real=True) for base in bases]
    stats = [stat.symbol for stat in layer.statistics]

    def one(expr: sp.Expr) -> tuple[Any, list[Any]]:
        means = sorted(expr.atoms(Mean), key=sp.default_sort_key)
        names = [sp.Symbol(f"mean{m}", real=True) for m in range(len(means))]
        here = {base[k]: s for base, s in zip(bases, symbols, strict=True)}
        there = {base[p]: s for base, s in zip(bases, symbols, strict=True)}
        entry = sp.lambdify(
            [*symbols, *stats, parameter(key), n, *names],
            expr.xreplace(dict(zip(means, names, strict=True))).xreplace(here),
            modules="mpmath",
        )
        return entry, [sp.lambdify(symbols, m.args[0].xreplace(there), modules="mpmath") for m in means]

    limit = quantity.limit(layer) if quantity.limit is not None and layer.approach else None
    return one(quantity.derive(layer, item)), (one(limit) if limit is not None else None)


def _product_at(key: str, name: str, xs: list[Any], e: Any, extra: list[np.ndarray]) -> list[Any]:
    """The derived product at the exact binary x, epsilon, dy, v and parameters, at the working precision."""
    layer = LAYERS[key]
    size = len(xs)
    if scaling.translation_invariant(layer):
        # The product of a translation-invariant layer (derived) is taken at the centered
        # input, whose mean is 0: its terms in the mean cancel exactly (a constant input).
        center = mpmath.fsum(xs) / size
        xs = [value - center for value in xs]
    stats = _statistics(key, xs)
    at = list(zip(xs, *([mpmath.mpf(float(value)) for value in vector] for vector in extra), strict=True))
    at = [(*point, *mark) for point, mark in zip(at, _indicator_values(key, size), strict=True)]
    (entry, monomials), limit = _product_reference(key, name)
    if limit is not None and stats[layer.statistics.index(_spread(layer))] == 0:
        entry, monomials = limit
    means = [mpmath.fsum(monomial(*point) for point in at) / size for monomial in monomials]
    return [entry(*point, *stats, e, size, *means) for point in at]


def _spread(layer: Any) -> Any:
    (stat,) = [stat for stat in layer.statistics if stat.symbol == layer.spread]
    return stat


def _strategy(key: str, numeric: str) -> str | None:
    """How the registry evaluates the numeric function ``numeric`` (None: a composite, the eigenvalues)."""
    layer = LAYERS[key]
    found = quantities.by_numeric(layer, numeric)
    return None if found is None else found[1].evaluate


def _true(key: str, name: str, inputs: np.ndarray, eps: float, extra: list[np.ndarray] | None = None) -> list[Any]:
    """``name`` at the exact binary inputs, at 50 digits or more.

    The canonical entry formulas cancel terms of size 1/s to leave eps/s**3,
    which across the range can take hundreds of digits; the working precision
    doubles until two evaluations agree to 30 digits.  A value that is exactly
    0 at two precisions may still be a cancellation that more digits resolve,
    so zeros are trusted only at the highest precision.
    """
    previous: list[Any] | None = None
    agree = False
    exact = _structural_zeros(key, name, len(inputs))
    for digits in (DIGITS * 2**power for power in range(8)):
        with mpmath.workdps(digits):
            values = _true_at(key, name, inputs, eps, extra or [])
        agree = previous is not None and all(
            abs(a - b) <= _AGREE * max(abs(a), abs(b)) for a, b in zip(values, previous, strict=True)
        )
        if agree and all(v != 0 for m, v in enumerate(values) if m not in exact):
            return values
        previous = values
    if agree and previous is not None:
        return previous
    raise ArithmeticError(f"no stable reference for {key}.{name} at {inputs}, {eps}")


@cache
def _structural_zeros(key: str, name: str, size: int) -> frozenset[int]:
    """Positions of the flattened result that are zero by the derivation, not by cancellation:
    the entries of a Jacobian whose derived form vanishes identically there, for every x and
    every value of the statistics (off the diagonal of an elementwise layer; the columns a
    partial statistic leaves out, at the subset's default)."""
    if _strategy(key, name) != "entrywise":
        return frozenset()
    entry = jacobian.entry(LAYERS[key])
    marks = [{**_marks(key, i, r, size), **_marks(key, k, c, size)} for r in range(size) for c in range(size)]
    return frozenset(
        r * size + c
        for r in range(size)
        for c in range(size)
        if entry.xreplace({sp.KroneckerDelta(i, k): int(r == c), **marks[r * size + c]}) == 0
    )


def _marks(key: str, index: sp.Symbol, position: int, size: int) -> dict[sp.Expr, sp.Integer]:
    """Each subset's indicator entry at ``index``, replaced by its value at ``position``."""
    return {
        subset.indicator[index]: sp.Integer(subset.entries(size, subset.default)[position])
        for subset in LAYERS[key].subsets
    }


def _true_at(key: str, name: str, inputs: np.ndarray, eps: float, extra: list[np.ndarray]) -> list[Any]:
    size = len(inputs)
    xs = [mpmath.mpf(float(v)) for v in inputs]
    e = mpmath.mpf(float(eps))
    if _strategy(key, name) == "backward":
        return _product_at(key, name, xs, e, extra)
    reference = _vector_reference(key)
    stats = _statistics(key, xs)
    strategy = _strategy(key, name)
    marks = _indicator_values(key, size)
    if strategy == "applied":
        return [reference["applied"](v, *mark, *stats, e) for v, mark in zip(xs, marks, strict=True)]
    if strategy == "entrywise" and reference["degenerate"] is not None and stats[reference["spread"]] == 0:
        # The entry divides by the spread; where it is 0 the derived limit is J.
        return [reference["degenerate"](int(r == c), *stats, e, size) for r in range(size) for c in range(size)]
    if strategy == "entrywise":
        return [
            reference["entrywise"](a, b, *marks[r], *marks[c], int(r == c), *stats, e, size)
            for r, a in enumerate(xs)
            for c, b in enumerate(xs)
        ]
    if name in reference["of_statistics"]:
        return reference["of_statistics"][name](xs, *stats, e, size)
    values = [
        value
        for f, mult in reference["eigenpairs"]
        for _ in range(int(mult.subs(n, size)))
        for value in f(xs, *stats, e, size)
    ]
    return sorted(values)


# Where each vector a backward product takes is among its seeded extra inputs (dy, v, then the parameters).
_VECTORS = {"dy": 0, "v": 1}

# The input families of the vector grid: x = 10**k z over the whole range;
# constant inputs 10**k 1 (and their negatives); and a large offset 10**k
# (k = 4 .. 15) plus an O(1) spread, as float64 z and as small integers,
# which float64 holds exactly.
FAMILIES = ("scaled", "constant", "offset", "integer offset")


def _inputs(family: str, z: np.ndarray, power: int, dtype: DTypeLike) -> list[tuple[np.ndarray, str]]:
    if family == "scaled":
        return [((z * 10.0**power).astype(dtype), f"x = 1e{power} z")]
    if family == "constant":
        return [(np.full(z.shape, sign * 10.0**power).astype(dtype), f"x = {sign:+d}e{power} 1") for sign in (1, -1)]
    if not 4 <= power <= 15:
        return []
    spread, shown = (np.rint(3 * z), "rint(3 z)") if family == "integer offset" else (z, "z")
    return [((10.0**power + spread).astype(dtype), f"x = 1e{power} + {shown}")]


def vector(
    key: str,
    name: str,
    dtype: DTypeLike,
    powers: np.ndarray,
    epsilons: np.ndarray,
    seed: int = 0,
    family: str = "scaled",
) -> Result:
    """Normwise error of a vector function over one input family, n in SIZES, against mpmath.

    Where the true value is exactly zero (the output at a constant input) the
    computed one must be exactly zero too.  A backward product takes seeded
    standard-normal dy and v (and gain and bias), rounded to ``dtype``.
    """
    info = np.finfo(dtype)
    layer = facade(key)
    rng = np.random.default_rng(seed)
    others = np.random.default_rng(seed + 1)  # dy, v and the parameters: x's draws stay as they were
    backward = _strategy(key, name) == "backward"
    takes = _takes(key, name) if backward else ()
    second = len(takes) == 2
    worst, bound, where, silent, points = 0.0, 0.0, "", 0, 0
    for size in SIZES:
        z = rng.standard_normal(size)
        extra = [others.standard_normal(size).astype(dtype) for _ in range(2 + len(LAYERS[key].parameters))]
        args = [extra[_VECTORS[taken]] for taken in takes]
        args += extra[2:] if backward else []
        for power in powers:
            for inputs, shown in _inputs(family, z, int(power), dtype):
                if not np.isfinite(inputs).all() or (family == "scaled" and (inputs == 0).any()):
                    continue
                for eps in np.asarray(parameter_values(key, epsilons), dtype=dtype):
                    if second and _apart(inputs, eps, layer):
                        continue  # beyond SECOND_ORDER_SPAN: stated in the README, pinned by a test
                    measured = _measured(key, name, inputs, eps, args, extra if backward else None, info)
                    if measured is None:
                        continue
                    error, lost, refusal = measured
                    if refusal is not None:
                        # A refusal where the true value exists is a failure of this row, shown.
                        silent += 1
                        worst, bound, where = float("inf"), VECTOR_BOUND_PER_FEATURE * size, f"{shown}: {refusal}"
                        continue
                    points += 1
                    silent += lost
                    # The bound is 8 n ulp: the worst case is the one closest to its own bound.
                    if not bound or error / (VECTOR_BOUND_PER_FEATURE * size) > worst / bound:
                        worst, bound = error, VECTOR_BOUND_PER_FEATURE * size
                        where = f"n = {size}, {shown}, {parameter(key)} = {eps:.3g}"
    label = f"{key}.{name}" if family == "scaled" else f"{key}.{name} [{family}]"
    return Result(label, str(np.dtype(dtype)), worst, where, bound, points, silent)


def _measured(
    key: str, name: str, inputs: np.ndarray, eps: Any, args: list[np.ndarray], extra: list | None, info: Any
) -> tuple[float, bool, str | None] | None:
    """The normwise error of ``name`` at one point, in ulp; whether the value was lost (not
    finite where the truth is); and the message of a refusal where the true value exists.
    None where the point is not measured: a degenerate input the product rightly refuses, or a
    true value beyond the normal floats.  ``extra``: the backward product's vectors, else None."""
    layer = facade(key)
    try:
        found = getattr(layer, name)(inputs, eps, *args)
    except ValueError as refused:
        if extra is not None and _no_value_at(layer, name, inputs):
            return None
        return float("inf"), False, str(refused)
    first = found[0] if isinstance(found, tuple) else found  # dx of (dx, dgain, dbias)
    computed = np.ravel(np.asarray(first, dtype=np.float64))
    with mpmath.workdps(DIGITS):
        true = _true(key, name, inputs, eps, extra)
        scale = max(abs(v) for v in true)
        if scale != 0 and not info.tiny <= scale <= info.max:
            return None
        if not np.isfinite(computed).all():
            return float("inf"), True, None
        if scale == 0:
            return (0.0 if not computed.any() else float("inf")), False, None
        error = max(float(abs(mpmath.mpf(float(c)) - v)) for c, v in zip(computed, true, strict=True))
        return error / float(scale) / float(info.eps), False, None


# The Hessian product is measured where the input's scale and the root of epsilon are at most
# this factor apart.  Beyond it, a layer that adds epsilon to a deviation (its product is
# about 1/epsilon**2 there) has terms such as c**3 / sigma**3 that no single float64 scaling
# keeps inside the range, and returns 0 or an overflow for a value that exists: unless the
# platform has a float with a wider exponent to take those rows in (`_rescale.EXTENDED`).
def second_order_span(extended: bool) -> float:
    return np.inf if extended else 2.0**500


SECOND_ORDER_SPAN = second_order_span(_rescale.EXTENDED)


def _takes(key: str, name: str) -> tuple[str, ...]:
    """The vectors the backward product ``name`` takes after x, by argument name, in order."""
    value = _derived(key, name)
    return tuple(taken for base, taken in ((g, "dy"), (v, "v")) if value.has(base))


def _apart(inputs: np.ndarray, eps: Any, layer: Any) -> bool:
    if not layer.definition.has_epsilon:
        return False  # no epsilon: no scale for the input to be apart from
    c = layer._c
    values = np.asarray(inputs, dtype=np.float64)
    spread = float(np.max(np.abs(values - np.mean(values) if c.centered else values)))
    root = float(np.ravel(layer.epsilon_root(np.float64(eps)))[0])
    return bool(spread > 0 and not 1 / SECOND_ORDER_SPAN <= spread / root <= SECOND_ORDER_SPAN)


def _no_value_at(layer: Any, name: str, inputs: np.ndarray) -> bool:
    """Whether ``inputs`` is the degenerate input (constant, or zero) of a layer whose product
    ``name`` has no limit there (the layer is not twice differentiable there)."""
    if not layer.definition.approach:
        return False
    c = layer._c
    if not c.layer.approach or c.product(name).degenerate is not None:
        return False
    return bool((inputs == inputs[0]).all() if c.centered else not inputs.any())


def table(rows: list[Result]) -> str:
    lines = [f"{'function':<56}{'dtype':>9}{'worst ulp':>11}{'bound':>7}{'points':>8}  where"]
    for row in rows:
        flag = "" if row.ok else "   FAIL"
        lines.append(
            f"{row.function:<56}{row.dtype:>9}{row.worst:>11.2f}{row.bound:>7g}{row.points:>8}  {row.where}{flag}"
        )
    return "\n".join(lines) + "\n"


def vector_grids(
    dtype: DTypeLike, vector_step: int = 30, epsilon_step: int = 60
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each family's (powers k of the input, epsilons): float32's grid is finer than the steps given."""
    small = np.dtype(dtype) == np.float32
    # float32's range is eight times narrower: a step of 10 gives it seven magnitudes of each.
    powers = exponents(dtype, 10 if small else vector_step)
    epsilons = 10.0 ** exponents(dtype, 10 if small else epsilon_step)
    # Constant inputs trust an exact-zero reference only at the highest precision,
    # so float64's constant grid is coarser than its scaled one; offsets run k = 4 .. 15.
    grids = {
        "scaled": (powers, epsilons),
        "constant": (exponents(dtype, 10 if small else 100), 10.0 ** exponents(dtype, 10 if small else 150)),
        "offset": (np.arange(4, 16), 10.0 ** exponents(dtype, 10 if small else 100)),
    }
    grids["integer offset"] = grids["offset"]
    return grids


def measure(vector_step: int = 30, epsilon_step: int = 60) -> list[Result]:
    """Every function on the scalar grid and on the vector grid, both dtypes."""
    rows = []
    for dtype in (np.float64, np.float32):
        ts, epsilons = scalar_grid(dtype)
        for key in layer_keys():
            for name in scalar_functions(key):
                rows.append(scalar(key, name, dtype, ts, epsilons))
    for dtype in (np.float64, np.float32):
        grids = vector_grids(dtype, vector_step, epsilon_step)
        for key in layer_keys():
            for name in vector_functions(key):
                for family in FAMILIES:
                    rows.append(vector(key, name, dtype, *grids[family], family=family))
        for key in LAYERS:
            for name in backward_functions(key):
                for family in FAMILIES:
                    rows.append(vector(key, name, dtype, *grids[family], family=family))
    return rows
