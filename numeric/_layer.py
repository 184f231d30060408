"""`NumericLayer`: the NumPy functions of one layer, a thin facade over its compiled functions.

Every scalar quantity in the registry (`derivations.quantities`) with a
numeric name is a function here, evaluated by the strategy its row names:
``of_t`` (t, epsilon), ``of_epsilon`` (epsilon) or ``of_statistics``
(x, epsilon).  Inputs are validated (a `ValueError` names the argument),
computed in float64, and returned in float32 only when the inputs were float32.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from functools import cache, singledispatch
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from derivations import LAYERS, Direction, Layer, formula, quantities
from derivations.catalog import PAPERS
from derivations.derive import response
from derivations.notation import DEFAULT
from numeric import _validate
from numeric.kernels import assemble as _assemble
from numeric.kernels import kernel as _kernel
from numeric.kernels import rescale as _rescale
from numeric.kernels.compiled import Compiled, compiled


class NumericLayer:
    """The forward map, Jacobian, eigenvalues and every scalar quantity of a layer.

    Get it as ``numeric.<key>.LAYER`` or `facade`; the module ``numeric.<key>``
    holds the same functions.  ``names()`` (and ``dir()``) lists them.

    >>> from numeric import facade
    >>> layer = facade("rmsnorm")
    >>> layer
    <numeric.rmsnorm>
    >>> "slope_at_zero" in dir(layer), float(layer.slope_at_zero(0.25))
    (True, 2.0)
    """

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

    def __dir__(self) -> list[str]:
        """The attributes, and the functions `__getattr__` finds in the registry (`names`)."""
        return sorted({*super().__dir__(), *self.names()})

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
        r"""The layer applied along the last axis of x: its definition's output entry, lambdified.

        .. math::

            y_i = f(x_i, \text{statistics of } x, \varepsilon), \qquad i = 1, \dots, n,

        with f and the statistics as ``derivations.LAYERS[key]`` defines them;
        for LayerNorm :math:`y_i = (x_i - \mu) / \sqrt{q + \varepsilon}`, where
        :math:`\mu` and :math:`q` are the mean and the biased variance of the row.
        A row at a scale float64 cannot take as it is (huge, tiny, or offset
        far from 0) is rescaled by the layer's derived homogeneity first.

        Args:
          x: inputs, array_like of shape (..., n) with n >= 2, one row per layer input.
          epsilon: epsilon > 0, array_like broadcast against the rows (shape ``x.shape[:-1]``).
          *parameters: the layer's per-feature parameters, by position (a gain, a bias), where it has any.
          **named: parameters by name; a subset's keyword (``p`` of partial RMSNorm).

        Returns:
          The outputs, an ndarray of the shape of x: float64, or float32 where x is float32.

        Raises:
          ValueError: an argument that is not real, not finite, of the wrong shape, or out
            of range (epsilon <= 0); the message names it.

        Example:
          >>> import numpy as np
          >>> from numeric import layernorm
          >>> layernorm.forward(np.array([1.0, 2.0, 3.0]), 1e-5).round(6)
          array([-1.224736,  0.      ,  1.224736])

        References:
          Ba, Kiros and Hinton, *Layer Normalization*, 2016, https://arxiv.org/abs/1607.06450.
        """
        return _kernel.forward(self, x, epsilon, *parameters, **named)

    def jacobian(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        r"""The Jacobian of `forward` at each row of x, from the derived formulas.

        .. math::

            J_{ik} = \frac{\partial y_i}{\partial x_k};

        for LayerNorm, :math:`J = I/s - \mathbf{1}\mathbf{1}^\top/(n s) - c c^\top/(n s^3)` with
        :math:`s = \sqrt{q + \varepsilon}` and :math:`c = x - \mu \mathbf{1}`.  A symmetric J is
        assembled from its derived eigenpairs, any other from its derived entry.

        Args:
          x: inputs, array_like of shape (..., n) with n >= 2.
          epsilon: epsilon > 0, array_like broadcast against the rows.
          *parameters: the layer's per-feature parameters, where it has any.
          **named: parameters by name; a subset's keyword.

        Returns:
          An ndarray of shape (..., n, n): float64, or float32 where x is float32.

        Raises:
          ValueError: an argument that is not real, not finite, of the wrong shape, or out of range.

        Example:
          >>> import numpy as np
          >>> from numeric import layernorm
          >>> layernorm.jacobian(np.array([1.0, -1.0]), 0.25).round(4)  # n = 2: epsilon/s**3 on c
          array([[ 0.0894, -0.0894],
                 [-0.0894,  0.0894]])
        """
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
        r"""The n eigenvalues of the Jacobian, ascending, from the derived eigenstructure.

        Each derived eigenvalue is repeated by its derived multiplicity; for
        LayerNorm, 0 (along :math:`\mathbf{1}`), :math:`\varepsilon/s^3` (along c)
        and :math:`1/s` (n - 2 times), with :math:`s = \sqrt{q + \varepsilon}`.

        Args:
          x: inputs, array_like of shape (..., n) with n >= 2.
          epsilon: epsilon > 0, array_like broadcast against the rows.

        Returns:
          An ndarray of shape (..., n), each row ascending.

        Raises:
          ValueError: an argument out of range, or a layer whose Jacobian is not symmetric.

        Example:
          >>> import numpy as np
          >>> from numeric import layernorm
          >>> layernorm.eigenvalues(np.array([1.0, -1.0, 0.0]), 0.25).round(4)
          array([0.    , 0.2849, 1.0445])
        """
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


class _Doc:
    """A class's own docstring on the class; on an instance, its ``_docstring()``, written when first
    read: a function's docstring prints its derived formula, which no call needs."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __get__(self, instance: Any, owner: type | None = None) -> str:
        if instance is None:
            return self.text
        if instance._doc is None:
            instance._doc = instance._docstring()
        return str(instance._doc)


