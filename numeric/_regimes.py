"""The numeric side of `derivations.derive.regimes.Regimes`: the generic functions, and the kink reported.

Every function is the generic one, lambdified from the derived ``Piecewise``
(NumPy's ``select``).  A derivative given on the open regimes only is NaN on
the boundary, where it does not exist; here that becomes a `ValueError`
naming the argument that put a row there.  The forward map evaluates every
regime's branch before selecting one; the division by a zero norm in the
branch not taken is silenced.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from derivations import quantities
from derivations.derive import regimes
from derivations.derive.regimes import GAIN, Regimes, Scaled, say
from numeric import _layer, _validate
from numeric.kernels.lambdify import compile


class NumericRegimes(_layer.NumericLayer):
    """A layer with regimes: the generic functions, with the boundary reported by name."""

    definition: Regimes

    def _checked(self, value: Any, argument: str) -> Any:
        if np.isnan(np.asarray(value, dtype=np.float64)).any():
            raise ValueError(
                f"{argument} has a row on {say(self.definition.boundary)} (as rounded), the kink, "
                "where this derivative does not exist (the one-sided values differ)"
            )
        return value

    @cache  # noqa: B019 - facades are interned by `facade`
    def function(self, numeric: str) -> Callable[..., Any] | None:
        found = super().function(numeric)
        return None if found is None else _Checked(self, found)

    def forward(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return super().forward(x, epsilon, *parameters, **named)

    def jacobian(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._checked(super().jacobian(x, epsilon, *parameters, **named), "x")

    def eigenvalues(self, x: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._checked(super().eigenvalues(x, epsilon), "x")

    def eigen_by_direction(self, x: ArrayLike, epsilon: ArrayLike, **named: Any) -> dict[str, np.ndarray]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            found = super().eigen_by_direction(x, epsilon, **named)
        for value in found.values():
            self._checked(value, "x")
        return found

    def products(self, names: list[str], x: ArrayLike, epsilon: ArrayLike, *args: Any, **named: Any) -> list[Any]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            found = super().products(names, x, epsilon, *args, **named)
        return [self._checked(value, "x") for value in found]


class _Checked:
    """A registry function of a layer with regimes: NaN (on the boundary) becomes a ValueError."""

    def __init__(self, layer: NumericRegimes, function: Any) -> None:
        self._layer, self._function = layer, function
        self.__name__ = self.__qualname__ = function.__name__
        self.__doc__ = function.__doc__

    def __call__(self, *args: Any, **named: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            value = self._function(*args, **named)
        # A function of t puts the pattern on the kink; any other, the input x.
        first = getattr(self._function, "_strategy", None)
        argument = "t" if first is _layer.NumericLayer._of_t else "x"
        return self._layer._checked(value, argument)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)

    def __repr__(self) -> str:
        return repr(self._function)


_layer.register(Regimes, NumericRegimes)


class NumericScaled(NumericRegimes):
    """ScaleNorm-like layers, ``gain * base``: each function is the base's times c(gain).

    c is derived (`derivations.derive.regimes.factor`: the layer's result over the
    base's, proved a function of the gain alone in every regime) and
    lambdified; the base's functions are the generic, rescaled ones.  A
    function of the gain takes it as ``gain=`` (or the last positional
    argument), one real number.
    """

    definition: Scaled

    def __init__(self, definition: Scaled) -> None:
        super().__init__(definition)
        self.base = _layer.facade(definition.base.key)

    @cache  # noqa: B019 - facades are interned by `facade`
    def _factor(self, what: str) -> Callable[..., Any]:
        """c(gain) for the registry row named ``what``."""
        layer, base = self.definition, self.definition.base
        quantity, item = quantities.names(layer)[what]
        mine, theirs = quantity.derive(layer, item), quantity.derive(base, item)
        return compile(regimes.factor(layer, mine, theirs, what), (layer.gain,))

    @cache  # noqa: B019 - facades are interned by `facade`
    def _row(self, evaluate: str) -> str:
        """The name of the registry row evaluated as ``evaluate`` (the output, the Jacobian)."""
        (name,) = [name for name, (q, _) in quantities.names(self.definition).items() if q.evaluate == evaluate]
        return name

    def _gain(self, parameters: tuple[Any, ...], named: dict[str, Any]) -> tuple[float, Any]:
        """The gain, given by position (last) or by name: one real, finite number."""
        unknown = set(named) - {GAIN}
        if unknown or len(parameters) > 1:
            raise ValueError(f"{self.key} takes one parameter, {GAIN} (one real number)")
        if parameters and named:
            raise ValueError(f"{GAIN} is given both by position and by name")
        if not parameters and GAIN not in named:
            raise ValueError(f"{GAIN} is required by {self.key}: one real number, as forward(x, epsilon, {GAIN}=g)")
        value = parameters[0] if parameters else named[GAIN]
        array = _validate._real(value, GAIN)
        _validate._finite(array, GAIN)
        if array.ndim:
            raise ValueError(f"{GAIN} must be one real number (a scalar gain), got shape {array.shape}")
        return float(array), value

    def _scaled(self, what: str, base_value: Any, gain: float, *given: Any) -> Any:
        value = np.asarray(base_value, dtype=np.float64) * float(self._factor(what)(gain))
        return _validate.output(value, _validate.result_dtype(*given))

    def forward(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        gain, given = self._gain(parameters, named)
        return self._scaled(self._row("applied"), self.base.forward(x, epsilon), gain, x, epsilon, given)

    def jacobian(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        gain, given = self._gain(parameters, named)
        return self._scaled(self._row("entrywise"), self.base.jacobian(x, epsilon), gain, x, epsilon, given)

    def jacobian_from_entry(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        gain, given = self._gain(parameters, named)
        value = self.base.jacobian_from_entry(x, epsilon)
        return self._scaled(self._row("entrywise"), value, gain, x, epsilon, given)

    def eigenvalues(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        gain, given = self._gain(parameters, named)
        factors = {float(self._factor(name)(gain)) for name in self._eigen_names()}
        if len(factors) != 1:
            raise ValueError(f"{self.key}: the eigenvalues scale unlike each other")
        values = np.sort(np.asarray(self.base.eigenvalues(x, epsilon), dtype=np.float64) * factors.pop(), axis=-1)
        return _validate.output(values, _validate.result_dtype(x, epsilon, given))

    def _eigen_names(self) -> list[str]:
        return [
            name
            for name, (quantity, item) in quantities.names(self.definition).items()
            if quantity.over == "direction" and quantity.applies(self.definition, item)
        ]

    @cache  # noqa: B019 - facades are interned by `facade`
    def function(self, numeric: str) -> Callable[..., Any] | None:
        found = quantities.by_numeric(self.definition, numeric)
        if found is None:
            return None
        name, quantity, item = found
        if not quantity.applies(self.definition, item):
            return None
        # A product with vectors goes through `products`; a value free of the gain is the generic one.
        if quantity.evaluate == "backward" or not quantities.value(self.definition, name).has(self.definition.gain):
            return super().function(numeric)
        under = self.base.function(numeric)
        return None if under is None else _GainScaled(self, name, under)

    def products(self, names: list[str], x: ArrayLike, epsilon: ArrayLike, *args: Any, **named: Any) -> list[Any]:
        (name,) = names
        takes = self.base._c.product(name).vectors
        gain, given = self._gain(args[len(takes) :], named)
        vectors = args[: len(takes)]
        (value,) = self.base.products([name], x, epsilon, *vectors)
        return [self._scaled(name, value, gain, x, epsilon, given, *vectors)]


class _GainScaled:
    """A registry function of a ``gain * base`` layer: the base's, times the derived c(gain)."""

    def __init__(self, layer: NumericScaled, name: str, under: Any) -> None:
        self._layer, self._name, self._under = layer, name, under
        self.__name__ = self.__qualname__ = under.__name__
        self.__doc__ = f"{under.__doc__} Times c({GAIN}), derived, for {layer.key}: pass {GAIN}=g."

    def __call__(self, *args: Any, **named: Any) -> Any:
        # The base function's own arguments first ((t, epsilon), (epsilon) or (x, epsilon)), then the gain.
        strategy = getattr(self._under, "_strategy", None)
        wanted = len(_layer._ARGUMENTS[strategy]) if strategy in _layer._ARGUMENTS else len(args)
        gain, given = self._layer._gain(args[wanted:], named)
        return self._layer._scaled(self._name, self._under(*args[:wanted]), gain, *args[:wanted], given)

    @property
    def latex(self) -> str:
        return self._layer.latex(self._name)

    def __repr__(self) -> str:
        return f"<function numeric.{self._layer.key}.{self.__name__}>"


_layer.register(Scaled, NumericScaled)
