r"""The numeric side of `derivations.derive.elementwise`: a layer applied entry by entry, no epsilon.

Dynamic Tanh computes no statistic and takes no epsilon: its functions take
the layer's scalar parameter (alpha) where the others take epsilon, and the
gain and bias default to 1 and 0::

    numeric.dyt.forward(x, alpha, gain=None, bias=None)
    numeric.dyt.vjp(x, alpha, dy, gain=None, bias=None)  # (dx, dgain, dbias)

Every function is a registry row's derived value, lambdified (nothing here
is a formula): the output, the diagonal J_kk of the Jacobian (proved
diagonal), the response and its slope on the pattern, the eigenvalues
J_kk, the norm max_k |J_kk| and its bound, the backward products.  Nothing
couples two entries, so no row is rescaled: tanh is bounded, and
sech(u)**2 is evaluated as 1/cosh(u)**2, never 1 - tanh(u)**2, which loses
every digit where |u| is large.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from derivations import formula, quantities
from derivations.derive import scaling
from derivations.derive.elementwise import Elementwise, ElementwiseAffine, Largest, diagonal
from derivations.symbols import beta, gamma, gamma_max, t, x
from numeric import _layer, _validate
from numeric.kernels import rescale as _rescale
from numeric.kernels.backward import ARGUMENTS
from numeric.kernels.lambdify import compile

# Symbols standing for one entry of each vector, and for the parameter at the pattern's coordinate.
_ENTRY = {x: "x", **ARGUMENTS, gamma: "gain", beta: "bias"}
_DEFAULTS = {"gain": 1.0, "bias": 0.0}


def _symbol(name: str) -> sp.Symbol:
    return sp.Symbol(f"{name}_entry", real=True)


def _entries(expr: sp.Expr) -> sp.Expr:
    """Every indexed entry (x_k, g_k, gamma_2, ...) as the plain symbol of its vector."""
    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base in _ENTRY, lambda e: _symbol(_ENTRY[e.base]))


def _scale(alpha: Any) -> np.ndarray:
    """The power of two m with |alpha m| in [1/2, 1) (1 where alpha is 0)."""
    _, exponent = np.frexp(np.asarray(alpha, dtype=np.float64))
    return np.ldexp(1.0, np.clip(-exponent, -1022, 1023))


class NumericElementwise:
    """The functions of an elementwise layer, each compiled from its registry row on first use."""

    def __init__(self, definition: Elementwise) -> None:
        self.definition = definition
        self.key = definition.key
        (self.scalar_name, self.scalar), *_ = definition.scalars
        self.parameter_names = tuple(name for name, _ in definition.parameters)

    @cached_property
    def _rows(self) -> dict[str, tuple[str, Any]]:
        """numeric name -> (full name, registry row), found on first use: `import numeric` derives nothing."""
        return {
            numeric: (quantity.name(item), quantity)
            for quantity, item in quantities.rows(self.definition)
            if (numeric := quantity.numeric_name(item)) and quantity.evaluate is not None
        }

    def __repr__(self) -> str:
        return f"<numeric.{self.key}>"

    def names(self) -> tuple[str, ...]:
        """The public function names, in registry order."""
        return (*self._rows, "eigenvalues")

    def epsilon_root(self, alpha: ArrayLike) -> np.ndarray:
        """The length scale the scalar in epsilon's place sets: 1/|alpha| (inf at alpha = 0)."""
        with np.errstate(divide="ignore"):
            return 1 / np.abs(self._parameter(alpha))

    def function(self, numeric: str) -> Callable[..., Any] | None:
        """The function a registry row names ``numeric``, or None where the layer has none."""
        return getattr(self, numeric) if numeric in self._rows else None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._rows:
            raise AttributeError(f"numeric.{self.key} has no function {name!r}")
        full, quantity = self._rows[name]
        make = {
            "applied": self._on_x,
            "entrywise": self._jacobian,
            "of_statistics": self._on_x,
            "of_t": self._of_t,
            "of_epsilon": self._of_parameter,
            "backward": self._backward,
        }[quantity.evaluate or ""]
        function = make(full, quantity)
        function.__name__ = function.__qualname__ = name
        function.__doc__ = f"{quantity.meaning} ({self.key}.{full}), derived and lambdified."
        if quantity.formula is not None:  # LaTeX of the derived formula's right-hand side, for labels
            function.latex = formula(full, self.key).value_latex()  # type: ignore[attr-defined]
        setattr(self, name, function)
        return function

    # --- compiling -------------------------------------------------------------

    def _compile(self, expr: sp.Expr, *names: str) -> Callable[..., Any]:
        """``expr`` as a NumPy function of t or the entries named, then the scalar parameter.

        Evaluated by the derived homogeneity f(x, alpha) = m**p f(x / m, alpha m)
        (`derivations.derive.scaling`) at the power of two m that brings |alpha m| into
        [1/2, 1): x / m and alpha m are exact, and no intermediate (alpha**2 in the
        Hessian product, say) overflows or underflows where the result does not.
        """
        symbols = [t if name == "t" else _symbol(name) for name in names]
        function = compile(_entries(expr), [*symbols, self.scalar])
        degree = scaling.degree_of(self.definition, expr, "numeric")
        amplitude = bool(names) and names[0] in ("x", "t")

        def rescaled(*args: Any) -> Any:
            *values, a = args
            m = _scale(a)
            if amplitude:
                values[0] = values[0] / m
            with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                out = function(*values, a * m)
            return _rescale.times_power(out, m, degree)

        return rescaled

    def _value(self, full: str) -> sp.Expr:
        return quantities.value(self.definition, full)

    # --- arguments -------------------------------------------------------------

    def _parameter(self, value: Any) -> np.ndarray:
        array = _validate._real(value, self.scalar_name)
        _validate._finite(array, self.scalar_name)
        return array.astype(np.float64, copy=False)

    def _inputs(
        self,
        x_value: Any,
        alpha: Any,
        given: tuple[Any, ...],
        named: dict[str, Any],
        vectors: tuple[str, ...] = (),
        function: str = "",
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], dict[str, np.ndarray], np.dtype]:
        """x, alpha as a column (..., 1), the vectors and the parameters, validated and broadcast;
        ``function`` names the call that takes the ``vectors``."""
        array = _validate.vector(x_value)
        a = self._parameter(alpha)
        try:
            batch = np.broadcast_shapes(a.shape, array.shape[:-1])
        except ValueError:
            raise ValueError(
                f"{self.scalar_name} of shape {a.shape} does not broadcast with the batch shape {array.shape[:-1]} of x"
            ) from None
        if len(given) < len(vectors):
            takes = ", ".join(("x", self.scalar_name, *vectors))
            raise TypeError(f"{function}() takes ({takes}); got {2 + len(given)} arguments")
        values = [_validate.vector_like(value, name, array.shape) for value, name in zip(given, vectors, strict=False)]
        for value in values:
            batch = np.broadcast_shapes(batch, value.shape[:-1])
        shape = (*batch, array.shape[-1])
        params = self._parameters(given[len(vectors) :], named, shape)
        dtype = _validate.result_dtype(x_value, alpha, *given[: len(vectors)])
        return np.broadcast_to(array, shape), np.asarray(a)[..., None], values, params, dtype

    def _parameters(self, given: tuple[Any, ...], named: dict[str, Any], shape: tuple[int, ...]) -> dict[str, Any]:
        names = self.parameter_names
        values = _validate.bound(self.key, names, given, named)
        return {
            name: np.full(shape[-1], _DEFAULTS[name])
            if values.get(name) is None
            else _validate.parameter(values[name], name, shape)
            for name in names
        }

    # --- the registry's rows ------------------------------------------------------

    def _on_x(self, full: str, quantity: Any) -> Callable[..., Any]:
        """A function of the entries of x (the output, the eigenvalues J_kk, the norm max_k |J_kk|)."""
        value = self.definition.output if quantity.evaluate == "applied" else self._value(full)
        largest = value.atoms(Largest)
        if largest:
            (inner,) = largest
            outside = value.xreplace({inner: 1})
            entry, scale = self._compile(inner.args[0], "x", *self.parameter_names), self._compile(outside)
        else:
            entry, scale = self._compile(value, "x", *self.parameter_names), None

        def function(x: Any, alpha: Any, *parameters: Any, **named: Any) -> Any:
            array, a, _, params, dtype = self._inputs(x, alpha, parameters, named)
            with np.errstate(over="ignore"):
                out = np.broadcast_to(entry(array, *params.values(), a), array.shape)
                if scale is not None:
                    out = np.broadcast_to(scale(a[..., 0]), array.shape[:-1]) * np.max(out, axis=-1)
            return _validate.output(out, dtype)

        return function

    def _jacobian(self, full: str, quantity: Any) -> Callable[..., Any]:
        entry = self._compile(diagonal(self.definition), "x", *self.parameter_names)

        def jacobian(x: Any, alpha: Any, *parameters: Any, **named: Any) -> Any:
            """d forward(x)_i / d x_k, shape (..., n, n): diagonal, J_kk derived."""
            array, a, _, params, dtype = self._inputs(x, alpha, parameters, named)
            with np.errstate(over="ignore"):
                values = np.broadcast_to(entry(array, *params.values(), a), array.shape)
            out = np.zeros((*array.shape, array.shape[-1]))
            diagonal_entries = np.arange(array.shape[-1])
            out[..., diagonal_entries, diagonal_entries] = values
            return _validate.output(out, dtype)

        return jacobian

    def eigenvalues(self, x: ArrayLike, alpha: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        """The n eigenvalues of the diagonal Jacobian, ascending: the derived J_kk."""
        array, a, _, params, dtype = self._inputs(x, alpha, parameters, named)
        entry = self._compile(diagonal(self.definition), "x", *self.parameter_names)
        with np.errstate(over="ignore"):
            values = np.broadcast_to(entry(array, *params.values(), a), array.shape)
        return _validate.output(np.sort(values, axis=-1), dtype)

    def _pattern_parameters(self, named: dict[str, Any], needed: tuple[str, ...]) -> list[np.ndarray]:
        """The gain and bias at the pattern's coordinate: real numbers, 1 and 0 where not given."""
        unknown = [name for name in named if name not in self.parameter_names]
        if unknown:
            raise ValueError(
                f"{unknown[0]} is not a parameter of {self.key} (parameters: {list(self.parameter_names)})"
            )
        out = []
        for name in needed:
            value = named.get(name)
            array = np.asarray(_DEFAULTS[name] if value is None else self._checked(value, name), dtype=np.float64)
            out.append(array)
        return out

    @staticmethod
    def _checked(value: Any, name: str) -> np.ndarray:
        array = _validate._real(value, name)
        _validate._finite(array, name)
        return array

    def _of_t(self, full: str, quantity: Any) -> Callable[..., Any]:
        value = self._value(full)
        needed = tuple(name for name in self.parameter_names if value.has(dict(self.definition.parameters)[name]))
        compiled = self._compile(value, "t", *needed)

        def function(t: Any, alpha: Any, **named: Any) -> Any:
            amplitude = _validate.amplitude(t)
            a = self._parameter(alpha)
            params = self._pattern_parameters(named, needed)
            with np.errstate(over="ignore"):
                out = compiled(amplitude, *params, a)
            shape = np.broadcast_shapes(amplitude.shape, a.shape, *(p.shape for p in params))
            return _validate.output(np.broadcast_to(out, shape), _validate.result_dtype(t, alpha))

        return function

    def _of_parameter(self, full: str, quantity: Any) -> Callable[..., Any]:
        value = self._value(full)
        if value.has(gamma_max):
            return self._bound(value)
        needed = tuple(name for name in self.parameter_names if value.has(dict(self.definition.parameters)[name]))
        compiled = self._compile(value, *needed)

        def function(alpha: Any, **named: Any) -> Any:
            a = self._parameter(alpha)
            params = self._pattern_parameters(named, needed)
            shape = np.broadcast_shapes(a.shape, *(p.shape for p in params))
            return _validate.output(np.broadcast_to(compiled(*params, a), shape), _validate.result_dtype(alpha))

        return function

    def _bound(self, value: sp.Expr) -> Callable[..., Any]:
        # The derived bound is gamma_max times a function of alpha: gamma_max is max|gain|.
        compiled = self._compile(value.xreplace({gamma_max: 1}))

        def bound(alpha: Any, gain: Any = None) -> Any:
            a = self._parameter(alpha)
            largest = (
                np.float64(1.0) if gain is None else np.max(np.abs(_validate.parameter(gain, "gain", ())), axis=-1)
            )
            try:
                shape = np.broadcast_shapes(a.shape, np.shape(largest))
            except ValueError:
                raise ValueError(
                    f"{self.scalar_name} of shape {a.shape} does not broadcast with the batch shape "
                    f"{np.shape(largest)} of gain"
                ) from None
            out = np.broadcast_to(compiled(a) * largest, shape)
            return _validate.output(out, _validate.result_dtype(alpha, *([] if gain is None else [gain])))

        return bound

    def _backward(self, full: str, quantity: Any) -> Callable[..., Any]:
        """J^T g, J v or the Hessian product at each entry; with J^T g, the parameters'
        gradients that registry rows say the same function returns, summed over the batch."""
        value = self._value(full)
        vectors = tuple(name for base, name in ARGUMENTS.items() if value.has(base))
        extra = [
            other
            for other, (row, item) in quantities.names(self.definition).items()
            if row.returned_by == quantity.numeric and row.applies(self.definition, item)
        ]
        compiled = [
            self._compile(expr, "x", *vectors, *self.parameter_names)
            for expr in [value, *(self._value(name) for name in extra)]
        ]

        def function(x: Any, alpha: Any, *args: Any, **named: Any) -> Any:
            array, a, given, params, dtype = self._inputs(x, alpha, args, named, vectors, quantity.numeric)
            with np.errstate(over="ignore"):
                out = [np.broadcast_to(f(array, *given, *params.values(), a), array.shape) for f in compiled]
            first, *summed = out
            totals = [_validate.output(np.sum(s.reshape(-1, s.shape[-1]), axis=0), dtype) for s in summed]
            return (_validate.output(first, dtype), *totals) if totals else _validate.output(first, dtype)

        return function


def _facade(definition: Elementwise) -> NumericElementwise:
    return NumericElementwise(definition)


_layer.register(Elementwise, _facade)
_layer.register(ElementwiseAffine, _facade)
