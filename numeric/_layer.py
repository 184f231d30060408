"""NumPy functions of a layer, each lambdified from that layer's derivations."""

from __future__ import annotations

from functools import cache, cached_property
from typing import Any

import numpy as np
import sympy as sp

from derivations import LAYERS, Direction, eigen, formula, jacobian, response, scaling, spectral
from derivations._symbols import LATEX_NAMES, epsilon, gamma_max, i, j, k, n, t, x
from numeric import _validate
from numeric._lambdify import compile

# Scalar stand-ins for indexed entries: lambdify takes symbols, not x[i].
_xi, _xj, _xk = sp.symbols("x_i x_j x_k", real=True)
_delta = sp.Symbol("delta_ik")
_ENTRIES = {x[i]: _xi, x[j]: _xj, x[k]: _xk, sp.KroneckerDelta(i, k): _delta}


# The range of the scale m = max(|t|, root of epsilon) where the plain
# lambdified expressions are used as they are.
_MODERATE = (1e-100, 1e100)

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
        # Per-feature parameters (gain, bias) enter at index i as plain symbols.
        self._param_names = [name for name, _ in self.layer.parameters]
        self._param_symbols = [sp.Symbol(f"{base.label}_i", real=True) for _, base in self.layer.parameters]
        self._entries = {
            **_ENTRIES,
            **{base[i]: symbol for (_, base), symbol in zip(self.layer.parameters, self._param_symbols, strict=True)},
        }

    def _compile(self, expr: sp.Expr, *args: sp.Symbol) -> Any:
        return compile(expr.subs(self._entries), args)

    def _parameters(self, array: np.ndarray, given: tuple[Any, ...], named: dict[str, Any]) -> list[np.ndarray]:
        """Gain, bias, ... by position or name, each real, finite and broadcast to x's shape."""
        if len(given) > len(self._param_names):
            raise ValueError(f"{self.layer.key} takes parameters {self._param_names}, got {len(given)} positional")
        values = dict(zip(self._param_names, given, strict=False))
        for name, value in named.items():
            if name not in self._param_names or name in values:
                raise ValueError(f"{name} is not a parameter of {self.layer.key} (parameters: {self._param_names})")
            values[name] = value
        out = []
        for name in self._param_names:
            if name not in values:
                raise ValueError(f"{name} is required by {self.layer.key}")
            out.append(_validate.parameter(values[name], name, array.shape))
        return out

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
        return self._compile(self.layer.output, _xi, *self._stat_symbols, epsilon, *self._param_symbols)

    @cached_property
    def _entry(self) -> Any:
        return self._compile(
            jacobian.entry(self.layer), _xi, _xk, _delta, *self._stat_symbols, epsilon, n, *self._param_symbols
        )

    @cached_property
    def _degenerate_entry(self) -> Any:
        return self._compile(jacobian.at_degenerate(self.layer), _delta, *self._stat_symbols, epsilon, n)

    @cached_property
    def _eigen(self) -> list[tuple[Any, sp.Expr]]:
        if jacobian.is_symmetric(self.layer) and self.layer.base is None:
            eigen.spectral_form(self.layer)  # what `jacobian` assembles from, proved before use
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
        top = formula("spectral_bound", self.layer.key).expr.rhs
        return compile(top, (epsilon, gamma_max))

    def bound(self, epsilon: Any, gain: Any = None) -> Any:
        """The derived bound on the Jacobian's spectral norm over all inputs (and gains)."""
        e = _validate.epsilon(epsilon)
        if (gain is None) != (self.layer.gain is None):
            raise ValueError(f"gain must be given exactly when {self.layer.key} has one")
        largest = 1.0 if gain is None else np.max(np.abs(_validate.parameter(gain, "gain", np.shape(gain))), axis=-1)
        value = np.broadcast_to(self._bound(e, largest), np.broadcast_shapes(e.shape, np.shape(largest)))
        return _validate.output(value, _validate.result_dtype(epsilon))

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
        return np.broadcast_to(self._direction(direction)(array, *stats), array.shape).astype(np.float64)

    def asymptotes(self) -> tuple[float, float]:
        """Limits of the response as t -> +oo and t -> -oo."""
        upper, lower = response.asymptote(self.layer, self.layer.patterns[0])
        return float(upper), float(lower)

    def latex(self, name: str) -> str:
        """LaTeX of the right-hand side of the derived formula ``name``."""
        return sp.latex(formula(name, self.layer.key).expr.rhs, symbol_names=LATEX_NAMES)

    @cached_property
    def _degrees(self) -> tuple[int, dict[str, int]]:
        return scaling.epsilon_degree(self.layer), scaling.degrees(self.layer)

    def epsilon_root(self, e: Any) -> Any:
        """epsilon ** (1 / its derived degree): the length scale epsilon sets,
        sqrt(epsilon) or epsilon itself (sqrt is correctly rounded, a power is not)."""
        degree = self._degrees[0]
        return np.sqrt(e) if degree == 2 else e if degree == 1 else np.power(e, 1.0 / degree)

    def _rescaled(self, amplitude: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scale m = max(|amplitude|, root of epsilon), amplitude / m and epsilon / m**degree.

        Both scaled inputs are at most 1 and one of them is 1, so no square
        or cube formed from them can overflow or underflow (`derivations.scaling`).
        """
        root = self.epsilon_root(e)
        m = np.maximum(amplitude, root)
        return m, root / m, (root / m) ** self._degrees[0]

    @staticmethod
    def _validated(
        values: Any, eps: Any, keep_float: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.dtype, tuple[int, ...]]:
        """x, epsilon, the result dtype and the batch shape they broadcast to."""
        array = _validate.vector(values, keep_float=keep_float)
        e = _validate.epsilon(eps)
        try:
            batch = np.broadcast_shapes(e.shape, array.shape[:-1])
        except ValueError:
            raise ValueError(
                f"epsilon of shape {e.shape} does not broadcast with the batch shape {array.shape[:-1]} of x"
            ) from None
        return array, e, _validate.result_dtype(values, eps), batch

    def _prepare(self, values: Any, eps: Any) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.dtype, np.ndarray]:
        """Validated x and epsilon, rescaled by m (returned last) along the last axis."""
        array, e, dtype, _ = self._validated(values, eps)
        m, _, e_scaled = self._rescaled(np.max(np.abs(array), axis=-1, keepdims=True), e[..., None])
        scaled = array / m
        return scaled, e_scaled, self._statistics(scaled), dtype, m

    def _scalar(self, function: Any, degree: int, t: Any, epsilon: Any) -> Any:
        """An elementwise function of (t, epsilon): plain where the scale is moderate, rescaled elsewhere."""
        amplitude, e = _validate.amplitude(t), _validate.epsilon(epsilon)

        def chunk(tc: np.ndarray, ec: np.ndarray) -> np.ndarray:
            with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
                out = np.asarray(function(tc, ec), dtype=np.float64)
            m, _, _ = self._rescaled(np.abs(tc), ec)
            # Within this box every power of m up to the third formed by the
            # plain expression is a normal float64; outside it, rescale.
            far = (m < _MODERATE[0]) | (m > _MODERATE[1])
            if far.any():
                out = np.array(np.broadcast_to(out, far.shape))
                tf, ef = np.broadcast_to(tc, far.shape)[far], np.broadcast_to(ec, far.shape)[far]
                scale, _, e_scaled = self._rescaled(np.abs(tf), ef)
                out[far] = function(tf / scale, e_scaled) * scale**degree
            return out

        return _validate.output(_blockwise(chunk, amplitude, e), _validate.result_dtype(t, epsilon))

    def response(self, t: Any, epsilon: Any) -> Any:
        """The response along the layer's input pattern; t and epsilon broadcast."""
        return self._scalar(self._response, self._degrees[1]["response"], t, epsilon)

    def slope(self, t: Any, epsilon: Any) -> Any:
        """d response / dt; t and epsilon broadcast."""
        return self._scalar(self._slope, self._degrees[1]["slope"], t, epsilon)

    def forward(self, x: Any, epsilon: Any, *parameters: Any, **named: Any) -> Any:
        """The layer applied along the last axis of x, shape (..., n).

        Rows are processed in cache-sized blocks, each converted to float64,
        rescaled and rounded back on its own: a float32 batch never exists
        whole in float64.
        """
        array, e, dtype, batch = self._validated(x, epsilon, keep_float=True)
        size = array.shape[-1]
        params = [
            np.broadcast_to(p, (*batch, size)).reshape(-1, size)
            for p in self._parameters(np.broadcast_to(array, (*batch, size)), parameters, named)
        ]
        rows = np.broadcast_to(array, (*batch, size)).reshape(-1, size)
        eps_rows = np.broadcast_to(e, batch).reshape(-1, 1)
        out = np.empty(rows.shape, dtype=dtype)
        degree = self._degrees[1]["output"]
        step = max(1, _BLOCK // size)
        for start in range(0, rows.shape[0], step):
            block = rows[start : start + step].astype(np.float64)
            m, _, e_scaled = self._rescaled(
                np.max(np.abs(block), axis=-1, keepdims=True), eps_rows[start : start + step]
            )
            scaled = block / m
            value = self._output(
                scaled, *self._statistics(scaled), e_scaled, *(p[start : start + step] for p in params)
            )
            out[start : start + step] = value * m**degree if degree else value
        return _validate.output(out.reshape(*batch, size), dtype)

    def jacobian(self, x: Any, epsilon: Any, *parameters: Any, **named: Any) -> Any:
        """d forward(x)_i / d x_k, shape (..., n, n).

        A symmetric Jacobian is assembled from the derived eigenstructure,
        J = sum_d lambda_d Pi_d (proved in `derivations.eigen.spectral_form`):
        each term is accurate on its own, where the entry formula subtracts
        terms of size 1/s to leave eps/s**3 (n = 2, q >> eps).  A gained layer
        is diag(gain) times its base layer's Jacobian.
        """
        if self.layer.base is not None and self.layer.gain is not None:
            array = _validate.vector(x)
            gain, *_ = self._parameters(array, parameters, named)
            return NumericLayer(self.layer.base.key).jacobian(x, epsilon) * gain[..., :, None].astype(
                _validate.result_dtype(x, epsilon)
            )
        if not jacobian.is_symmetric(self.layer):
            return self.jacobian_from_entry(x, epsilon, *parameters, **named)
        array, e, stats, dtype, m = self._prepare(x, epsilon)
        self._parameters(array, parameters, named)
        size = array.shape[-1]
        batch = np.broadcast_shapes(array.shape[:-1], e.shape[:-1])
        total = np.zeros((*batch, size, size))
        covered = np.zeros((*batch, size, size))
        vanished = np.zeros((*batch, 1, 1), dtype=bool)
        leftover = np.zeros((*batch, 1, 1))
        for pair, (value, multiplicity) in zip(self.eigenpairs, self._eigen, strict=True):
            lam = np.broadcast_to(value(*stats, e, size), (*batch, 1))[..., None]
            if pair.direction.complement:
                if int(multiplicity.subs(n, size)) > 0:
                    leftover = np.where(vanished, leftover, lam)
                continue
            v = np.broadcast_to(self._direction(pair.direction)(array, *stats), (*batch, size))
            # Normalized by its largest entry first, so v.v cannot underflow.
            largest = np.max(np.abs(v), axis=-1, keepdims=True)
            zero = largest[..., None] == 0
            u = v / np.where(largest == 0, 1.0, largest)
            length = np.sum(u * u, axis=-1)[..., None, None]
            projector = u[..., :, None] * u[..., None, :] / np.where(zero, 1.0, length)
            total += lam * projector
            covered += projector
            # A direction that vanishes (a constant input) has the complement's eigenvalue there.
            leftover = np.where(zero, lam, leftover)
            vanished |= zero
        total += leftover * (np.eye(size) - covered)
        return _validate.output(total * m[..., None] ** self._degrees[1]["jacobian"], dtype)

    def jacobian_from_entry(self, x: Any, epsilon: Any, *parameters: Any, **named: Any) -> Any:
        """The Jacobian from the derived entry J_ik directly (the route for non-symmetric layers)."""
        array, e, stats, dtype, m = self._prepare(x, epsilon)
        params = [p[..., :, None] for p in self._parameters(array, parameters, named)]
        scale = m[..., None] ** self._degrees[1]["jacobian"]
        size = array.shape[-1]
        stacked = [s[..., None] for s in stats]
        shape = (*np.broadcast_shapes(array.shape[:-1], e.shape[:-1]), size, size)
        rows, columns, delta = array[..., :, None], array[..., None, :], np.eye(size)
        if not self.layer.approach:
            entries = self._entry(rows, columns, delta, *stacked, e[..., None], size, *params)
            return _validate.output(np.broadcast_to(entries * scale, shape), dtype)
        # The general entry divides by the spread; where it is exactly zero the
        # derived limit is the Jacobian, and the 0/0 there is discarded.
        degenerate = stacked[self._stat_symbols.index(self.layer.spread)] == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            entries = self._entry(rows, columns, delta, *stacked, e[..., None], size, *params)
        limit = self._degenerate_entry(delta, *stacked, e[..., None], size)
        return _validate.output(np.broadcast_to(np.where(degenerate, limit, entries) * scale, shape), dtype)

    @cache  # noqa: B019 - a handful of directions per layer, layers live forever
    def _direction(self, direction: Direction) -> Any:
        return self._compile(direction.entry, _xk, *self._stat_symbols)

    def eigen_by_direction(self, x: Any, epsilon: Any) -> dict[str, np.ndarray]:
        """Each derived eigenvalue by the name of its direction, shape (...)."""
        array, e, stats, _, m = self._prepare(x, epsilon)
        batch = np.broadcast_shapes(array.shape[:-1], e.shape[:-1])
        scale = m ** self._degrees[1]["eigenvalues"]
        return {
            pair.direction.name: np.broadcast_to(value(*stats, e, array.shape[-1]) * scale, (*batch, 1))[..., 0]
            for pair, (value, _) in zip(self.eigenpairs, self._eigen, strict=True)
        }

    def eigenvalues(self, x: Any, epsilon: Any) -> Any:
        """The n eigenvalues of the Jacobian, ascending, from the derived eigenstructure."""
        array, e, stats, dtype, m = self._prepare(x, epsilon)
        size = array.shape[-1]
        batch = (*np.broadcast_shapes(array.shape[:-1], e.shape[:-1]), 1)
        scale = m ** self._degrees[1]["eigenvalues"]
        columns = []
        for value, multiplicity in self._eigen:
            count = int(multiplicity.subs(n, size))
            columns.append(np.broadcast_to(value(*stats, e, size) * scale, batch).repeat(count, axis=-1))
        return _validate.output(np.sort(np.concatenate(columns, axis=-1), axis=-1), dtype)

    def spectral_norm(self, x: Any, epsilon: Any) -> Any:
        """The spectral norm of the Jacobian, shape (...)."""
        array, e, stats, dtype, m = self._prepare(x, epsilon)
        batch = (*np.broadcast_shapes(array.shape[:-1], e.shape[:-1]), 1)
        norm = self._norm(array.shape[-1])(*stats, e) * m ** self._degrees[1]["spectral_norm"]
        return _validate.output(np.broadcast_to(norm, batch)[..., 0], dtype)