class _Function:
    __doc__ = _Doc(
        """A registry quantity's numeric function: called like a function, with the derived LaTeX.
        Its docstring (an instance's ``__doc__``) gives the formula it evaluates, its arguments and an example."""
    )

    def __init__(self, layer: NumericLayer, name: str, numeric: str, scalar: Any, strategy: Any, meaning: str):
        self._layer, self._name, self._scalar, self._strategy = layer, name, scalar, strategy
        self.__name__ = self.__qualname__ = numeric
        self._meaning = meaning
        self._doc: str | None = None
        # One line, for what wraps this function and says what it does to it.
        self.summary = f"{meaning} ({layer.key}.{name}), derived and lambdified."

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
    def __signature__(self) -> inspect.Signature:
        keywords = [s.keyword for s in self._layer.definition.subsets] if self._takes_x else []
        return _signature(_ARGUMENTS[self._strategy], keywords=keywords)

    @property
    def _takes_x(self) -> bool:
        return self._strategy is NumericLayer._of_statistics

    @property
    def latex(self) -> str:
        """LaTeX of the right-hand side of the derived formula, for labels."""
        return self._layer.latex(self._name)

    def _docstring(self) -> str:
        wanted = _ARGUMENTS[self._strategy]
        example = (1.0, 0.25) if wanted == ("t", "epsilon") else (0.25,) if wanted == ("epsilon",) else (_X, 0.25)
        return _document(self, self._layer, self._name, wanted, self._meaning, example)

    def _repr_markdown_(self) -> str:
        return _markdown(self, self._layer, self._name, _ARGUMENTS[self._strategy], self._meaning)


