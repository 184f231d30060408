"""The numeric side of `derivations.derive.reparametrized.Reparametrized`: the base layer's functions
at the parameters the stored ones give (Gemma: gain = 1 + weight, bias = 0).

The base's parameters are lambdified from the substitution the definition
states; nothing here is a formula.  A parameter gradient of the base is not
returned (its parameters are not this layer's): ``vjp`` returns dx alone.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from derivations import quantities
from derivations.derive.reparametrized import Reparametrized
from derivations.symbols import i
from numeric import _layer, _validate
from numeric.kernels.lambdify import compile

# The registry's functions of x (and vectors) with parameters: passed through to the base.
_STRATEGIES = ("applied", "entrywise", "backward")


class NumericReparametrized:
    """``base`` at the parameters its stored ones give."""

    def __init__(self, definition: Reparametrized) -> None:
        self.definition = definition
        self.key = definition.key
        self.base = _layer.facade(definition.base.key)
        self._stored = [name for name, _ in definition.stored]
        # Each base parameter as a function of the stored one's entries (one stored parameter).
        entry = sp.Symbol("stored_entry", real=True)
        at = {s[i]: entry for _, s in definition.stored}
        self._compiled = {
            name: compile(definition.values[base].xreplace(at), [entry]) for name, base in definition.base.parameters
        }
        # d base parameter / d stored parameter, entry by entry, for the chain rule of the gradients.
        ((_, stored),) = definition.stored
        self._chain = [
            compile(sp.diff(definition.values[base], stored[i]).xreplace(at), [entry])
            for _, base in definition.base.parameters
        ]
        self._functions = tuple(
            dict.fromkeys(
                name
                for quantity, item in quantities.rows(definition.base)
                if quantity.evaluate in _STRATEGIES and quantity.returned_by is None
                if (name := quantity.numeric_name(item))
            )
        )

    def __repr__(self) -> str:
        return f"<numeric.{self.key}>"

    def names(self) -> tuple[str, ...]:
        return (*self._functions, "bound")

    def _base_parameters(self, shape: tuple[int, ...], named: dict[str, Any], function: str) -> dict[str, np.ndarray]:
        """The base's parameters from the stored one in ``named``, of one entry per feature of
        ``shape`` (any number where it is ()), for the call of ``function``."""
        unknown = [name for name in named if name not in self._stored]
        if unknown:
            raise ValueError(f"{unknown[0]} is not a parameter of {self.key} (parameters: {self._stored})")
        missing = [name for name in self._stored if name not in named]
        if missing:
            if function == "bound":
                raise ValueError(f"{missing[0]} is required by {self.key}: bound(epsilon, {missing[0]})")
            # The function takes it by keyword, after the base function's required arguments.
            required = inspect.signature(getattr(self.base, function)).parameters.values()
            kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            arguments = ", ".join(p.name for p in required if p.default is p.empty and p.kind in kinds)
            raise ValueError(
                f"{missing[0]} is required by {self.key}, by keyword: {function}({arguments}, {missing[0]}=...)"
            )
        (stored,) = (_validate.parameter(named[name], name, shape) for name in self._stored)
        return {
            name: np.broadcast_to(np.asarray(function(stored), dtype=np.float64), stored.shape)
            for name, function in self._compiled.items()
        }

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._functions:
            raise AttributeError(f"numeric.{self.key} has no function {name!r}")

        def function(x: Any, epsilon: Any, *vectors: Any, **named: Any) -> Any:
            found = getattr(self.base, name)(
                x,
                epsilon,
                *vectors,
                **self._base_parameters((np.shape(x)[-1] if np.ndim(x) else 0,), named, name),
            )
            if not isinstance(found, tuple):
                return found
            # The base's parameter gradients, by the chain rule, as the stored parameter's.
            stored = _validate.parameter(named[self._stored[0]], self._stored[0], (np.shape(x)[-1],))
            # A base parameter the stored one does not move (chain 0) adds nothing, even where its
            # own gradient overflowed (inf * 0 would be NaN).
            total = sum(
                np.where(factor == 0, 0.0, gradient * np.where(factor == 0, 1.0, factor))
                for gradient, factor in (
                    (g, np.broadcast_to(c(stored), stored.shape)) for g, c in zip(found[1:], self._chain, strict=True)
                )
            )
            return found[0], np.asarray(total, dtype=found[1].dtype)

        function.__name__ = function.__qualname__ = name
        function.__doc__ = f"{getattr(self.base, name).__doc__} At the parameters {self.definition.values}."
        return function

    def bound(self, epsilon: ArrayLike, *stored: ArrayLike, **named: Any) -> np.ndarray:
        """The derived bound on ||J||_2 over all inputs, at the gain the stored parameter gives."""
        named = {**dict(zip(self._stored, stored, strict=False)), **named}
        gain = self._base_parameters((), named, "bound")[self.base._c.parameter_names[0]]
        return self.base.bound(epsilon, gain)


_layer.register(Reparametrized, NumericReparametrized)
