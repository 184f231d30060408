"""The computations behind `numeric._layer.NumericLayer`: each layer's statistics, its values at a
safe scale, the fused program over blocks of rows, the Jacobian's routes, the backward products
and the Hessian product split along the explicit eigen directions.

Each function takes the layer's facade first (its compiled functions, ``layer._c``, and the
methods a wrapper overrides: `weights`, `jacobian_product`, `jacobian_from_entry`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from derivations import Direction
from numeric import _validate
from numeric.kernels import assemble as _assemble
from numeric.kernels import backward as _backward
from numeric.kernels import native as _native
from numeric.kernels import rescale as _rescale
from numeric.kernels.compiled import Fused

# The facade, `numeric._layer.NumericLayer`: that module imports this one, so it is not imported here.
NumericLayer = Any

# Rows of a fused program run in blocks of about this many entries: the
# temporaries of a block stay in cache, and a block is large enough that
# the per-call cost of NumPy and of the loop is small against its arithmetic.
# Measured at (4096, 768) on a 2-core machine with 1 MiB of L2 a core: 2**18
# entries (341 rows) against 2**16, RMSNorm's float32 forward went from
# 1.38-1.50 to 1.20-1.25 times its NumPy peer, the others by 3-20% too;
# 2**17 and 2**19 were no better in float32, and 2**19 worse in float64.
FUSED_BLOCK = 1 << 18
# The Hessian product's blocks, smaller: it holds some 30 arrays of a block at once.  Measured
# at (4096, 768) float32, LayerNorm: 0.39 s a call at 2**18 entries, 0.31 s at 2**16, 0.33 s at
# 2**15 (whole, unblocked: 0.51 s).
HVP_BLOCK = 1 << 16


def _per_row(parameter: np.ndarray, size: int) -> np.ndarray:
    """A parameter broadcast to x's shape as rows (..., n) -> (rows, n), without copying
    one that is the same in every row: that one becomes shape (1, n)."""
    if parameter.ndim == 1 or (parameter.size and not any(parameter.strides[:-1])):
        return parameter[(0,) * (parameter.ndim - 1)].reshape(1, size)
    return parameter.reshape(-1, size)


def one_per_row(value: Any, rows: np.ndarray, e: np.ndarray) -> np.ndarray:
    """A value of one entry per row, broadcast to shape (..., 1) over the rows of ``rows`` and ``e``."""
    return np.broadcast_to(value, np.broadcast_shapes((*rows.shape[:-1], 1), np.shape(e)))


def _at(parameter: np.ndarray, index: Any) -> np.ndarray:
    """The rows ``index`` of a parameter from `_per_row` (all of it where it has one row)."""
    return parameter if parameter.shape[0] == 1 else parameter[index]


def statistics(layer: NumericLayer, values: np.ndarray, parameters: Any = ()) -> list[np.ndarray]:
    """Each statistic: the mean of its lambdified summand over the last axis, or its value.

    ``parameters`` are those `_parameters` returns: a subset's indicator among them
    (after the layer's own) enters the summands of partial means.
    """
    stats: list[np.ndarray] = []
    size = values.shape[-1]
    indicators = list(parameters)[len(layer._c.parameter_names) :] if layer._c.indicators else []
    for stat, summand, within in zip(layer.definition.statistics, layer._c.summands, layer._c.restricted, strict=True):
        if stat.mean:
            seen = values if within is None else np.where(indicators[within] == 0, 0.0, values)
            # At a scale set by a subset, a statistic of the other entries may overflow (to inf,
            # as its true value does); what uses it says so in its own value.
            with np.errstate(over="ignore"):
                terms = np.broadcast_to(summand(seen, *indicators, *stats, size), values.shape)
            stats.append(np.mean(terms, axis=-1, keepdims=True))
        else:
            stats.append(np.broadcast_to(summand(values, *indicators, *stats, size), stats[-1].shape))
    return stats


def at_scale(
    layer: NumericLayer, at: Callable[..., Any], array: np.ndarray, e: np.ndarray, degree: int, parameters: list[Any]
) -> Any:
    """``at(scaled x, scaled epsilon, statistics)``, homogeneous of ``degree``, at validated x and
    epsilon: each row evaluated at a scale where neither leaves the float range
    (`numeric.kernels.rescale.at_scale`), its statistics over ``parameters``."""

    def on(scaled: np.ndarray, e_scaled: np.ndarray, m: np.ndarray) -> Any:
        value = at(scaled, e_scaled, statistics(layer, scaled, parameters))
        if isinstance(value, list):
            return [_rescale.scaled_back(one, m, degree) for one in value]
        return _rescale.scaled_back(value, m, degree)

    return _rescale.at_scale(
        on,
        array,
        e[..., None],
        layer._c.epsilon_degree,
        layer._c.centered,
        layer.weights(parameters),
    )


def forward(layer: NumericLayer, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
    """The layer applied along the last axis of x, shape (..., n).

    One fused program (`Compiled.fused_output`) takes the statistics and
    the output of each block of rows, in float32 where x is float32; the
    rows whose scale or offset it cannot take as they are
    (`numeric.kernels.rescale.fits`) are computed again, rescaled, in float64.
    Where the layer has a statistic that is not finite wherever an entry is
    not (`Compiled.witness`), x's finiteness is read off it, not off a
    pass of its own (so the other arguments' errors come first).
    """
    compiled = _native.forward(layer, x, epsilon, parameters, named)
    if compiled is not None:
        return compiled
    array, e, dtype, batch = _rescale.validated(x, epsilon, keep_float=True, finite=layer._c.witness is None)
    size = array.shape[-1]
    full = np.broadcast_to(array, (*batch, size))
    if not full.size:
        _validate._finite(array, "x")  # no row to read it off: x broadcast to an empty batch
    params = [_per_row(p, size) for p in layer._parameters(full, parameters, named)]
    rows = full.reshape(-1, size)
    eps_rows = np.broadcast_to(e, batch).reshape(-1, 1)
    output = layer._c.output

    def safe(index: np.ndarray) -> list[np.ndarray]:
        here = [_at(q, index) for q in params]

        def at(scaled: np.ndarray, e_scaled: np.ndarray) -> np.ndarray:
            return np.broadcast_to(
                output.function(scaled, *statistics(layer, scaled, here), e_scaled, *here), scaled.shape
            )

        value = _rescale.at_scale(
            lambda scaled, e_scaled, m: _rescale.times_power(at(scaled, e_scaled), m, output.degree),
            rows[index].astype(np.float64),
            eps_rows[index],
            layer._c.epsilon_degree,
            layer._c.centered,
            layer.weights(here),
        )
        return [value]

    (out,) = fused(layer, layer._c.fused_output, rows, eps_rows, [], params, dtype, safe)
    return _validate.output(out.reshape(*batch, size), dtype)


def fused(
    layer: NumericLayer,
    program: Fused,
    rows: np.ndarray,
    eps_rows: np.ndarray,
    vectors: list[np.ndarray],
    params: list[np.ndarray],
    compute: np.dtype,
    safe: Callable[[np.ndarray], list[np.ndarray]],
    summed: int = 0,
) -> list[np.ndarray]:
    """``program`` over cache-sized blocks of ``rows``, in the ``compute`` dtype; the rows it
    cannot take as they are (`numeric.kernels.rescale.fits`) are computed again by ``safe(index)``.
    A row whose `Compiled.witness` statistic is not finite is searched for an entry that is
    not (a `ValueError` naming x); where none is (finite entries overflowing), it goes on.

    The last ``summed`` results are wanted only as their sum over the rows (a parameter's
    gradient): each is reduced block by block, in float64, and returned as shape (1, n), so
    that no array of the input's size is made for it.
    """
    c = layer._c
    size = rows.shape[-1]
    degree = c.statistic_degrees[c.statistics[c.spread]]
    shifted = [m for m, symbol in enumerate(c.statistics) if symbol in c.shifted]
    eps_compute = eps_rows.astype(compute)
    roots = layer.epsilon_root(eps_rows)
    kept = program.results - summed
    results = [np.empty(rows.shape, dtype=compute) for _ in range(kept)]
    totals = [np.zeros((1, size), dtype=np.float64) for _ in range(summed)]
    # Whether a row needs the rescaled path, decided block by block from the block's statistics.
    ok = np.empty(rows.shape[0], dtype=bool)
    step = max(1, FUSED_BLOCK // size)
    with np.errstate(all="ignore"):
        for start in range(0, rows.shape[0], step):
            block = slice(start, start + step)
            count = len(rows[block])
            here = [vector[block].astype(compute, copy=False) for vector in vectors]
            values = program.function(
                rows[block].astype(compute, copy=False),
                *here,
                *(_at(p, block).astype(compute, copy=False) for p in params),
                eps_compute[block],
                size,
            )
            stats = [np.broadcast_to(stat, (count, 1)) for stat in values[2 * program.results :]]
            if c.witness is not None:
                unseen = np.flatnonzero(~np.isfinite(stats[c.witness][:, 0]))
                if unseen.size:
                    _validate._finite(rows[block][unseen], "x")
            fits = _rescale.fits(
                _rescale.epsilon_root(stats[c.spread], degree),
                [stats[m] for m in shifted],
                roots[block],
                [_rescale.largest(vector) for vector in here],
                compute,
            )
            ok[block] = fits
            for r, out in enumerate(results):
                np.multiply(values[2 * r], values[2 * r + 1], out=out[block])
            for r, total in enumerate(totals, start=kept):
                product = np.broadcast_to(values[2 * r] * values[2 * r + 1], (count, size))
                total += np.sum(product if fits.all() else product[fits], axis=0, dtype=np.float64)
    index = np.flatnonzero(~ok)
    if index.size:
        found = safe(index)
        for out, value in zip(results, found[:kept], strict=True):
            out[index] = value
        for total, value in zip(totals, found[kept:], strict=True):
            total += np.sum(value, axis=0, dtype=np.float64)
    return [*results, *totals]


def jacobian(layer: NumericLayer, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
    """d forward(x)_i / d x_k, shape (..., n, n).

    A symmetric Jacobian is assembled from the derived eigenstructure
    (`numeric.kernels.assemble.from_eigen`), any other from the derived entry.
    """
    if not layer._c.symmetric:
        return layer.jacobian_from_entry(x, epsilon, *parameters, **named)
    if not (parameters or named):
        compiled = _native.jacobian(layer, x, epsilon)
        if compiled is not None:
            return compiled
    # x's entries are checked finite where a row is not safe: a NaN or an infinite entry never is.
    array, e, dtype, _ = _rescale.validated(x, epsilon, finite=False)
    direct = None
    if not (parameters or named or layer._c.indicators):
        # Rows at a safe scale directly: by the compiled driver, or in a few NumPy calls
        # (`_assemble.direct`), which take the same rows.
        direct, safe = _native.direct(layer, array, e) or _assemble.direct(layer._c, array, e[..., None])
        if safe.all():
            return _validate.output(direct, dtype)
    _validate._finite(array, "x")
    layer._parameters(array, parameters, named)
    total = at_scale(
        layer,
        lambda scaled, e_scaled, stats: _assemble.from_eigen(layer._c, scaled, stats, e_scaled),
        array,
        e,
        layer._c.entry.degree,
        layer._subsets(None, array.shape),
    )
    if direct is not None:
        total = np.where(safe[..., None], direct, total)
    return _validate.output(total, dtype)


def jacobian_from_entry(
    layer: NumericLayer, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any
) -> np.ndarray:
    """The Jacobian from the derived entry J_ik directly (the route for non-symmetric layers)."""
    array, e, dtype, _ = _rescale.validated(x, epsilon)
    params = layer._parameters(array, parameters, named)
    entries = at_scale(
        layer,
        lambda scaled, e_scaled, stats: _assemble.from_entry(layer._c, scaled, stats, e_scaled, params),
        array,
        e,
        layer._c.entry.degree,
        params,
    )
    return _validate.output(entries, dtype)


def products(
    layer: NumericLayer, names: list[str], x: ArrayLike, epsilon: ArrayLike, *args: ArrayLike, **named: Any
) -> list[Any]:
    """The backward products ``names`` at x: the first of shape (..., n), each further
    one (a parameter's gradient) summed over every leading axis, shape (n,).

    ``args`` are the vectors the first product takes (dy, v), then the
    layer's parameters.  One fused program (`Compiled.fused_products`)
    takes each block of rows as in `forward`, in float32 where the inputs
    are float32 and the product is linear (a product of two vectors, the
    Hessian's, is computed in float64); the rows it cannot take, and every
    row where n = 2 and the layer applies J through its eigenstructure (the
    entry formula cancels there), go through `numeric.kernels.backward.evaluate`.
    """
    compiled = _native.products(layer, names, x, epsilon, args, named)
    if compiled is not None:
        return compiled
    products = [layer._c.product(name) for name in names]
    takes = products[0].vectors
    if len(args) < len(takes):
        raise TypeError(f"{names[0]}() takes (x, epsilon, {', '.join(takes)}); got {2 + len(args)} arguments")
    given, parameters = args[: len(takes)], args[len(takes) :]
    array, e, _, batch = _rescale.validated(x, epsilon, keep_float=True)
    vectors = [
        _validate.vector_like(value, name, array.shape, keep_float=True)
        for value, name in zip(given, takes, strict=True)
    ]
    size = array.shape[-1]
    batch = np.broadcast_shapes(batch, *(vector.shape[:-1] for vector in vectors))
    full = (*batch, size)
    dtype = _validate.result_dtype(x, epsilon, *given)
    used = set().union(*(product.parameters for product in products))
    defaults = {name: np.zeros(size) for name in layer._c.parameter_names if name not in used}
    given_params = layer._parameters(np.broadcast_to(array, full), parameters, named, defaults)
    params = [_per_row(p, size) for p in given_params]
    rows = np.broadcast_to(array, full).reshape(-1, size)
    vector_rows = [np.broadcast_to(vector, full).reshape(-1, size) for vector in vectors]
    eps_rows = np.broadcast_to(e, batch).reshape(-1, 1)

    def safe(index: np.ndarray) -> list[np.ndarray]:
        return _backward.evaluate(
            products,
            rows[index].astype(np.float64),
            eps_rows[index],
            [vector[index].astype(np.float64) for vector in vector_rows],
            [_at(p, index) for p in params],
            layer,
        )

    if size == 2 and any(product.jacobian_product for product in products) and layer.through_eigen:
        found = safe(np.arange(rows.shape[0]))
    elif len(takes) == 2 and layer._c.hvp_pairs:
        # Row by row independent: blocks of rows whose temporaries stay in cache.
        step = max(1, HVP_BLOCK // size)
        blocks = [slice(start, start + step) for start in range(0, rows.shape[0], step)]
        found = [
            np.concatenate(
                [
                    hvp_by_directions(
                        layer,
                        names[0],
                        rows[block],
                        eps_rows[block],
                        [vector[block] for vector in vector_rows],
                        [_at(p, block) for p in params],
                    )
                    for block in blocks
                ]
            )
        ]
    else:
        compute = dtype if len(takes) == 1 else np.dtype(np.float64)
        program = layer._c.fused_products(tuple(names))
        found = fused(layer, program, rows, eps_rows, vector_rows, params, compute, safe, summed=len(names) - 1)
    first, *summed = found
    totals = [np.asarray(np.sum(value, axis=0, dtype=np.float64)) for value in summed]
    return [_validate.output(first.reshape(full), dtype), *(_validate.output(t, dtype) for t in totals)]


def hvp_by_directions(
    layer: NumericLayer, name: str, rows: np.ndarray, e: np.ndarray, vectors: list[np.ndarray], params: list[Any]
) -> np.ndarray:
    """H(g, v), bilinear, split along the explicit eigen directions: with unit vectors d,
    g = sum_d a_d d + g', v = sum_e b_e e + v',

        H(g, v) = H(g', v') + sum_d a_d H(d, v') + sum_e b_e H(g', e) + sum_de a_d b_e H(d, e),

    the last from the form derived along the directions (`Compiled.hvp_pairs`), where the
    general one cancels (n = 2, q >> epsilon); the others from the general form."""
    c = layer._c
    product = c.product(name)
    compute = np.dtype(np.float32) if rows.dtype == np.float32 else np.dtype(np.float64)
    rows = rows.astype(np.float64)
    units, lengths = _unit_directions(layer, rows, e)
    g, w = (vector.astype(np.float64) for vector in vectors)
    split = _split(g, w, units)
    size = rows.shape[-1]
    if not any(pair.entry is None and pair.count(size) for pair in c.eigen):
        # The explicit directions span every vector at this n (n = 2): what is left of g
        # and v is rounding, which the general form would weigh with 1/s**3, not eps/s**5.
        split = split._replace(g_rest=np.zeros_like(g), w_rest=np.zeros_like(w), along_g=g, along_w=w)
    # A term beyond the float range here (inf, or inf - inf) is a row the split cannot take,
    # handled below: no warning for it.
    with np.errstate(all="ignore"):
        out = _off_directions(layer, name, rows, e, params, split, compute)
    # The pairs whose form is not identically 0: the others add nothing.
    pairs = [pair for pair in c.hvp_pairs if pair[2] is not None]
    if pairs:
        # Every pair's form at one scale, from one set of statistics.
        def at(here: np.ndarray, e_here: np.ndarray, m_here: np.ndarray) -> list[np.ndarray]:
            stats = statistics(layer, here)
            return [
                _rescale.times_power(
                    np.broadcast_to(along(here, *stats, e_here, size), here.shape), m_here, product.degree
                )
                for _, _, along in pairs
            ]

        with np.errstate(all="ignore"):
            values = _rescale.at_scale(at, rows, e, c.epsilon_degree, c.centered, None)
        for (first, second, _), value in zip(pairs, values, strict=True):
            both = (lengths[first] > 0) & (lengths[second] > 0)
            with np.errstate(all="ignore"):  # a row beyond the float range here is taken below
                out += (split.a[first] * split.b[second]) * (value if both.all() else np.where(both, value, 0.0))
    # A row the split cannot take is the general form's: a product beyond the float range
    # (inf - inf), which it gives as it is, or one whose statistics the rescaling lost (x far
    # below the root of epsilon), which it takes at the balanced scale.
    # The rows' sums first (one pass): a row whose sum is finite has every entry finite.
    with np.errstate(all="ignore"):
        suspect = np.flatnonzero(~np.isfinite(np.sum(out, axis=-1)))
    bad = suspect[~np.isfinite(out[suspect]).all(axis=-1)]
    if bad.size:
        e_bad = e[bad] if np.ndim(e) and np.shape(e)[0] > 1 else e
        params_bad = [_at(p, bad) for p in params]
        out[bad] = _backward.evaluate([product], rows[bad], e_bad, [g[bad], w[bad]], params_bad, layer)[0]
    return out


class _Split(NamedTuple):
    """Two vectors g and w split along unit vectors d: g = sum_d a_d d + g_rest and
    w = sum_d b_d d + w_rest, each coefficient of shape (..., 1)."""

    units: list[np.ndarray]
    a: list[np.ndarray]
    b: list[np.ndarray]
    g_rest: np.ndarray
    w_rest: np.ndarray
    along_g: np.ndarray  # sum_d a_d d
    along_w: np.ndarray  # sum_d b_d d
    g: np.ndarray
    w: np.ndarray


def _unit_directions(layer: NumericLayer, rows: np.ndarray, e: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each explicit eigen direction at each row as a unit vector, 0 where it vanishes, and its
    length once divided by its largest entry, 0 there too (shape (..., 1))."""
    c = layer._c
    # The directions at the input's own scale: they do not depend on epsilon, and at a scale
    # that holds epsilon too an input far below it vanishes (x = 1e-300, epsilon = 1e100).
    with np.errstate(all="ignore"):  # a constant row has no scale of its own: 0 / 0, its directions 0
        scaled, _, _ = _rescale.normalized(rows, np.zeros_like(e), c.epsilon_degree, c.centered)
    stats = statistics(layer, scaled)
    units, lengths = [], []
    for pair in c.explicit:
        d = np.broadcast_to(pair.entry(scaled, *stats), scaled.shape)
        # Divided by its largest entry first: |d|**2 of a tiny d underflows.
        largest = np.max(np.abs(d), axis=-1, keepdims=True)
        with np.errstate(all="ignore"):
            d = _divided(d, largest)
            length = np.sqrt(_row_dot(d, d))
            units.append(_divided(d, length))
        lengths.append(length)
    return units, lengths


def _divided(d: np.ndarray, by: np.ndarray) -> np.ndarray:
    """d / by, row by row, and 0 in the rows where by is not positive (0, or NaN)."""
    fine = by > 0
    if fine.all():
        return d / by
    return np.where(fine, d / np.where(fine, by, 1.0), 0.0)


def _split(g: np.ndarray, w: np.ndarray, units: list[np.ndarray]) -> _Split:
    """g and w split along the unit vectors ``units``."""
    a = [_row_dot(g, unit) for unit in units]
    b = [_row_dot(w, unit) for unit in units]
    along_g, along_w = np.zeros_like(g), np.zeros_like(w)
    for ai, bi, unit in zip(a, b, units, strict=True):
        along_g += ai * unit
        along_w += bi * unit
    return _Split(units, a, b, g - along_g, w - along_w, along_g, along_w, g, w)


def _row_dot(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """sum_k first_k second_k of each row, shape (..., 1), without a temporary of the rows' size."""
    return np.einsum("...k,...k->...", first, second)[..., None]


def _off_directions(
    layer: NumericLayer,
    name: str,
    rows: np.ndarray,
    e: np.ndarray,
    params: list[Any],
    split: _Split,
    compute: np.dtype,
) -> np.ndarray:
    """H(g', v') + sum_d a_d H(d, v') + sum_e b_e H(g', e): the terms with a part off the
    directions, from the general form: its fused program over blocks of rows, in ``compute``, the
    rows it cannot take as they are by `numeric.kernels.backward.evaluate`."""
    product = layer._c.product(name)
    program = layer._c.fused_products((name,))

    def general(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        def safe(index: np.ndarray) -> list[np.ndarray]:
            # A part of the product, checked across scales but not warned about: it can be rounding
            # residue (x ~ 1 against epsilon = 1e200), on which no two scales agree.
            e_here = e[index] if np.ndim(e) and np.shape(e)[0] > 1 else e
            here = [_at(p, index) for p in params]
            return _backward.evaluate(
                [product], rows[index], e_here, [first[index], second[index]], here, layer, checked=False
            )

        (value,) = fused(layer, program, rows, e, [first, second], params, compute, safe)
        return value

    # Bilinear: H(g', v') + sum_d a_d H(d, v') = H(g, v'), and sum_e b_e H(g', e) = H(g', v - v'):
    # two evaluations, not one for each term.
    if not split.units:
        return general(split.g, split.w).astype(np.float64)
    out = general(split.g, split.w_rest).astype(np.float64)
    out += general(split.g_rest, split.along_w)
    return out


def eigen_values(layer: NumericLayer, array: np.ndarray, e: np.ndarray, parameters: list[Any]) -> list[np.ndarray]:
    """Each derived eigenvalue at validated x and epsilon, shape (..., 1)."""
    size = array.shape[-1]
    return at_scale(
        layer,
        lambda scaled, e_scaled, stats: [
            one_per_row(pair.value(*stats, e_scaled, size), scaled, e_scaled) for pair in layer._c.eigen
        ],
        array,
        e,
        layer._c.eigen_degree,
        parameters,
    )


def eigenvalues(layer: NumericLayer, x: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    """The n eigenvalues of the Jacobian, ascending, from the derived eigenstructure."""
    if not layer._c.symmetric:
        raise ValueError(f"{layer.key} has a non-symmetric Jacobian: its eigenvalues are not derived")
    array, e, dtype, _ = _rescale.validated(x, epsilon)
    size = array.shape[-1]
    values = eigen_values(layer, array, e, layer._subsets(None, array.shape))
    columns = [
        one_per_row(value, array, e[..., None]).repeat(pair.count(size), axis=-1)
        for pair, value in zip(layer._c.eigen, values, strict=True)
    ]
    return _validate.output(np.sort(np.concatenate(columns, axis=-1), axis=-1), dtype)


def of_statistics(layer: NumericLayer, scalar: Any, x: ArrayLike, epsilon: ArrayLike, **named: Any) -> np.ndarray:
    """A scalar quantity of the statistics (`Compiled.scalar`) at each row of x, shape (...)."""
    array, e, dtype, _ = _rescale.validated(x, epsilon)
    size = array.shape[-1]
    value = at_scale(
        layer,
        lambda scaled, e_scaled, stats: one_per_row(scalar.function(*stats, e_scaled, size), scaled, e_scaled),
        array,
        e,
        scalar.degree,
        layer._subsets(named, array.shape),
    )
    return _validate.output(one_per_row(value, array, e[..., None])[..., 0], dtype)


def eigen_by_direction(layer: NumericLayer, x: ArrayLike, epsilon: ArrayLike, **named: Any) -> dict[str, np.ndarray]:
    """Each derived eigenvalue by the name of its direction, shape (...)."""
    array, e, _, _ = _rescale.validated(x, epsilon)
    values = eigen_values(layer, array, e, layer._subsets(named, array.shape))
    return {
        pair.direction.name: one_per_row(value, array, e[..., None])[..., 0]
        for pair, value in zip(layer._c.eigen, values, strict=True)
    }


def statistics_of_vector(layer: NumericLayer, x: ArrayLike, **named: Any) -> dict[sp.Symbol, float]:
    """The layer's statistics of one input vector, by symbol, as floats."""
    array = _validate.vector(x)
    indicators = layer._indicators(dict(named), array.shape, strict=True)
    values = statistics(layer, array, [None] * len(layer._c.parameter_names) + indicators)
    return {symbol: float(np.ravel(v)[0]) for symbol, v in zip(layer._c.statistics, values, strict=True)}


def direction(layer: NumericLayer, direction: Direction, x: ArrayLike) -> np.ndarray:
    """The vector of an explicit eigen direction at input x, by its lambdified entry."""
    array = _validate.vector(x)
    stats = statistics(layer, array)
    (pair,) = [p for p in layer._c.eigen if p.direction is direction]
    return np.broadcast_to(pair.entry(array, *stats), array.shape).astype(np.float64)
