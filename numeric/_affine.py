"""The numeric side of `derivations.derive.affine.Affine`: a wrapper around the base layer's functions.

The forward map is the affine layer's own lambdified output; the Jacobian is
diag(gain) times the base layer's (the factorization the derivation proved),
and the bound is max|gain| times the base layer's bound.  Nothing else here
knows of gains.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from derivations.derive import scaling, spectral
from derivations.derive.affine import Affine
from derivations.symbols import epsilon as eps_symbol
from derivations.symbols import gamma_max
from numeric import _layer, _validate
from numeric.kernels import rescale as _rescale
from numeric.kernels.lambdify import compile


class NumericAffine(_layer.NumericLayer):
    """``gain * base(x) + bias``: forward, Jacobian and the bound over gains."""

    definition: Affine
    methods = ("bound",)

    def __init__(self, definition: Affine) -> None:
        super().__init__(definition)
        self.base = _layer.facade(definition.base.key)

    @cached_property
    def _base_bound(self) -> tuple[Any, int]:
        """The derived bound is gamma_max times the base's: the base's part, compiled, and its degree."""
        top = spectral.bound_value(self.definition).xreplace({gamma_max: 1})
        return compile(top, (eps_symbol,)), scaling.degree_of(self.definition, top, "bound")

    def jacobian(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        """diag(gain) J_base, shape (..., n, n); the bias does not enter."""
        # The base's J (x checked there), in the result's dtype and of x's batch shape (which
        # gain's broadcasts to), is an array of this call's own: scaled in place, each product
        # rounded once.  A gain the result's dtype holds exactly is taken in it: the product of
        # two float32 numbers is exact in float64, so rounding it once is float32's own product.
        base = self.base.jacobian(x, epsilon)
        rows = base[..., 0]  # of x's shape
        gain, _ = self._parameters(rows, parameters, named, defaults={"bias": np.zeros(rows.shape[-1])})
        if base.dtype != gain.dtype:
            with np.errstate(all="ignore"):  # a gain float32 cannot hold (inf, or rounded) stays float64
                narrow = gain.astype(base.dtype)
                if (narrow == gain).all():
                    gain = narrow
        return np.multiply(base, gain[..., :, None], out=base)

    @property
    def through_eigen(self) -> bool:
        return self.base.through_eigen

    def products(self, names: list[str], x: ArrayLike, epsilon: ArrayLike, *args: Any, **named: Any) -> list[Any]:
        """The Hessian product as the base's for the upstream gradient gain * dy (proved:
        H(g) = H_base(gain g)), so that it goes along the base's eigen directions too."""
        product = self._c.product(names[0])
        if len(product.vectors) != 2 or len(names) != 1 or not self.base._c.hvp_pairs or len(args) < 2:
            return super().products(names, x, epsilon, *args, **named)
        dy, v, *parameters = args
        array = np.asarray(x)
        full = np.broadcast_shapes(array.shape, np.shape(dy), np.shape(v))
        gain, _ = self._parameters(
            np.broadcast_to(array, full), tuple(parameters), named, defaults={"bias": np.zeros(full[-1])}
        )
        upstream = _validate.vector_like(dy, "dy", array.shape, keep_float=True)
        (value,) = self.base.products(names, x, epsilon, upstream.astype(np.float64) * gain, v)
        return [_validate.output(value, _validate.result_dtype(x, epsilon, dy, v))]

    def jacobian_product(
        self, kind: str, scaled: np.ndarray, stats: list[np.ndarray], e: np.ndarray, w: np.ndarray, parameters: list
    ) -> np.ndarray | None:
        """J = diag(gain) J_base, proved: J^T g = J_base^T (gain * g) and J v = gain * (J_base v),
        with the base's product through its eigenstructure where it has one."""
        gain = parameters[0]
        inner = gain * w if kind == "transpose" else w
        value = self.base.jacobian_product(kind, scaled, stats, e, inner, [])
        if value is None:
            return None
        return value if kind == "transpose" else gain * value

    def bound(self, epsilon: ArrayLike, gain: ArrayLike) -> np.ndarray:
        """The derived bound on ||diag(gain) J||_2 over all inputs: max|gain| times the base's bound."""
        array = _validate.parameter(gain, "gain", ())
        largest = np.max(np.abs(array), axis=-1)
        e = _validate.epsilon(epsilon)
        try:
            np.broadcast_shapes(e.shape, largest.shape)
        except ValueError:
            raise ValueError(
                f"epsilon of shape {e.shape} does not broadcast with the batch shape {largest.shape} of gain"
            ) from None
        value = _rescale.elementwise(*self._base_bound, self._c.epsilon_degree, e)
        return _validate.output(np.asarray(value) * largest, _validate.result_dtype(epsilon, gain))


_layer.register(Affine, NumericAffine)
