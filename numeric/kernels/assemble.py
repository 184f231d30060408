"""Jacobian assembly: from the derived eigenstructure, or from the derived entry J_ik.

Both work on inputs already rescaled to size at most 1 (`numeric.kernels.rescale`);
the caller multiplies by m**p.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numeric.kernels import rescale as _rescale
from numeric.kernels.compiled import Compiled

# The scales at which `direct` takes rows as they are: every power up to the third of them, and
# of their ratio, is a normal float64 far from the ends of the range.
SAFE = (2.0**-100, 2.0**100)
# Up to this n, `direct` adds its rank-one updates as one matrix product (one pass over the result).
PRODUCT = 128


def _spectrum(c: Compiled, array: np.ndarray, stats: list[np.ndarray], e: np.ndarray) -> tuple[np.ndarray, list]:
    """lambda_rest and, per explicit direction, (lambda, u, u.u, vanished): J = lambda_rest I +
    sum_u (lambda - lambda_rest) u u^T / (u.u), proved in `derivations.derive.eigen.spectral_form`."""
    size = array.shape[-1]
    batch = np.broadcast_shapes(array.shape, e.shape)[:-1]
    # lambda_rest: the complement's eigenvalue where the complement exists at
    # this n; a direction that vanishes (a constant input) joins the rest,
    # with its own eigenvalue, which equals the complement's there.
    rest = np.zeros((*batch, 1))
    vanished = np.zeros((*batch, 1), dtype=bool)
    updates = []
    for pair in c.eigen:
        lam = np.broadcast_to(pair.value(*stats, e, size), (*batch, 1))
        if pair.entry is None:
            if pair.count(size) > 0:
                rest = np.where(vanished, rest, lam)
            continue
        v = np.broadcast_to(pair.entry(array, *stats), (*batch, size))
        # Normalized by its largest entry first, so v.v cannot underflow.
        largest = np.max(np.abs(v), axis=-1, keepdims=True)
        zero = largest == 0
        u = v / np.where(zero, 1.0, largest)
        updates.append((lam, u, np.where(zero, 1.0, np.sum(u * u, axis=-1, keepdims=True)), zero))
        rest = np.where(zero, lam, rest)
        vanished |= zero
    return rest, updates


def from_eigen(c: Compiled, array: np.ndarray, stats: list[np.ndarray], e: np.ndarray) -> np.ndarray:
    r"""J = sum_d lambda_d Pi_d, proved in `derivations.derive.eigen.spectral_form`.

    Each term is accurate on its own, where the entry formula subtracts terms
    of size 1/s to leave eps/s**3 (n = 2, q >> eps): one scaled identity and
    one rank-one update per direction.
    """
    rest, updates = _spectrum(c, array, stats, e)
    total = rest[..., None] * np.eye(array.shape[-1])
    for lam, u, length, zero in updates:
        weight = np.where(zero, 0.0, (lam - rest) / length)
        total += (weight * u)[..., :, None] * u[..., None, :]
    return total


def apply_eigen(c: Compiled, array: np.ndarray, stats: list[np.ndarray], e: np.ndarray, w: np.ndarray) -> np.ndarray:
    """J w for a symmetric J through the same spectrum, without forming J: accurate where
    the derived product's entry formula cancels (n = 2, q >> eps)."""
    rest, updates = _spectrum(c, array, stats, e)
    out = rest * w
    for lam, u, length, zero in updates:
        weight = np.where(zero, 0.0, (lam - rest) / length)
        out = out + weight * np.sum(u * w, axis=-1, keepdims=True) * u
    return out


def from_entry(
    c: Compiled, array: np.ndarray, stats: list[np.ndarray], e: np.ndarray, parameters: list[np.ndarray]
) -> np.ndarray:
    """J_ik from the derived entry, for every pair (i, k) at once."""
    size = array.shape[-1]
    stacked = [s[..., None] for s in stats]
    # A subset's indicator (after the parameters) enters at the row i and at the column k.
    indicators = parameters[len(c.parameter_names) :]
    params = [p[..., :, None] for p in parameters] + [m[..., None, :] for m in indicators]
    shape = (*np.broadcast_shapes(array.shape, e.shape)[:-1], size, size)
    rows, columns, delta = array[..., :, None], array[..., None, :], np.eye(size)
    if not c.layer.approach:
        return np.broadcast_to(c.entry.function(rows, columns, delta, *stacked, e[..., None], size, *params), shape)
    # The general entry divides by the spread; where it is exactly zero the
    # derived limit is the Jacobian, and the 0/0 there is discarded.
    degenerate = stacked[c.spread] == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        entries = c.entry.function(rows, columns, delta, *stacked, e[..., None], size, *params)
    limit = c.degenerate_entry(delta, *stacked, e[..., None], size)
    return np.broadcast_to(np.where(degenerate, limit, entries), shape)


