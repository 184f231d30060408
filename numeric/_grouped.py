"""The numeric side of `derivations.derive.grouped.Grouped`: the base layer's functions, block by block.

A block is what the base layer normalizes: a group of ``C / groups``
channels on the last axis (GroupNorm), or one feature's column of a (B, F)
batch (BatchNorm).  Inputs are rearranged so that a block lies along the
last axis, the base layer's compiled functions run on them, and the result
is put back; the Jacobian is block-diagonal, as the derivation proved.
Nothing here is a formula: it is bookkeeping of axes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from derivations import quantities
from derivations.derive.grouped import Grouped
from numeric import _layer, _validate

# How a per-block value of a statistics function combines into the whole map's, by the
# independent reference the registry names for it: ||J||_2 of a block-diagonal J is the
# largest block's, and the mean square of the output is the mean over equal-sized blocks.
_COMBINE = {"norm2_of_jacobian": np.max, "mean_square_of_output": np.mean}


class NumericGrouped(_layer.NumericLayer):
    """``base`` applied to each block; a 1-D input is one block."""

    definition: Grouped

    def __init__(self, definition: Grouped) -> None:
        self.definition = definition
        self.key = definition.key
        self.base = _layer.facade(definition.base.key)
        self._c = self.base._c

    @cache  # noqa: B019 - facades are interned by `facade`
    def names(self) -> tuple[str, ...]:
        """The base's functions: the same quantities, per block."""
        return self.base.names()

    # --- blocks -------------------------------------------------------------

    def _count(self, named: dict[str, Any]) -> int:
        argument = self.definition.argument
        if argument is None:
            return 1
        count = named.pop(argument, 1)
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"{argument} must be a positive integer; got {count!r}")
        return int(count)

    def _blocks(self, value: Any, name: str, count: int) -> np.ndarray:
        """``value`` with each block along the last axis: (..., groups, n) or (F, B)."""
        array = np.asarray(value)
        if array.ndim == 0:
            raise ValueError(f"{name} must have at least one axis; got a scalar")
        if self.definition.argument is None:
            if array.ndim > 2:
                raise ValueError(f"{name} must have shape (B, features) or (B,); got shape {array.shape}")
            if name == "x" and array.shape[0] < 2:
                raise ValueError(f"x must have shape (B, features) with B >= 2 examples; got shape {array.shape}")
            return array.T
        size = array.shape[-1]
        if size % count:
            raise ValueError(f"{name} has {size} entries on its last axis, not a multiple of groups={count}")
        if name == "x" and size // count < 2:
            raise ValueError(f"groups={count} leaves {size // count} entry per group of x's {size}; a group needs 2")
        return array.reshape(*array.shape[:-1], count, size // count)

    def _unblock(self, value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        if self.definition.argument is None:
            # (..., features, B) back to (..., B, features); a single feature, x of shape (B,), was one row.
            return np.swapaxes(value, -1, -2) if len(shape) == 2 else value
        return value.reshape(*value.shape[:-2], shape[-1]) if value.ndim >= 2 else value

    def _epsilon(self, epsilon: Any, shape: tuple[int, ...]) -> Any:
        """epsilon, told in the caller's layout (x's ``shape``), as the blocks take it: for groups, as the
        base takes it for the rows of x; for a batch, for the features (the blocks), one per feature as
        (F,) or as keepdims would give it, (1, F), any other shape's axes in front.  A shape that does
        not broadcast is named in the caller's layout, not the blocks'."""
        e = np.asarray(epsilon)
        if not e.ndim:
            return epsilon
        against: tuple[int, ...]
        if self.definition.argument is None:
            if len(shape) == 2 and e.shape == (1, shape[-1]):
                e = e.reshape(-1)
            against, told = ((shape[-1],) if len(shape) == 2 else ()), "the features"
        else:
            against, told = shape[:-1], "the batch shape"
        try:
            np.broadcast_shapes(e.shape, against)
        except ValueError:
            raise ValueError(f"epsilon of shape {e.shape} does not broadcast with {told} {against} of x") from None
        return e if self.definition.argument is None else e[..., None]  # a row's epsilon, shared by its groups

    def _call(self, function: Any, x: Any, epsilon: Any, vectors: tuple[Any, ...], named: dict[str, Any]) -> Any:
        named = dict(named)
        count = self._count(named)
        if named:
            raise ValueError(f"{next(iter(named))} is not an argument of {self.key}")
        shape = np.shape(x)
        # Each vector broadcast against x in the caller's layout (a batch's dy of one row is every row's),
        # and told so, before the blocks are rearranged.
        whole = []
        for value, name in zip(vectors, ("dy", "v"), strict=False):
            try:
                whole.append(np.broadcast_to(value, np.broadcast_shapes(shape, np.shape(value))))
            except ValueError:
                raise ValueError(
                    f"{name} of shape {np.shape(value)} does not broadcast with x's shape {shape}"
                ) from None
        blocked = [self._blocks(v, name, count) for v, name in zip((x, *whole), ("x", "dy", "v"), strict=False)]
        return function(blocked[0], self._epsilon(epsilon, shape), *blocked[1:]), shape

    # --- the functions --------------------------------------------------------

    def forward(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        """The base layer applied to each block of x."""
        self._no_parameters(parameters)
        value, shape = self._call(self.base.forward, x, epsilon, (), named)
        return self._unblock(value, shape)

    def jacobian(self, x: ArrayLike, epsilon: ArrayLike, *parameters: ArrayLike, **named: Any) -> np.ndarray:
        """Groups: the block-diagonal (..., C, C).  A batch: (features, B, B), one coupling matrix per feature."""
        self._no_parameters(parameters)
        blocks, _shape = self._call(self.base.jacobian, x, epsilon, (), named)
        if self.definition.argument is None:
            return blocks
        count, size = blocks.shape[-3], blocks.shape[-1]
        whole = np.zeros((*blocks.shape[:-3], count * size, count * size), dtype=blocks.dtype)
        for block in range(count):
            span = slice(block * size, (block + 1) * size)
            whole[..., span, span] = blocks[..., block, :, :]
        return whole

    jacobian_from_entry = jacobian

    def products(self, names: list[str], x: ArrayLike, epsilon: ArrayLike, *args: Any, **named: Any) -> list[Any]:
        vectors = args[: len(self._c.product(names[0]).vectors)]
        self._no_parameters(args[len(vectors) :])

        def run(xb: Any, e: Any, *vb: Any) -> Any:
            return self.base.products(names, xb, e, *vb)

        (value, *rest), shape = self._call(run, x, epsilon, vectors, named)
        return [self._unblock(value, np.broadcast_shapes(shape, *(np.shape(v) for v in vectors))), *rest]

    @cache  # noqa: B019 - facades are interned by `facade`
    def function(self, numeric: str) -> Callable[..., Any] | None:
        """The base's function; one of x (and epsilon) alone is evaluated per block."""
        found = super().function(numeric)
        if not isinstance(found, _layer._Function) or found._strategy is not _layer.NumericLayer._of_statistics:
            return found
        quantity = quantities.by_numeric(self.definition, numeric)
        combine = _COMBINE.get(quantity[1].reference or "") if quantity else None
        return _PerBlock(self, self.base.function(numeric), combine)

    def _no_parameters(self, given: tuple[Any, ...]) -> None:
        if given:
            raise TypeError(f"{self.key} takes no parameters besides x and epsilon; got {len(given)} more")

    def eigenvalues(self, x: ArrayLike, epsilon: ArrayLike, **named: Any) -> np.ndarray:
        """Every eigenvalue of the block-diagonal J: each block's, together, ascending."""
        value, _ = self._call(self.base.eigenvalues, x, epsilon, (), named)
        if self.definition.argument is None:
            return _validate.output(np.sort(np.ravel(value)), value.dtype) if value.ndim > 1 else value
        return np.sort(value.reshape(*value.shape[:-2], -1), axis=-1)


class _PerBlock:
    """A function of (x, epsilon) of the base, evaluated on each block: shape (..., groups) or
    (features,); ``combine`` reduces the blocks where the quantity is one of the whole map."""

    def __init__(self, layer: NumericGrouped, function: Any, combine: Any) -> None:
        self._layer, self._function, self._combine = layer, function, combine
        self.__name__ = self.__qualname__ = function.__name__
        self.__doc__ = function.__doc__ + (" Per block" if combine is None else " Over the blocks") + "."
        self.latex = function.latex

    def __call__(self, x: Any, epsilon: Any, **named: Any) -> Any:
        value, _ = self._layer._call(self._function, x, epsilon, (), named)
        return self._combine(value, axis=-1) if self._combine is not None and np.ndim(value) else value

    def __repr__(self) -> str:
        return f"<function numeric.{self._layer.key}.{self.__name__}>"


_layer.register(Grouped, NumericGrouped)