class _Backward:
    __doc__ = _Doc(
        """A backward product's numeric function: ``(x, epsilon, *vectors, *parameters)``.

        Where registry rows name it as the function that returns them too (a
        parameter's gradient), it returns a tuple: its own result, then theirs."""
    )

    def __init__(self, layer: NumericLayer, name: str, numeric: str, meaning: str):
        self._layer, self._name = layer, name
        self.__name__ = self.__qualname__ = numeric
        self._meaning = meaning
        self._doc: str | None = None
        self._with = [
            other
            for other, (quantity, item) in quantities.names(layer.definition).items()
            if quantity.returned_by == numeric and quantity.applies(layer.definition, item)
        ]
        self._vectors = tuple(layer._c.product(name).vectors)
        takes = ", ".join(self._vectors)
        returned = f"; returns ({numeric}, {', '.join(self._with)}), those summed over the batch" if self._with else ""
        self.summary = f"{meaning} ({layer.key}.{name}), derived and lambdified: (x, epsilon, {takes}){returned}."

    def __call__(
        self, x: ArrayLike, epsilon: ArrayLike, *args: ArrayLike, **named: Any
    ) -> np.ndarray | tuple[np.ndarray, ...]:
        found = self._layer.products([self._name, *self._with], x, epsilon, *args, **named)
        return tuple(found) if self._with else found[0]

    def __repr__(self) -> str:
        return f"<function numeric.{self._layer.key}.{self.__name__}>"

    @property
    def __signature__(self) -> inspect.Signature:
        parameters = self._layer._c.parameter_names
        return _signature(("x", "epsilon", *self._vectors), optional=parameters)

    @property
    def latex(self) -> str:
        return self._layer.latex(self._name)

    def _docstring(self) -> str:
        wanted = ("x", "epsilon", *self._vectors)
        vectors = (_VECTORS[m % len(_VECTORS)] for m in range(len(self._vectors)))
        parameters = (_PARAMETERS[m % len(_PARAMETERS)] for m in range(len(self._layer._c.parameter_names)))
        example = (_X, 0.25, *vectors, *parameters)
        return _document(self, self._layer, self._name, wanted, self._meaning, example, self._with)

    def _repr_markdown_(self) -> str:
        return _markdown(self, self._layer, self._name, ("x", "epsilon", *self._vectors), self._meaning)


# --- the docstrings of the functions, in the style of jax.nn ---------------------------------------

# The input of each docstring's example: a row of three entries, and the vectors a backward product takes.
_X = np.array([1.0, -1.0, 0.5])
_VECTORS = (np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, -1.0]))
_PARAMETERS = (np.array([2.0, 1.0, 0.5]), np.array([0.1, 0.2, 0.3]))
_ARGUMENT_TEXT = {
    "x": "inputs, array_like of shape (..., n) with n >= 2: the value is taken at each row (the last axis).",
    "epsilon": "epsilon > 0, array_like, broadcast against the other arguments.",
    "dy": "the upstream gradient g, array_like of the shape of x.",
    "g": "the upstream gradient g, array_like of the shape of x.",
    "v": "the direction v, array_like of the shape of x.",
}


def _signature(
    names: tuple[str, ...], optional: tuple[str, ...] = (), keywords: list[str] | tuple[str, ...] = ()
) -> inspect.Signature:
    positional = inspect.Parameter.POSITIONAL_ONLY
    found = [inspect.Parameter(name, positional) for name in names]
    found += [inspect.Parameter(name, positional, default=None) for name in optional]
    found += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None) for name in keywords]
    return inspect.Signature(found)


def _formula_latex(layer: NumericLayer, name: str, numeric: str, wanted: tuple[str, ...]) -> str | None:
    """``numeric(args) = <the derived expression it evaluates>``, where the registry derives one."""
    try:
        quantity, item = quantities.names(layer.definition)[name]
        expr = quantity.derive(layer.definition, item)
        value = sp.latex(expr, symbol_names=DEFAULT.symbol_names())
    except Exception:
        return None
    symbols = {"epsilon": "\\varepsilon", "dy": "g"}
    arguments = ", ".join(symbols.get(w, w) for w in wanted)
    index = "_k" if quantity.kind == "vector" else ""
    operator = numeric.replace("_", "\\_")
    return f"\\operatorname{{{operator}}}({arguments}){index} = {value}"


def _markdown(function: Any, layer: NumericLayer, name: str, wanted: tuple[str, ...], meaning: str) -> str:
    head = f"`numeric.{layer.key}.{function.__name__}({', '.join(wanted)})`: {meaning}"
    shown = _formula_latex(layer, name, function.__name__, wanted)
    return head + (f"\n\n$${shown}$$\n" if shown else "\n")