def direct(c: Compiled, x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """J of rows x (shape (..., n), float64) from the derived eigenstructure, as `from_eigen`
    assembles it, in a few NumPy calls on the rows as they are: no rescaling, for a call's fixed
    cost at small n.  Returns J and the rows it is right for, shape (..., 1): those where x
    (centered, for a translation-invariant layer, within a few spreads of its mean) and the root
    of epsilon lie within `SAFE`, where no power up to the sixth of either leaves the normal
    floats, and no direction vanishes.  The other rows are the caller's to take by the general
    path.  The layer takes no parameter and no subset.  Each row's value depends on that row alone."""
    with np.errstate(all="ignore"):  # rows that are not safe are discarded
        return _direct(c, x, e)


def _direct(c: Compiled, x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    size = x.shape[-1]
    # One row and one epsilon: the statistics and eigenvalues as NumPy scalars, whose arithmetic
    # is the arrays' (IEEE operations and a correctly rounded sqrt) at a fraction of a call's cost.
    keep: Any = not (x.ndim == 1 and e.size == 1)  # a bool: keepdims for every reduction
    if not keep:
        e = e.reshape(())[()]
    mean = None
    if c.centered:
        mean = np.add.reduce(x, axis=-1, keepdims=keep) / size
        x = x - mean
    top = np.maximum.reduce(np.abs(x), axis=-1, keepdims=keep)
    root = _rescale.epsilon_root(e, c.epsilon_degree)
    safe = (np.minimum(top, root) >= SAFE[0]) & (np.maximum(top, root) <= SAFE[1])
    if mean is not None:
        safe &= np.abs(mean) <= _rescale.OFFSET * top
    stats: list[np.ndarray] = []
    for stat, summand in zip(c.layer.statistics, c.summands, strict=True):
        value = summand(x, *stats, size)
        stats.append(np.add.reduce(_full(value, x.shape), axis=-1, keepdims=keep) / size if stat.mean else value)
    rest: Any = 0.0
    updates = []
    for pair in c.eigen:
        lam = pair.value(*stats, e, size)
        if pair.entry is None:
            rest = lam if pair.count(size) > 0 else rest
            continue
        v = _full(pair.entry(x, *stats), x.shape)
        length = np.add.reduce(v * v, axis=-1, keepdims=keep)  # at a safe scale, a normal float
        safe = safe & (length > 0)  # a direction that vanishes joins the rest: the general path
        updates.append((lam, v, length))
    batch = np.shape(safe)[:-1] if keep else ()
    if size <= PRODUCT:  # the rank-one updates as one product, (n, m) times (m, n)
        left, right = np.zeros((*batch, size, max(1, len(updates)))), np.zeros((*batch, max(1, len(updates)), size))
        for column, (lam, v, length) in enumerate(updates):
            left[..., :, column] = (lam - rest) / length * v
            right[..., column, :] = v
        total = left @ right
    else:  # one outer product each: BLAS threads a large product, and waits on a loaded machine
        total = np.zeros((*batch, size, size))
        for lam, v, length in updates:
            total += ((lam - rest) / length * v)[..., :, None] * v[..., None, :]
    diagonal = total.reshape(*total.shape[:-2], size * size)[..., :: size + 1]
    diagonal += rest
    return total, np.reshape(safe, np.shape(safe) if keep else (1,))


def _full(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` in ``shape``: a lambdified expression free of x is a number."""
    if isinstance(value, np.ndarray) and value.shape == shape:
        return value
    if not isinstance(value, np.ndarray):  # a number: one fill, cheaper than a broadcast view
        return np.full(shape, value, dtype=np.float64)
    return np.broadcast_to(value, shape)
