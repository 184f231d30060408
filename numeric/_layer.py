"""`NumericLayer`: the NumPy functions of one layer, a thin facade over its compiled functions.

Every scalar quantity in the registry (`derivations.quantities`) with a
numeric name is a function here, evaluated by the strategy its row names:
``of_t`` (t, epsilon), ``of_epsilon`` (epsilon) or ``of_statistics``
(x, epsilon).  Inputs are validated (a `ValueError` names the argument),
computed in float64, and returned in float32 only when the inputs were float32.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, singledispatch
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from derivations import LAYERS, Direction, Layer, formula, quantities
from derivations.derive import response
from numeric import _validate
from numeric.kernels import assemble as _assemble
from numeric.kernels import kernel as _kernel
from numeric.kernels import rescale as _rescale
from numeric.kernels.compiled import Compiled, compiled


class NumericLayer:
    """The forward map, Jacobian, eigenvalues and every scalar quantity of a layer."""

    # Public functions a subclass adds as methods of its own.
    methods: tuple[str, ...] = ()

    def __init__(self, definition: Layer) -> None:
        self.definition = definition
        self.key = definition.key
        self._c: Compiled = compiled(definition.key)

    def __repr__(self) -> str:
        return f"<numeric.{self.key}>"

    # --- the registry's scalar quantities ---------------------------------

    @cache  # noqa: B019 - facades are interned by `facade`
    def names(self) -> tuple[str, ...]:
        """The public function names of this layer, in registry order."""
        out = []
        for quantity, item in quantities.rows(self.definition):
            numeric = quantity.numeric_name(item)
            methods = quantity.evaluate not in _STRATEGIES  # the forward map and the Jacobian
            if numeric and numeric not in out and (methods or self.function(numeric) is not None):
                out.append(numeric)
        # The spectrum, assembled from the eigenpairs, where J is symmetric.
        spectrum = ("eigenvalues",) if self._c.symmetric else ()
        return (*out, *spectrum, *self.methods)

    @cache  # noqa: B019 - a few names per layer; facades are interned by `facade`
    def function(self, numeric: str) -> Callable[..., Any] | None:
        """The function a registry row names ``numeric``, or None where the layer has none."""
        found = quantities.by_numeric(self.definition, numeric)
        if found is None:
            return None
        name, quantity, _ = found
        if quantity.evaluate == "backward":
            return _Backward(self, name, numeric, quantity.meaning)
        strategy = _STRATEGIES.get(quantity.evaluate or "")
        scalar = self._c.scalar(name) if strategy is not None else None
        if scalar is None:
            return None
        return _Function(self, name, numeric, scalar, strategy, quantity.meaning)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        function = self.function(name)
        if function is None:
            raise AttributeError(f"numeric.{self.key} has no function {name!r}")
        return function

    def _of_t(self, scalar: Any, t: Any, epsilon: Any) -> Any:
        return _rescale.elementwise(scalar.function, scalar.degree, self._c.epsilon_degree, t, epsilon)

    def _of_epsilon(self, scalar: Any, epsilon: Any) -> Any:
        return _rescale.elementwise(
            lambda e: np.broadcast_to(scalar.function(e), np.shape(e)), scalar.degree, self._c.epsilon_degree, epsilon
        )

    def _of_statistics(self, scalar: Any, x: ArrayLike, epsilon: ArrayLike, **named: Any) -> np.ndarray:
        return _kernel.of_statistics(self, scalar, x, epsilon, **named)

    # --- statistics, validation and rescaling -----------------------------

    def _statistics(self, values: np.ndarray, parameters: Any = ()) -> list[np.ndarray]:
        """Each statistic of ``values`` (`numeric.kernels.kernel.statistics`)."""
        return _kernel.statistics(self, values, parameters)

    def epsilon_root(self, e: Any) -> Any:
        """The length scale epsilon sets: sqrt(epsilon), or epsilon where it is added to a deviation."""
        return _rescale.epsilon_root(e, self._c.epsilon_degree)

    def _subsets(self, named: dict[str, Any] | None, shape: tuple[int, ...]) -> list[Any]:
        """No parameter, and the indicators of the subsets ``named`` picks (it holds nothing else)."""
        return [None] * len(self._c.parameter_names) + self._indicators(dict(named or {}), shape, strict=True)

    def _at_scale(
        self, at: Callable[..., Any], array: np.ndarray, e: np.ndarray, degree: int, parameters: list[Any]
    ) -> Any:
        """``at`` evaluated at a safe scale (`numeric.kernels.kernel.at_scale`)."""
        return _kernel.at_scale(self, at, array, e, degree, parameters)

    def weights(self, parameters: Any) -> np.ndarray | None:
        """The entries the spread is a mean over, where a subset picks them (`_rescale.normalized`):
        the product of its indicators among ``parameters`` (as `_parameters` returns them), else None."""
        picked = self._c.spread_indicators
        if not picked:
            return None
        indicators = list(parameters)[len(self._c.parameter_names) :]
        return np.prod([indicators[m] for m in picked], axis=0)

    def _indicators(self, named: dict[str, Any], shape: tuple[int, ...], strict: bool = False) -> list[np.ndarray]:
        """Each subset's indicator from ``named`` (`numeric._validate.indicators`)."""
        return _validate.indicators(self.key, self.definition.subsets, named, shape, strict)

    def _parameters(
        self, array: np.ndarray, given: tuple[Any, ...], named: dict[str, Any], defaults: dict[str, Any] | None = None
    ) -> list[np.ndarray]:
        """The layer's parameters, then its subsets' indicators (`numeric._validate.parameters`)."""
        return _validate.parameters(
            self.key, self._c.parameter_names, self.definition.subsets, array, given, named, defaults
        )

    # --- forward and Jacobian ------------------------------------------------

    def forward(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        """The layer applied along the last axis of x, shape (..., n) (`numeric.kernels.kernel.forward`)."""
        return _kernel.forward(self, x, epsilon, *parameters, **named)

    def jacobian(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        """d forward(x)_i / d x_k, shape (..., n, n) (`numeric.kernels.kernel.jacobian`)."""
        return _kernel.jacobian(self, x, epsilon, *parameters, **named)

    def jacobian_from_entry(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        """The Jacobian from the derived entry J_ik directly (the route for non-symmetric layers)."""
        return _kernel.jacobian_from_entry(self, x, epsilon, *parameters, **named)

    # --- the backward pass -------------------------------------------------------

    def products(self, names: list[str], x: ArrayLike, epsilon: ArrayLike, *args: ArrayLike, **named: Any) -> list[Any]:
        """The backward products ``names`` at x: the first of shape (..., n), each further one
        (a parameter's gradient) summed over every leading axis (`numeric.kernels.kernel.products`)."""
        return _kernel.products(self, names, x, epsilon, *args, **named)

    @property
    def through_eigen(self) -> bool:
        """Whether `jacobian_product` applies J through the derived eigenstructure."""
        return self._c.symmetric

    def jacobian_product(
        self, kind: str, scaled: np.ndarray, stats: list[np.ndarray], e: np.ndarray, w: np.ndarray, parameters: list
    ) -> np.ndarray | None:
        """J w (J symmetric: the same for ``kind`` "direct" and "transpose") through the derived
        eigenstructure, on a rescaled block; None where the layer has none (the entry formula is used)."""
        if not self._c.symmetric:
            return None
        return _assemble.apply_eigen(self._c, scaled, stats, e, w)

    # --- eigenstructure --------------------------------------------------------

    @property
    def eigenpairs(self) -> tuple[Any, ...]:
        """The compiled eigenpairs: direction, eigenvalue function, multiplicity."""
        return self._c.eigen

    def eigen_by_direction(self, x: ArrayLike, epsilon: ArrayLike, **named: Any) -> dict[str, np.ndarray]:
        """Each derived eigenvalue by the name of its direction, shape (...)."""
        return _kernel.eigen_by_direction(self, x, epsilon, **named)

    def eigenvalues(self, x: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
        """The n eigenvalues of the Jacobian, ascending, from the derived eigenstructure."""
        return _kernel.eigenvalues(self, x, epsilon)

    def statistics(self, x: ArrayLike, **named: Any) -> dict[sp.Symbol, float]:
        """The layer's statistics of one input vector, by symbol, as floats."""
        return _kernel.statistics_of_vector(self, x, **named)

    def direction(self, direction: Direction, x: ArrayLike) -> np.ndarray:
        """The vector of an explicit eigen direction at input x, by its lambdified entry."""
        return _kernel.direction(self, direction, x)

    # --- for the figures --------------------------------------------------

    def asymptotes(self) -> tuple[float, float]:
        """Limits of the response as t -> +oo and t -> -oo."""
        upper, lower = response.asymptote(self.definition, self.definition.patterns[0])
        return float(upper), float(lower)

    def latex(self, name: str) -> str:
        """LaTeX of the right-hand side of the formula ``name``, as `make derive` prints it."""
        return formula(name, self.key).value_latex()


class _Function:
    """A registry quantity's numeric function: called like a function, with the derived LaTeX."""

    def __init__(self, layer: NumericLayer, name: str, numeric: str, scalar: Any, strategy: Any, meaning: str):
        self._layer, self._name, self._scalar, self._strategy = layer, name, scalar, strategy
        self.__name__ = self.__qualname__ = numeric
        self.__doc__ = f"{meaning} ({layer.key}.{name}), derived and lambdified."

    def __call__(self, *args: ArrayLike, **named: Any) -> np.ndarray:
        wanted = _ARGUMENTS[self._strategy]
        if len(args) != len(wanted):
            raise TypeError(f"{self.__name__}() takes ({', '.join(wanted)}); got {len(args)} arguments")
        if named and self._strategy is not NumericLayer._of_statistics:
            # Only a function of x takes a subset's keyword; t and epsilon alone are on a pattern.
            raise ValueError(f"{next(iter(named))} is not an argument of {self.__name__}")
        return self._strategy(self._layer, self._scalar, *args, **named)

    def __repr__(self) -> str:
        return f"<function numeric.{self._layer.key}.{self.__name__}>"

    @property
    def latex(self) -> str:
        """LaTeX of the right-hand side of the derived formula, for labels."""
        return self._layer.latex(self._name)


class _Backward:
    """A backward product's numeric function: ``(x, epsilon, *vectors, *parameters)``.

    Where registry rows name it as the function that returns them too (a
    parameter's gradient), it returns a tuple: its own result, then theirs.
    """

    def __init__(self, layer: NumericLayer, name: str, numeric: str, meaning: str):
        self._layer, self._name = layer, name
        self.__name__ = self.__qualname__ = numeric
        self._with = [
            other
            for other, (quantity, item) in quantities.names(layer.definition).items()
            if quantity.returned_by == numeric and quantity.applies(layer.definition, item)
        ]
        takes = ", ".join(layer._c.product(name).vectors)
        returned = f"; returns ({numeric}, {', '.join(self._with)}), those summed over the batch" if self._with else ""
        self.__doc__ = f"{meaning} ({layer.key}.{name}), derived and lambdified: (x, epsilon, {takes}){returned}."

    def __call__(
        self, x: ArrayLike, epsilon: ArrayLike, *args: ArrayLike, **named: Any
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        found = self._layer.products([self._name, *self._with], x, epsilon, *args, **named)
        return tuple(found) if self._with else found[0]

    def __repr__(self) -> str:
        return f"<function numeric.{self._layer.key}.{self.__name__}>"

    @property
    def latex(self) -> str:
        return self._layer.latex(self._name)


_STRATEGIES: dict[str, Callable[..., Any]] = {
    "of_t": NumericLayer._of_t,
    "of_epsilon": NumericLayer._of_epsilon,
    "of_statistics": NumericLayer._of_statistics,
}
# What each strategy's functions take, for the message when called otherwise.
_ARGUMENTS: dict[Callable[..., Any], tuple[str, ...]] = {
    NumericLayer._of_t: ("t", "epsilon"),
    NumericLayer._of_epsilon: ("epsilon",),
    NumericLayer._of_statistics: ("x", "epsilon"),
}


@singledispatch
def _facade(definition: Layer) -> NumericLayer:
    return NumericLayer(definition)


def register(kind: type, make: Callable[[Any], Any]) -> None:
    """Use ``make`` to build the facade of every layer of type ``kind`` (a wrapper's own facade)."""
    _facade.register(kind)(make)


@cache
def facade(key: str) -> NumericLayer:
    """The one `NumericLayer` of layer ``key`` in this process."""
    if key not in LAYERS:
        raise ValueError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}")
    return _facade(LAYERS[key])