def _document(
    function: Any,
    layer: NumericLayer,
    name: str,
    wanted: tuple[str, ...],
    meaning: str,
    example: tuple[Any, ...],
    also: list[str] | tuple[str, ...] = (),
) -> str:
    """The docstring of ``function``: what it computes, the formula, Args, Returns, Raises, an example
    computed when the docstring is first read, and the layer's paper."""
    definition = layer.definition
    lines = [f"{meaning[:1].upper()}{meaning[1:]}, for {definition.title} ({layer.key}.{name}).", ""]
    shown = _formula_latex(layer, name, function.__name__, wanted)
    if shown:
        lines += [".. math::", "", f"    {shown}", ""]
    if "t" in wanted and definition.patterns:
        pattern = definition.patterns[0]
        lines += [f"at the input x = {pattern}, output entry {pattern.coordinate + 1}.", ""]
    elif "x" in wanted and definition.statistics:
        statistics = ", \\quad ".join(latex for latex, _ in definition.definition_latex()[1:])
        lines += ["with the statistics of each row x:", "", ".. math::", "", f"    {statistics}", ""]
    lines += ["Args:"]
    for argument in wanted:
        text = _ARGUMENT_TEXT.get(argument, f"{argument}, array_like.")
        if argument == "t" and definition.patterns:
            text = f"the amplitude t of the input x = {definition.patterns[0]}, array_like."
        lines.append(f"  {argument}: {text}")
    parameters = layer._c.parameter_names if "x" in wanted and isinstance(function, _Backward) else ()
    for parameter in parameters:
        lines.append(f"  {parameter}: the layer's {parameter}, array_like of shape (n,), by position or by name.")
    if "x" in wanted:
        for subset in definition.subsets:
            lines.append(f"  {subset.keyword}: keyword only: {subset.meaning} (default {subset.default}).")
    lines += ["", "Returns:"]
    if "x" not in wanted:
        lines.append("  An ndarray of the arguments' broadcast shape: float64, or float32 where they are float32.")
    elif isinstance(function, _Backward):
        returned = f"; with them, {', '.join(also)}, each summed over the rows" if also else ""
        lines.append(f"  An ndarray of the shape of x{returned}: float64, or float32 where x is float32.")
    else:
        lines.append("  An ndarray of shape ``x.shape[:-1]``, the value at each row: float64, or float32 where x is.")
    lines += [
        "",
        "Raises:",
        "  ValueError: an argument that is not real, not finite, of the wrong shape, or out of range",
        "    (epsilon <= 0); the message names it.",
    ]
    if isinstance(function, _Function):
        lines.append("  TypeError: another number of arguments.")
    lines += _example(function, layer, example)
    paper = PAPERS.get(layer.key)
    if paper:
        lines += ["", "References:", f"  {paper}."]
    # Last, a sentence with no line end: a wrapper that adds a sentence of its own continues it.
    lines += [
        "",
        f"Derived by SymPy from the layer's definition and lambdified; the formula as printed, and how it "
        f"was established: ``derivations.formula({layer.key + '.' + name!r})``.",
    ]
    return "\n".join(lines)


def _example(function: Any, layer: NumericLayer, arguments: tuple[Any, ...]) -> list[str]:
    """A doctest of one call of ``function``, its output computed here; none where the call fails."""
    try:
        found = function(*arguments)
    except Exception:
        return []
    results = [np.asarray(r) for r in (found if isinstance(found, tuple) else (found,))]
    shown = [repr(float(r)) if r.ndim == 0 else repr(r.round(6)) for r in results]
    written = [f"np.array({a.tolist()})" if isinstance(a, np.ndarray) else repr(a) for a in arguments]
    call = f"{layer.key}.{function.__name__}({', '.join(written)})"
    if f"numeric.{layer.key}" in sys.modules:
        lines = [">>> import numpy as np", f">>> from numeric import {layer.key}"]
    else:
        lines = [">>> import numpy as np", ">>> from numeric import facade", f">>> {layer.key} = facade({layer.key!r})"]
    if len(results) == 1:
        value = f"float({call})" if results[0].ndim == 0 else f"{call}.round(6)"
        lines += [f">>> {value}", *shown[0].splitlines()]
    else:
        lines += [f">>> found = {call}", ">>> [r.round(6) for r in found]"]
        lines += f"[{', '.join(shown)}]".splitlines()
    return ["", "Example:", *(f"  {line}" for line in lines)]


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
