"""Each layer's lambdified functions, compiled on first use and interned per layer key.

After a function is compiled nothing here calls SymPy again: multiplicities
become integer pairs, degrees integers, and every expression a NumPy function.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import sympy as sp

from derivations import LAYERS, Direction, Layer, eigen, jacobian, quantities, scaling
from derivations.symbols import epsilon, i, j, k, n, t, x
from numeric._backward import Product, compile_product
from numeric._lambdify import compile

# Scalar stand-ins for indexed entries: lambdify takes symbols, not x[i].
_xi, _xj, _xk = sp.symbols("x_i x_j x_k", real=True)
_delta = sp.Symbol("delta_ik")
_ENTRIES = {x[i]: _xi, x[j]: _xj, x[k]: _xk, sp.KroneckerDelta(i, k): _delta}

# What each evaluation strategy passes to a compiled scalar quantity, after
# the statistics where it takes them.
_ARGUMENTS: dict[str, tuple[sp.Symbol, ...]] = {"of_t": (t, epsilon), "of_epsilon": (epsilon,)}


@dataclass(frozen=True)
class Eigen:
    """A compiled eigenpair: eigenvalue function, multiplicity a*n + b, direction entry."""

    direction: Direction
    value: Any  # (*statistics, epsilon, n) -> eigenvalue
    multiplicity: tuple[int, int]
    entry: Any  # (x_k, *statistics) -> v_k; None for the complement

    def count(self, size: int) -> int:
        a, b = self.multiplicity
        return a * size + b


@dataclass(frozen=True)
class Scalar:
    """A compiled scalar quantity and its homogeneity degree."""

    function: Any
    degree: int


class Compiled:
    """The compiled functions of one layer; get it with `compiled`, never build it twice."""

    def __init__(self, layer: Layer) -> None:
        self.layer = layer
        self.statistics = tuple(stat.symbol for stat in layer.statistics)
        self.parameter_names = tuple(name for name, _ in layer.parameters)
        self._parameter_symbols = tuple(sp.Symbol(f"{base.label}_i", real=True) for _, base in layer.parameters)
        self._entries = {
            **_ENTRIES,
            **{base[i]: s for (_, base), s in zip(layer.parameters, self._parameter_symbols, strict=True)},
        }

    def _compile(self, expr: sp.Expr, *args: sp.Symbol) -> Any:
        return compile(expr.subs(self._entries), args)

    @cached_property
    def epsilon_degree(self) -> int:
        return scaling.epsilon_degree(self.layer)

    @cached_property
    def centered(self) -> bool:
        """Whether the layer sees x only through x - mean(x) (derived)."""
        return scaling.translation_invariant(self.layer)

    @cached_property
    def summands(self) -> tuple[Any, ...]:
        return tuple(
            self._compile(stat.summand, _xj, *self.statistics[:m], n) for m, stat in enumerate(self.layer.statistics)
        )

    @cached_property
    def output(self) -> Scalar:
        function = self._compile(self.layer.output, _xi, *self.statistics, epsilon, *self._parameter_symbols)
        return Scalar(function, scaling.degree_of(self.layer, self.layer.output, "the output"))

    @cached_property
    def symmetric(self) -> bool:
        return jacobian.is_symmetric(self.layer)

    @cached_property
    def entry(self) -> Scalar:
        expr = jacobian.entry(self.layer)
        function = self._compile(expr, _xi, _xk, _delta, *self.statistics, epsilon, n, *self._parameter_symbols)
        return Scalar(function, scaling.degree_of(self.layer, expr, "J_ik"))

    @cached_property
    def degenerate_entry(self) -> Any:
        return self._compile(jacobian.at_degenerate(self.layer), _delta, *self.statistics, epsilon, n)

    @cached_property
    def spread(self) -> int:
        """Position of the statistic that vanishes at the degenerate input."""
        return self.statistics.index(self.layer.spread)

    @cached_property
    def eigen(self) -> tuple[Eigen, ...]:
        if self.symmetric:
            eigen.spectral_form(self.layer)  # what the Jacobian is assembled from, proved before use
        out = []
        for pair in eigen.eigenpairs(self.layer):
            a, b = (
                sp.Poly(pair.multiplicity, n).all_coeffs()[-2:] if pair.multiplicity.has(n) else (0, pair.multiplicity)
            )
            entry = None if pair.direction.complement else self._compile(pair.direction.entry, _xk, *self.statistics)
            value = self._compile(pair.value, *self.statistics, epsilon, n)
            out.append(Eigen(pair.direction, value, (int(a), int(b)), entry))
        return tuple(out)

    @cached_property
    def eigen_degree(self) -> int:
        """The eigenvalues' common degree (a zero eigenvalue has every degree)."""
        found = {
            scaling.degree_of(self.layer, p.value, "eigenvalues") for p in eigen.eigenpairs(self.layer) if p.value != 0
        }
        if len(found) > 1:
            raise ValueError(f"{self.layer.key}: eigenvalues scale unlike each other: {sorted(found)}")
        return found.pop() if found else 0

    @cache  # noqa: B019 - one entry per quantity name; the instance is interned for the process
    def scalar(self, name: str) -> Scalar | None:
        """Quantity ``name`` compiled for its evaluation strategy, or None where it has no
        numeric form (it applies not, or depends on more than that strategy passes)."""
        quantity, item = quantities.names(self.layer)[name]
        if quantity.kind != "scalar" or quantity.evaluate is None or not quantity.applies(self.layer, item):
            return None
        expr = quantity.derive(self.layer, item)
        args = (*self.statistics, epsilon, n) if quantity.evaluate == "of_statistics" else _ARGUMENTS[quantity.evaluate]
        if not expr.free_symbols <= set(args):
            return None
        return Scalar(self._compile(expr, *args), scaling.degree_of(self.layer, expr, name))

    @cache  # noqa: B019 - one entry per quantity name; the instance is interned for the process
    def product(self, name: str) -> Product:
        """The backward product ``name`` (with its limit at the degenerate input), compiled."""
        quantity, item = quantities.names(self.layer)[name]
        limit = quantity.limit(self.layer) if quantity.limit is not None and self.layer.approach else None
        return compile_product(self.layer, quantity.derive(self.layer, item), limit, name, quantity.jacobian_product)


@cache
def compiled(key: str) -> Compiled:
    """The one `Compiled` of layer ``key`` in this process."""
    return Compiled(LAYERS[key])
