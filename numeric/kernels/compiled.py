"""Each layer's lambdified functions, compiled on first use and interned per layer key.

After a function is compiled nothing here calls SymPy again: multiplicities
become integer pairs, degrees integers, and every expression a NumPy function.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import sympy as sp

from derivations import LAYERS, Direction, Layer, quantities
from derivations.derive import backward, eigen, jacobian, scaling
from derivations.derive.sums import Mean, p
from derivations.symbols import epsilon, i, j, k, n, t, x
from numeric.kernels.backward import ARGUMENTS, Product, compile_product, taken
from numeric.kernels.lambdify import RowMean, compile, is_wide, row_symbol

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
class Fused:
    """A fused program: the statistics and the results of a block of rows in one function.

    ``function(x, *vectors, *parameters, epsilon, n)`` returns each result as
    its per-row factor and its block (to be multiplied), then each statistic
    per row (for `numeric.kernels.rescale.fits`): a mean of x itself at the raw
    input, every other statistic at the centered input.
    """

    function: Any
    results: int
    vectors: tuple[str, ...]  # the argument names of the vectors it takes, in order


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
        # A subset's indicator rides along with the parameters, after them (numeric builds it
        # from its keyword): an entry at i, at j (in a statistic's summand) or at k (in J_ik).
        self.indicators = tuple(subset.indicator for subset in layer.subsets)
        self._indicator_symbols = {
            index: tuple(sp.Symbol(f"{base.label}_{index}", real=True) for base in self.indicators)
            for index in (i, j, k)
        }
        self._entries = {
            **_ENTRIES,
            **{base[i]: s for (_, base), s in zip(layer.parameters, self._parameter_symbols, strict=True)},
            **{
                base[index]: symbol
                for index, symbols in self._indicator_symbols.items()
                for base, symbol in zip(self.indicators, symbols, strict=True)
            },
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
            self._compile(stat.summand, _xj, *self._indicator_symbols[j], *self.statistics[:m], n)
            for m, stat in enumerate(self.layer.statistics)
        )

    @cached_property
    def output(self) -> Scalar:
        function = self._compile(
            self.layer.output, _xi, *self.statistics, epsilon, *self._parameter_symbols, *self._indicator_symbols[i]
        )
        return Scalar(function, scaling.degree_of(self.layer, self.layer.output, "the output"))

    @cached_property
    def symmetric(self) -> bool:
        return jacobian.is_symmetric(self.layer)

    @cached_property
    def entry(self) -> Scalar:
        expr = jacobian.entry(self.layer)
        function = self._compile(
            expr,
            _xi,
            _xk,
            _delta,
            *self.statistics,
            epsilon,
            n,
            *self._parameter_symbols,
            *self._indicator_symbols[i],
            *self._indicator_symbols[k],
        )
        return Scalar(function, scaling.degree_of(self.layer, expr, "J_ik"))

    @cached_property
    def degenerate_entry(self) -> Any:
        return self._compile(jacobian.at_degenerate(self.layer), _delta, *self.statistics, epsilon, n)

    @cached_property
    def restricted(self) -> tuple[int | None, ...]:
        """Per statistic, the position of an indicator that is a factor of its summand (the
        summand is 0 outside that subset, derived), else None: numeric evaluates such a
        summand at x with the entries outside set to 0, so that none of them can overflow it."""
        out: list[int | None] = []
        for stat in self.layer.statistics:
            factors = [
                m for m, base in enumerate(self.indicators) if sp.expand(stat.summand.xreplace({base[j]: 0})) == 0
            ]
            out.append(factors[0] if factors else None)
        return tuple(out)

    @cached_property
    def spread_indicators(self) -> tuple[int, ...]:
        """Positions (among `indicators`) of the indicators the spread statistic is a mean over."""
        (stat,) = [s for s in self.layer.statistics if s.symbol == self.layer.spread]
        bases = {e.base for e in stat.summand.atoms(sp.Indexed)}
        return tuple(m for m, base in enumerate(self.indicators) if base in bases)

    @cached_property
    def witness(self) -> int | None:
        """Position of a statistic that, as the fused program returns it per row, is not finite
        wherever an entry of the row is not (derived), else None.

        A mean of x itself qualifies, and an unrestricted mean of a polynomial of positive
        degree in x_j: NaN and inf reach any such polynomial and any sum of its values (at the
        centered input too, where an entry that is not finite makes every entry NaN or inf).
        A summand an indicator restricts, or a bounded one such as tanh(x_j), does not.  The
        forward pass then takes no separate pass over x for its finiteness (`_kernel.fused`)."""
        for m, stat in enumerate(self.layer.statistics):
            if not stat.mean or self.restricted[m] is not None or any(stat.summand.has(b) for b in self.indicators):
                continue
            if stat.symbol in self.shifted:
                return m
            try:
                degree = sp.Poly(stat.summand, x[j]).degree()
            except sp.PolynomialError:
                continue
            if degree >= 1:
                return m
        return None

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

    @cached_property
    def shifted(self) -> frozenset[sp.Symbol]:
        """The statistics that are means of x itself: each moves with a shift of x, and is 0
        at a centered input (only a translation-invariant layer is evaluated there)."""
        if not self.centered:
            return frozenset()
        return frozenset(s.symbol for s in self.layer.statistics if s.mean and sp.expand(s.summand - x[j]) == 0)

    @cached_property
    def statistic_degrees(self) -> dict[sp.Symbol, int]:
        return scaling.statistic_degrees(self.layer)

    def _fused(self, results: list[sp.Expr]) -> Fused:
        r"""One function for ``results`` (entries at i or k, means at p) on a block of rows.

        Each statistic becomes the row mean of its summand and each mean
        :math:`\overline{m}` the row mean of m, so that `sympy.cse` shares
        what the statistics and the results have in common.  A translation-
        invariant layer is evaluated at the centered input c = x - mean(x),
        where it has the same value and every derivative (derived), and where
        a mean of x itself is 0: the formulas lose their terms in it.
        """
        row = row_symbol("x")
        vectors = taken(*results)
        bases = (*vectors, *(base for _, base in self.layer.parameters), *self.indicators)
        symbols = [row_symbol(str(base.label)) for base in bases]
        raw_mean = RowMean(row)
        at = row - raw_mean if self.centered else row
        entries: dict[sp.Basic, sp.Basic] = {x[index]: at for index in (i, j, k, p)}
        for base, symbol in zip(bases, symbols, strict=True):
            entries.update({base[index]: symbol for index in (i, j, k, p)})
        values: dict[sp.Basic, sp.Basic] = {}
        for stat in self.layer.statistics:
            if stat.symbol in self.shifted:
                values[stat.symbol] = sp.Integer(0)
                continue
            summand = stat.summand.xreplace({**entries, **values})
            values[stat.symbol] = RowMean(summand) if stat.mean else summand
        replaced = [
            e.replace(lambda m: isinstance(m, Mean), lambda m: RowMean(m.args[0].xreplace(entries))).xreplace(
                {**entries, **values}
            )
            for e in results
        ]
        checks = [raw_mean if s in self.shifted else values[s] for s in self.statistics]
        # Each result as (its per-row factor, its block): the caller multiplies them into the
        # output in place, the product the printer would have formed, without a copy after it.
        split = [part for e in replaced for part in _per_row_and_block(e)]
        function = compile([*split, *checks], [row, *symbols, epsilon, n])
        return Fused(function, len(results), tuple(ARGUMENTS[base] for base in vectors))

    @cached_property
    def hvp_pairs(self) -> tuple[tuple[int, int, Any], ...]:
        """(d, e, H(d, e)) for each pair of the explicit eigen directions (their order in
        `explicit`): the Hessian product along them, derived with its cancellation done
        (`derivations.derive.backward.hvp_along`), as (x_k, *statistics, epsilon, n) -> entry k,
        or None where it is identically 0 (LayerNorm's along the ones).  Empty for a layer with
        parameters or where a pair is not derived."""
        if not self.symmetric or self.layer.parameters:
            return ()
        out = []
        explicit = self.explicit
        for a, first in enumerate(explicit):
            for b, second in enumerate(explicit):
                value = backward.hvp_along(self.layer, first.direction, second.direction)
                if value is None:
                    return ()
                zero = value == 0
                out.append((a, b, None if zero else self._compile(value, _xk, *self.statistics, epsilon, n)))
        return tuple(out)

    @property
    def explicit(self) -> tuple[Eigen, ...]:
        """The eigenpairs with an explicit direction (not the complement)."""
        return tuple(pair for pair in self.eigen if pair.entry is not None)

    @cached_property
    def fused_output(self) -> Fused:
        """The forward map as one fused program."""
        return self._fused([self.layer.output])

    @cache  # noqa: B019 - one entry per tuple of names; the instance is interned for the process
    def fused_products(self, names: tuple[str, ...]) -> Fused:
        """The backward products ``names`` (a product and the parameter gradients it returns)
        as one fused program."""
        rows = [quantities.names(self.layer)[name] for name in names]
        return self._fused([quantity.derive(self.layer, item) for quantity, item in rows])

    @cache  # noqa: B019 - one entry per quantity name; the instance is interned for the process
    def product(self, name: str) -> Product:
        """The backward product ``name`` (with its limit at the degenerate input), compiled."""
        quantity, item = quantities.names(self.layer)[name]
        limit = quantity.limit(self.layer) if quantity.limit is not None and self.layer.approach else None
        return compile_product(self.layer, quantity.derive(self.layer, item), limit, name, quantity.jacobian_product)


def _per_row_and_block(expr: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """``expr`` as (the product of its factors that are one number per row, the product of the rest)."""
    factors = sp.Mul.make_args(expr)
    wide = [f for f in factors if is_wide(f)]
    return sp.Mul(*(f for f in factors if not is_wide(f))), sp.Mul(*wide)


@cache
def compiled(key: str) -> Compiled:
    """The one `Compiled` of layer ``key`` in this process."""
    return Compiled(LAYERS[key])
