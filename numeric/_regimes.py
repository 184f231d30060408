"""The numeric side of `derivations.regimes.Regimes`: the generic functions, and the kink reported.

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

from derivations.regimes import Regimes, say
from numeric import _layer


class NumericRegimes(_layer.NumericLayer):
    """A layer with regimes: the generic functions, with the boundary reported by name."""

    definition: Regimes

    def _checked(self, value: Any, argument: str) -> Any:
        if np.isnan(np.asarray(value, dtype=np.float64)).any():
            raise ValueError(
                f"{argument} has a row on {say(self.definition.boundary)}, the kink of {self.key}, "
                "where this derivative does not exist (the one-sided values differ)"
            )
        return value

    @cache  # noqa: B019 - facades are interned by `facade`
    def function(self, numeric: str) -> Callable[..., Any] | None:
        found = super().function(numeric)
        return None if found is None else _Checked(self, found)

    def forward(self, x: Any, epsilon: Any, *parameters: Any, **named: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return super().forward(x, epsilon, *parameters, **named)

    def jacobian(self, x: Any, epsilon: Any, *parameters: Any, **named: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._checked(super().jacobian(x, epsilon, *parameters, **named), "x")

    def eigenvalues(self, x: Any, epsilon: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._checked(super().eigenvalues(x, epsilon), "x")

    def eigen_by_direction(self, x: Any, epsilon: Any) -> dict[str, np.ndarray]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            found = super().eigen_by_direction(x, epsilon)
        for value in found.values():
            self._checked(value, "x")
        return found

    def products(self, names: list[str], x: Any, epsilon: Any, *args: Any, **named: Any) -> list[Any]:
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
