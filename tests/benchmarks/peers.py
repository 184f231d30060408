"""Hand-fused NumPy peers for ``bench_peers.py``: the fastest plain NumPy we could write.

These are benchmark peers, typed by hand on purpose; nothing in ``numeric/`` may use them.

Each ``build`` returns a zero-argument callable that recomputes its result from the inputs on
every call.  Outputs and scratch are allocated once, when the callable is built, and reused,
as a framework's allocator would.  The work goes over blocks of rows small enough for a core's
L2 cache; the row sums are einsum; every elementwise step writes in place.

The formulas, per row, with c = x - mean(x) (c = x for RMSNorm), r = 1/sqrt(mean(c^2) + eps)
and y = c r (bars are means over the row):
  vjp  dx = r (g - gbar - y mean(g y))                 (no gbar for RMSNorm)
  hvp  H v = -r^2 (a g + m v + (gv - 3 a m) y - (a gbar + m vbar))
       with a = mean(y v), m = mean(g y), gv = mean(g v) - gbar vbar  (gbar = vbar = 0 for RMSNorm)
  affine (gain, bias): forward gain y + bias; the products are the base's for the upstream
       gradient gain * g; dgain = sum over rows of g y, dbias = sum over rows of g.
  Jacobian  J = (I - 1 1^T/n - y y^T/n) r   (no 1 1^T/n for RMSNorm), times diag(gain).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

BLOCK_BYTES = 256 * 1024  # one block of one array; a kernel keeps three to five of them live
LAYERS = ("layernorm", "layernorm_affine", "rmsnorm")


class _Rows:
    """The arrays of one call, as 2-D views, with the blocks of rows to go over."""

    def __init__(self, layer: str, x: np.ndarray, epsilon: float, *params: np.ndarray) -> None:
        if layer not in LAYERS:
            raise ValueError(f"no hand peer for {layer!r}")
        self.centred = layer != "rmsnorm"
        self.gain, self.bias = params if layer == "layernorm_affine" else (None, None)
        self.shape = x.shape
        self.x = x.reshape(-1, x.shape[-1])
        self.rows, self.n = self.x.shape
        self.dtype = x.dtype
        self.epsilon = epsilon
        step = max(1, BLOCK_BYTES // (self.n * x.itemsize))
        self.blocks = [slice(start, min(start + step, self.rows)) for start in range(0, self.rows, step)]
        self.block_rows = min(step, self.rows)
        self.ones = np.ones(self.n, self.dtype)

    def full(self) -> np.ndarray:
        return np.empty((self.rows, self.n), self.dtype)

    def shaped(self, a: np.ndarray) -> np.ndarray:
        """A full-size buffer as a view of x's shape, what a call returns."""
        return a.reshape(self.shape)

    def scratch(self) -> np.ndarray:
        return np.empty((self.block_rows, self.n), self.dtype)

    def mean(self, a: np.ndarray, b: np.ndarray | None = None) -> Any:
        """The row means of a (or of a * b), as a column; a Python float for a single row, where
        a dot product costs less than einsum's call."""
        if self.rows == 1:
            return float(np.dot(a[0], self.ones if b is None else b[0])) / self.n
        total = np.einsum("ij->i", a) if b is None else np.einsum("ij,ij->i", a, b)
        total /= self.n
        return total[:, None]

    def column_sums(self, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        """The sums over the rows of a (or of a * b)."""
        if self.rows == 1:
            return a[0] if b is None else a[0] * b[0]
        return np.einsum("ij->j", a) if b is None else np.einsum("ij,ij->j", a, b)

    def normalize(self, xb: np.ndarray, yb: np.ndarray) -> Any:
        """yb = the base layer's output for the rows xb; returns r, a column (a float for one row)."""
        if self.centred:
            np.subtract(xb, self.mean(xb), out=yb)
            source = yb
        else:
            source = xb
        q = self.mean(source, source)
        if self.rows == 1:
            r = 1 / math.sqrt(q + self.epsilon)
        else:
            q += self.epsilon
            r = np.divide(1, np.sqrt(q, out=q), out=q)
        np.multiply(source, r, out=yb)
        return r

    def input_gradient(self, gb: np.ndarray, yb: np.ndarray, r: np.ndarray, dxb: np.ndarray) -> None:
        """dxb = r (g - gbar - y mean(g y)), the base layer's vjp, from y (left unchanged)."""
        np.multiply(yb, self.mean(gb, yb), out=dxb)
        np.subtract(gb, dxb, out=dxb)
        if self.centred:
            dxb -= self.mean(gb)
        dxb *= r

    def scaled(self, gb: np.ndarray, into: np.ndarray) -> np.ndarray:
        """The upstream gradient the base layer sees: gain * g for the affine layer."""
        if self.gain is None:
            return gb
        return np.multiply(gb, self.gain, out=into)


def _forward(rows: _Rows) -> Callable[[], np.ndarray]:
    out = rows.full()
    result = rows.shaped(out)

    def call() -> np.ndarray:
        for block in rows.blocks:
            yb = out[block]
            rows.normalize(rows.x[block], yb)
            if rows.gain is not None:
                yb *= rows.gain
                yb += rows.bias
        return result

    return call


def _backward(rows: _Rows, dy: np.ndarray, with_forward: bool) -> Callable[[], tuple[np.ndarray, ...]]:
    """The vjp (dx, and dgain, dbias for the affine layer), after the forward when asked."""
    g = dy.reshape(rows.x.shape)
    dx, y_scratch, g_scratch = rows.full(), rows.scratch(), rows.scratch()
    out = rows.full() if with_forward else None
    affine = rows.gain is not None
    sums = np.empty((2, rows.n), np.float64)  # dgain, dbias, accumulated in float64 block by block

    def call() -> tuple[np.ndarray, ...]:
        sums.fill(0)
        for block in rows.blocks:
            gb = g[block]
            # y itself is the forward's output, but for the affine layer's
            yb = out[block] if out is not None and not affine else y_scratch[: gb.shape[0]]
            r = rows.normalize(rows.x[block], yb)
            if out is not None and affine:
                np.multiply(yb, rows.gain, out=out[block])
                out[block] += rows.bias
            if affine:
                sums[0] += rows.column_sums(gb, yb)
                sums[1] += rows.column_sums(gb)
            rows.input_gradient(rows.scaled(gb, g_scratch[: gb.shape[0]]), yb, r, dx[block])
        found = (rows.shaped(dx), *sums.astype(rows.dtype)) if affine else (rows.shaped(dx),)
        return (rows.shaped(out), *found) if out is not None else found

    return call


def _hvp(rows: _Rows, dy: np.ndarray, v: np.ndarray) -> Callable[[], np.ndarray]:
    g_all, v_all = dy.reshape(rows.x.shape), v.reshape(rows.x.shape)
    out, y_scratch, g_scratch, t_scratch = rows.full(), rows.scratch(), rows.scratch(), rows.scratch()
    result = rows.shaped(out)

    def call() -> np.ndarray:
        for block in rows.blocks:
            vb, hb = v_all[block], out[block]
            size = vb.shape[0]
            yb, tb = y_scratch[:size], t_scratch[:size]
            r = rows.normalize(rows.x[block], yb)
            gb = rows.scaled(g_all[block], g_scratch[:size])
            a, m, gv = rows.mean(yb, vb), rows.mean(gb, yb), rows.mean(gb, vb)
            np.multiply(gb, a, out=hb)
            hb += np.multiply(vb, m, out=tb)
            if rows.centred:
                gbar, vbar = rows.mean(gb), rows.mean(vb)
                gv -= gbar * vbar
                hb -= a * gbar + m * vbar
            gv -= 3 * a * m
            yb *= gv
            hb += yb
            r *= r
            r *= -1
            hb *= r
        return result

    return call


def _jacobian(rows: _Rows) -> Callable[[], np.ndarray]:
    """The closed form at one vector x of n entries: (I - 1 1^T/n - y y^T/n) r, times diag(gain)."""
    if rows.rows != 1:
        raise ValueError("the closed-form Jacobian peer takes one vector")
    n = rows.n
    y = rows.full()
    jacobian = np.empty((n, n), rows.dtype)
    diagonal = jacobian.reshape(-1)[:: n + 1]

    def call() -> np.ndarray:
        r = rows.normalize(rows.x, y)
        np.multiply.outer(y[0], y[0], out=jacobian)
        np.multiply(jacobian, -1 / n, out=jacobian)
        if rows.centred:
            np.subtract(jacobian, 1 / n, out=jacobian)
        np.add(diagonal, 1, out=diagonal)
        np.multiply(jacobian, r, out=jacobian)
        if rows.gain is not None:
            np.multiply(jacobian, rows.gain[:, None], out=jacobian)
        return jacobian

    return call


def build(
    op: str, layer: str, x: np.ndarray, epsilon: float, dy: np.ndarray, v: np.ndarray, params: tuple[Any, ...]
) -> Callable[[], Any]:
    """The hand peer of ``op`` (forward, vjp, forward+vjp, hvp or jacobian) for ``layer``, its
    buffers allocated now; each call returns arrays of x's shape (rows flattened for the vjp's
    parameter sums), reused from call to call."""
    rows = _Rows(layer, x, epsilon, *params)
    kernels: dict[str, Callable[[], Callable[[], Any]]] = {
        "forward": lambda: _forward(rows),
        "vjp": lambda: _backward(rows, dy, with_forward=False),
        "forward+vjp": lambda: _backward(rows, dy, with_forward=True),
        "hvp": lambda: _hvp(rows, dy, v),
        "jacobian": lambda: _jacobian(rows),
    }
    return kernels[op]()
