"""NumPy functions of a layer, each lambdified from that layer's derivations."""

from __future__ import annotations

from functools import cache, cached_property
from typing import Any

import numpy as np
import sympy as sp

from derivations import LAYERS, Direction, eigen, formula, jacobian, response, spectral
from derivations._symbols import LATEX_NAMES, epsilon, i, j, k, n, t, x
from numeric import _validate
from numeric._lambdify import compile

# Scalar stand-ins for indexed entries: lambdify takes symbols, not x[i].
_xi, _xj, _xk = sp.symbols("x_i x_j x_k", real=True)
_delta = sp.Symbol("delta_ik")
_ENTRIES = {x[i]: _xi, x[j]: _xj, x[k]: _xk, sp.KroneckerDelta(i, k): _delta}


# Elementwise functions run over chunks of this many entries, so that the
# temporaries of each chunk stay in cache; on 10^6 points this halves the time.
_BLOCK = 1 << 15


def _blockwise(function: Any, *arrays: np.ndarray) -> np.ndarray:
    """``function(*arrays)`` with broadcasting, evaluated chunk by chunk."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    size = int(np.prod(shape))
    if size <= _BLOCK:
        return np.broadcast_to(function(*arrays), shape)
    flat = [a.reshape(()) if a.size == 1 else np.broadcast_to(a, shape).ravel() for a in arrays]
    out = np.empty(size)
    for start in range(0, size, _BLOCK):
        out[start : start + _BLOCK] = function(*(a if a.ndim == 0 else a[start : start + _BLOCK] for a in flat))
    return out.reshape(shape)


class NumericLayer:
    """The forward map, Jacobian, eigenvalues, spectral norm and response of a layer.

    Inputs are validated (a `ValueError` names the argument), computed in
    float64, and returned in float32 only when the inputs were float32.
    """

    def __init__(self, key: str) -> None:
        self.layer = LAYERS[key]
        self._stat_symbols = [stat.symbol for stat in self.layer.statistics]

    def _compile(self, expr: sp.Expr, *args: sp.Symbol) -> Any:
        return compile(expr.subs(_ENTRIES), args)

    @cached_property
    def _summands(self) -> list[Any]:
        return [
            self._compile(stat.summand, _xj, *self._stat_symbols[:m], n) for m, stat in enumerate(self.layer.statistics)
        ]

    def _statistics(self, values: np.ndarray) -> list[np.ndarray]:
        """Each statistic: the mean of its lambdified summand over the last axis, or its value."""
        stats: list[np.ndarray] = []
        size = values.shape[-1]
        for stat, summand in zip(self.layer.statistics, self._summands, strict=True):
            if stat.mean:
                terms = np.broadcast_to(summand(values, *stats, size), values.shape)
                stats.append(np.mean(terms, axis=-1, keepdims=True))
            else:
                stats.append(np.broadcast_to(summand(values, *stats, size), stats[-1].shape))
        return stats

    @cached_property
    def _output(self) -> Any:
        return self._compile(self.layer.output, _xi, *self._stat_symbols, epsilon)

    @cached_property
    def _entry(self) -> Any:
        return self._compile(jacobian.entry(self.layer), _xi, _xk, _delta, *self._stat_symbols, epsilon, n)

    @cached_property
    def _degenerate_entry(self) -> Any:
        return self._compile(jacobian.at_degenerate(self.layer), _delta, *self._stat_symbols, epsilon, n)

    @cached_property
    def _eigen(self) -> list[tuple[Any, sp.Expr]]:
        return [
            (self._compile(pair.value, *self._stat_symbols, epsilon, n), pair.multiplicity)
            for pair in eigen.eigenpairs(self.layer)
        ]

    @cache  # noqa: B019 - one small compiled function per feature count, layers live forever
    def _norm(self, size: int) -> Any:
        # The derived norm is piecewise in n; at a concrete n one branch remains.
        return self._compile(spectral.spectral_norm(self.layer).subs(n, size), *self._stat_symbols, epsilon)

    @cached_property
    def _bound(self) -> Any:
        return compile(spectral.bound(self.layer)[0], (epsilon,))

    def bound(self, epsilon: Any) -> Any:
        """The derived bound on the Jacobian's spectral norm over all inputs."""
        e = _validate.epsilon(epsilon)
        return _validate.output(np.broadcast_to(self._bound(e), e.shape), _validate.result_dtype(epsilon))

    @cached_property
    def _response(self) -> Any:
        return compile(response.response(self.layer, self.layer.patterns[0]), (t, epsilon))

    @cached_property
    def _slope(self) -> Any:
        return compile(response.slope(self.layer, self.layer.patterns[0]), (t, epsilon))

    def functions(self) -> tuple[Any, ...]:
        """The public functions, in the order a ``numeric.<key>`` module binds them."""
        return self.forward, self.jacobian, self.eigenvalues, self.spectral_norm, self.response, self.slope

    @property
    def eigenpairs(self) -> tuple[eigen.Eigen, ...]:
        return eigen.eigenpairs(self.layer)

    def statistics(self, x: np.ndarray) -> dict[sp.Symbol, float]:
        """The layer's statistics of one input vector, by name, as floats."""
        values = self._statistics(_validate.vector(x))
        return {symbol: float(np.ravel(v)[0]) for symbol, v in zip(self._stat_symbols, values, strict=True)}

    def direction(self, direction: Direction, x: np.ndarray) -> np.ndarray:
        """The vector of an explicit eigen direction at input x, by its lambdified entry."""
        array = _validate.vector(x)
        stats = self._statistics(array)
        entry = self._compile(direction.entry, _xk, *self._stat_symbols)
        return np.broadcast_to(entry(array, *stats), array.shape).astype(np.float64)

    def asymptotes(self) -> tuple[float, float]:
        """Limits of the response as t -> +oo and t -> -oo."""
        upper, lower = response.asymptote(self.layer, self.layer.patterns[0])
        return float(upper), float(lower)

    def latex(self, name: str) -> str:
        """LaTeX of the right-hand side of the derived formula ``name``."""
        return sp.latex(formula(name, self.layer.key).expr.rhs, symbol_names=LATEX_NAMES)

    def _prepare(self, values: Any, eps: Any) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.dtype]:
        array = _validate.vector(values)
        e = _validate.epsilon(eps)
        dtype = _validate.result_dtype(values, eps)
        try:
            np.broadcast_shapes(e.shape, array.shape[:-1])
        except ValueError:
            raise ValueError(
                f"epsilon of shape {e.shape} does not broadcast with the batch shape {array.shape[:-1]} of x"
            ) from None
        return array, e[..., None], self._statistics(array), dtype

    def response(self, t: Any, epsilon: Any) -> Any:
        """The response along the layer's input pattern; t and epsilon broadcast."""
        amplitude, e = _validate.amplitude(t), _validate.epsilon(epsilon)
        return _validate.output(_blockwise(self._response, amplitude, e), _validate.result_dtype(t, epsilon))

    def slope(self, t: Any, epsilon: Any) -> Any:
        """d response / dt; t and epsilon broadcast."""
        amplitude, e = _validate.amplitude(t), _validate.epsilon(epsilon)
        return _validate.output(_blockwise(self._slope, amplitude, e), _validate.result_dtype(t, epsilon))

    def forward(self, x: Any, epsilon: Any) -> Any:
        """The layer applied along the last axis of x, shape (..., n)."""
        array, e, stats, dtype = self._prepare(x, epsilon)
        return _validate.output(
            np.broadcast_to(self._output(array, *stats, e), np.broadcast_shapes(array.shape, e.shape)), dtype
        )

    def jacobian(self, x: Any, epsilon: Any) -> Any:
        """d forward(x)_i / d x_k, shape (..., n, n)."""
        array, e, stats, dtype = self._prepare(x, epsilon)
        size = array.shape[-1]
        stacked = [s[..., None] for s in stats]
        shape = (*np.broadcast_shapes(array.shape[:-1], e.shape[:-1]), size, size)
        rows, columns, delta = array[..., :, None], array[..., None, :], np.eye(size)
        if not self.layer.approach:
            entries = self._entry(rows, columns, delta, *stacked, e[..., None], size)
            return _validate.output(np.broadcast_to(entries, shape), dtype)
        # The general entry divides by the spread; where it is exactly zero the
        # derived limit is the Jacobian, and the 0/0 there is discarded.
        degenerate = stacked[self._stat_symbols.index(self.layer.spread)] == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            entries = self._entry(rows, columns, delta, *stacked, e[..., None], size)
        limit = self._degenerate_entry(delta, *stacked, e[..., None], size)
        return _validate.output(np.broadcast_to(np.where(degenerate, limit, entries), shape), dtype)

    def eigenvalues(self, x: Any, epsilon: Any) -> Any:
        """The n eigenvalues of the Jacobian, ascending, from the derived eigenstructure."""
        array, e, stats, dtype = self._prepare(x, epsilon)
        size = array.shape[-1]
        batch = (*np.broadcast_shapes(array.shape[:-1], e.shape[:-1]), 1)
        columns = []
        for value, multiplicity in self._eigen:
            count = int(multiplicity.subs(n, size))
            columns.append(np.broadcast_to(value(*stats, e, size), batch).repeat(count, axis=-1))
        return _validate.output(np.sort(np.concatenate(columns, axis=-1), axis=-1), dtype)

    def spectral_norm(self, x: Any, epsilon: Any) -> Any:
        """The spectral norm of the Jacobian, shape (...)."""
        array, e, stats, dtype = self._prepare(x, epsilon)
        batch = (*np.broadcast_shapes(array.shape[:-1], e.shape[:-1]), 1)
        return _validate.output(np.broadcast_to(self._norm(array.shape[-1])(*stats, e), batch)[..., 0], dtype)
