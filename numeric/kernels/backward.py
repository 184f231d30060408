r"""The backward pass as NumPy functions, compiled from the derived products.

A product (J^T g, J v, the Hessian product, a parameter's gradient) is derived
as its entry at k, in x_k, g_k, v_k, the parameters at k, the statistics and
the means :math:`\overline{m}` of a few monomials m in the entries.  Here each
monomial is lambdified on its own and averaged over the last axis, and the
entry is lambdified with each mean as one more argument: no n x n matrix is
formed.  Each row is evaluated at the scale of `numeric.kernels.rescale.normalized`
and multiplied back by m**d, d the product's derived degree; the vectors g
and v are not rescaled (every product is linear in each of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from derivations import Layer
from derivations.derive import backward, scaling
from derivations.derive.sums import Mean
from derivations.symbols import epsilon, g, n, v, x
from numeric.kernels import rescale as _rescale
from numeric.kernels.lambdify import compile

# The vectors a product may take besides x, and the argument names they have.
ARGUMENTS: dict[sp.IndexedBase, str] = {g: "dy", v: "v"}


@dataclass(frozen=True)
class Product:
    """A compiled product: its entry, the monomials it averages, what it takes, its degree."""

    entry: Any  # (x_k, *vectors_k, *parameters_k, *statistics, epsilon, n, *means) -> value at k
    monomials: tuple[Any, ...]  # each (x_p, *vectors_p, *parameters_p) -> monomial at p
    vectors: tuple[str, ...]  # the argument names of the vectors it takes, in order
    degree: int
    parameters: frozenset[str] = frozenset()  # the names of the parameters it depends on
    degenerate: Product | None = None  # the derived limit where the spread vanishes
    jacobian_product: str | None = None  # "direct" (J v) or "transpose" (J^T g): see NumericLayer.jacobian_product


def taken(*results: sp.Expr) -> tuple[sp.IndexedBase, ...]:
    """The vectors products ``results`` take: those they show, as each is linear in each vector it
    takes; a product that vanishes identically (the Hessian's, of a layer linear in x) shows none
    and takes both."""
    if all(result == 0 for result in results):
        return tuple(ARGUMENTS)
    return tuple(base for base in ARGUMENTS if any(result.has(base) for result in results))


def compile_product(
    layer: Layer, expr: sp.Expr, degenerate: sp.Expr | None, what: str, jacobian_product: str | None = None
) -> Product:
    """Lambdify a product written at `backward.INDEX`, with its means written at `backward.MEAN_INDEX`."""
    vectors = taken(expr)
    if degenerate is not None:
        vectors = tuple(base for base in ARGUMENTS if base in vectors or degenerate.has(base))
    # A subset's indicator is passed after the parameters, as they are (see `Compiled.indicators`).
    at = (x, *vectors, *(base for _, base in layer.parameters), *(subset.indicator for subset in layer.subsets))
    symbols = [sp.Symbol(f"{base.label}_k", real=True) for base in at]
    statistics = [stat.symbol for stat in layer.statistics]

    def one(value: sp.Expr) -> tuple[Any, tuple[Any, ...]]:
        means = sorted(value.atoms(Mean), key=sp.default_sort_key)
        names = [sp.Symbol(f"mean{m}", real=True) for m in range(len(means))]
        here = {base[backward.INDEX]: s for base, s in zip(at, symbols, strict=True)}
        there = {base[backward.MEAN_INDEX]: s for base, s in zip(at, symbols, strict=True)}
        entry = compile(
            value.xreplace(dict(zip(means, names, strict=True))).xreplace(here),
            [*symbols, *statistics, epsilon, n, *names],
        )
        return entry, tuple(compile(m.args[0].xreplace(there), symbols) for m in means)

    entry, monomials = one(expr)
    limit = None
    if degenerate is not None:
        limit_entry, limit_monomials = one(degenerate)
        limit = Product(limit_entry, limit_monomials, (), 0)
    names = tuple(ARGUMENTS[base] for base in vectors)
    uses = frozenset(name for name, base in layer.parameters if expr.has(base))
    degree = scaling.degree_of(layer, expr, what)
    return Product(entry, monomials, names, degree, uses, limit, jacobian_product)


def evaluate(
    products: list[Product],
    rows: np.ndarray,
    e: np.ndarray,
    given: list[np.ndarray],
    parameters: list[np.ndarray],
    layer: Any,
    checked: bool = True,
) -> list[np.ndarray]:
    """Every product on a block of rows, shape (rows, n), from one rescaling and one set of statistics.

    ``layer`` is the `NumericLayer` whose statistics and scaling these are; ``checked`` as in
    `numeric.kernels.rescale.at_scale`.
    """
    c = layer._c

    def at(scaled: np.ndarray, e_scaled: np.ndarray, m: np.ndarray) -> list[np.ndarray]:
        return _at_scale(products, rows, e, given, parameters, layer, scaled, e_scaled, m)

    return _rescale.at_scale(at, rows, e, c.epsilon_degree, c.centered, layer.weights(parameters), checked)


def _at_scale(
    products: list[Product],
    rows: np.ndarray,
    e: np.ndarray,
    given: list[np.ndarray],
    parameters: list[np.ndarray],
    layer: Any,
    scaled: np.ndarray,
    e_scaled: np.ndarray,
    m: np.ndarray,
) -> list[np.ndarray]:
    """Every product on a block of rows, from the rows and epsilon scaled by M (`evaluate`)."""
    c = layer._c
    stats = layer._statistics(scaled, parameters)
    size = rows.shape[-1]
    out = []
    for product in products:
        if product.jacobian_product is not None:
            # The derived eigenstructure where the layer has it, over the entry formula.
            values = layer.jacobian_product(product.jacobian_product, scaled, stats, e_scaled, given[0], parameters)
            if values is not None:
                out.append(_rescale.times_power(values, m, product.degree))
                continue
        values = _entry(product, scaled, given, parameters, stats, e_scaled, size)
        flat = stats[c.spread] == 0 if c.layer.approach else np.zeros((len(scaled), 1), dtype=bool)  # per row
        # Rows whose spread is 0, or whose terms overflow, only after the rescaling (x far
        # below the root of epsilon) are taken at the input's own scale; a truly degenerate
        # input where the product has no limit is refused.
        with np.errstate(invalid="ignore"):
            lost = ~np.isfinite(values).all(axis=-1, keepdims=True)
        redo = lost | (flat if product.degenerate is None else np.zeros_like(flat))
        if redo.any():
            rows_redo = np.flatnonzero(redo[..., 0])
            raw = rows[rows_redo]
            degenerate = ((raw == raw[:, :1]) if c.centered else (raw == 0)).all(axis=-1)
            if degenerate.any() and product.degenerate is None:
                raise ValueError(
                    f"x has a row where {c.layer.spread} = 0, at which {c.layer.key} is not twice differentiable"
                )
            final = np.array(_rescale.times_power(values, m, product.degree))
            final[rows_redo] = _at_own_scale(
                product, raw, e[rows_redo] if np.ndim(e) and e.shape[0] > 1 else e, given, parameters, layer, rows_redo
            )
            if product.degenerate is not None and flat.any():
                limit = _entry(product.degenerate, scaled, given, parameters, stats, e_scaled, size)
                keep = flat & ~redo
                final = np.where(keep, _rescale.times_power(limit, m, product.degree), final)
            out.append(final)
            continue
        if flat.any() and product.degenerate is not None:
            limit = _entry(product.degenerate, scaled, given, parameters, stats, e_scaled, size)
            values = np.where(flat, limit, values)
        out.append(_rescale.times_power(values, m, product.degree))
    return out


def _at_own_scale(
    product: Product,
    rows: np.ndarray,
    e: np.ndarray,
    given: list[np.ndarray],
    parameters: list[np.ndarray],
    layer: Any,
    index: np.ndarray,
) -> np.ndarray:
    """``product`` on rows at the balanced scale (`numeric.kernels.rescale.balanced`): halfway between
    their own spread and the root of epsilon; a term that still overflows there carries a
    power of epsilon that puts the product below the range, and comes out as 0."""
    c = layer._c
    pick = [vector[index] for vector in given]
    params = [p if p.shape[0] == 1 else p[index] for p in parameters]
    scaled, e_scaled, m = _rescale.balanced(rows, e, c.epsilon_degree, c.centered, layer.weights(params))
    stats = layer._statistics(scaled, params)
    with np.errstate(over="ignore", invalid="ignore"):
        values = _entry(product, scaled, pick, params, stats, e_scaled, rows.shape[-1])
    # At its own scale x has spread 1: only a scaled epsilon near or beyond the float range
    # overflows, and every term then carries a negative power of it: the product is below range.
    values = np.where(np.isfinite(values), values, 0.0)
    return _rescale.times_power(values, m, product.degree)


def _entry(
    product: Product,
    scaled: np.ndarray,
    given: list[np.ndarray],
    parameters: list[np.ndarray],
    stats: list[np.ndarray],
    e: np.ndarray,
    size: int,
) -> np.ndarray:
    at = (scaled, *given, *parameters)
    means = [
        np.mean(np.broadcast_to(monomial(*at), scaled.shape), axis=-1, keepdims=True) for monomial in product.monomials
    ]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.broadcast_to(product.entry(*at, *stats, e, size, *means), scaled.shape)
