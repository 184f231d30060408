"""Jacobian assembly: from the derived eigenstructure, or from the derived entry J_ik.

Both work on inputs already rescaled to size at most 1 (`numeric._rescale`);
the caller multiplies by m**p.
"""

from __future__ import annotations

import numpy as np

from numeric._compiled import Compiled


def from_eigen(c: Compiled, array: np.ndarray, stats: list[np.ndarray], e: np.ndarray) -> np.ndarray:
    r"""J = sum_d lambda_d Pi_d, proved in `derivations.eigen.spectral_form`.

    Each term is accurate on its own, where the entry formula subtracts terms
    of size 1/s to leave eps/s**3 (n = 2, q >> eps).  With Pi_v = v v^T / (v^T v)
    for each explicit direction and I minus their sum for the rest, this is
    J = lambda_rest I + sum_v (lambda_v - lambda_rest) Pi_v: one scaled
    identity and one rank-one update per direction.
    """
    size = array.shape[-1]
    batch = np.broadcast_shapes(array.shape[:-1], e.shape[:-1])
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
    total = rest[..., None] * np.eye(size)
    for lam, u, length, zero in updates:
        weight = np.where(zero, 0.0, (lam - rest) / length)
        total += (weight * u)[..., :, None] * u[..., None, :]
    return total


def from_entry(
    c: Compiled, array: np.ndarray, stats: list[np.ndarray], e: np.ndarray, parameters: list[np.ndarray]
) -> np.ndarray:
    """J_ik from the derived entry, for every pair (i, k) at once."""
    size = array.shape[-1]
    stacked = [s[..., None] for s in stats]
    params = [p[..., :, None] for p in parameters]
    shape = (*np.broadcast_shapes(array.shape[:-1], e.shape[:-1]), size, size)
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
