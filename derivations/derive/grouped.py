r"""A layer applied block by block: GroupNorm (groups of channels) and BatchNorm (across the batch).

GroupNorm normalizes each of G contiguous groups of a (C,)-row as LayerNorm
normalizes a whole row; BatchNorm in training mode normalizes each feature
across the B examples of a batch.  Either way every block is the base layer
on n entries (n = C / G channels of a group, or the batch size n = B), and
nothing couples two blocks: the Jacobian of the whole map is block-diagonal,
each block the base layer's Jacobian for symbolic n.

The wrapper therefore *is* its base layer, block by block: its formulas are
the base's (`Layer.derived_as`), restated per block, and it adds one result,
the block structure, proved by exact differentiation of the blocked
definition at explicit sizes.

>>> from derivations import LAYERS
>>> from derivations.derive.grouped import block_structure
>>> block_structure(LAYERS["groupnorm"])[1].split(":")[0]
'exact differentiation at (blocks, n) = (2, 2), (3, 2), (2, 3)'
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache

import sympy as sp

from derivations.core.formula import Established, Formula
from derivations.core.layer import Layer, Rewrapped, rewrapped
from derivations.core.proof import DerivationError, equal
from derivations.symbols import J, n, x

# The explicit (number of blocks, block size) at which the structure is proved.
SIZES = ((2, 2), (3, 2), (2, 3))


@dataclass(frozen=True, eq=False)
class Grouped(Rewrapped):
    """``base`` applied to each block of entries; build it with `grouped`.

    ``blocks`` names what a block is (``"group"`` or ``"feature"``),
    ``size`` what n counts inside a block, ``argument`` the numeric keyword
    that sets the number of blocks (None: the blocks are an axis of x), and
    ``axis`` the axis of x that a block's n entries lie along.
    """

    blocks: str = field(kw_only=True)
    size: str = field(kw_only=True)
    argument: str | None = field(kw_only=True)
    axis: int = field(kw_only=True)

    def restate(self, formula: Formula) -> Formula:
        return replace(formula, layer=self.key, statement=f"{formula.statement} Per {self.blocks}: n is {self.size}.")


def grouped(
    base: Layer,
    key: str,
    title: str,
    blocks: str,
    size: str,
    argument: str | None,
    axis: int,
    used_by: tuple[str, ...] = (),
) -> Grouped:
    """The layer that applies ``base`` to each block, with the base's definition and statements."""
    return rewrapped(Grouped, base, key, title, used_by, blocks=blocks, size=size, argument=argument, axis=axis)


def _blocked_output(layer: Grouped, count: int, size: int) -> list[sp.Expr]:
    """Every output entry of ``count`` blocks of ``size`` entries, entry a*size + m of block a."""
    outputs = []
    for block in range(count):
        shift = {x[m]: x[block * size + m] for m in range(size)}
        outputs += [layer.base.explicit_entry(size, m).xreplace(shift) for m in range(size)]
    return outputs


@cache
def block_structure(layer: Grouped) -> tuple[sp.Basic, str]:
    """J = diag(J_1, ..., J_blocks), each J_a the base's Jacobian of block a: proved at `SIZES`."""
    for count, size in SIZES:
        total = count * size
        whole = sp.Matrix(_blocked_output(layer, count, size)).jacobian([x[m] for m in range(total)])
        # Block 0 is the base on x[0], ..., x[size - 1] itself: its block of ``whole`` is the base's J.
        single = whole[:size, :size]
        for row in range(total):
            for column in range(total):
                block, other = divmod(row, size), divmod(column, size)
                if block[0] != other[0]:
                    if whole[row, column] != 0:
                        raise DerivationError(f"{layer.key}: J[{row}, {column}] couples two blocks")
                    continue
                shift = {x[m]: x[block[0] * size + m] for m in range(size)}
                moved = single[block[1], other[1]].xreplace(shift)
                # Most entries are the same tree (differentiation commutes with the shift); the
                # rest need the proof tactics.
                if whole[row, column] != moved:
                    equal(
                        whole[row, column], moved, f"{layer.key}.jacobian[{row}, {column}] at {count} blocks of {size}"
                    )
    blocks = sp.MatrixSymbol(rf"\operatorname{{diag}}(J_1, \ldots, J_{{{_count_symbol(layer)}}})", n, n)
    sizes = ", ".join(f"({count}, {size})" for count, size in SIZES)
    detail = (
        f"exact differentiation at (blocks, n) = {sizes}: every entry outside the diagonal blocks is 0, "
        f"every entry inside equals J of {layer.base.key}"
    )
    return sp.Eq(J, blocks), detail


def _count_symbol(layer: Grouped) -> str:
    return "G" if layer.argument else "F"


def block_formula(layer: Layer, _: object, name: str) -> Formula:
    if not isinstance(layer, Grouped):
        raise DerivationError(f"{layer.key} is not applied block by block")
    relation, detail = block_structure(layer)
    what = "group" if layer.argument else "feature"
    return Formula(
        name,
        f"The Jacobian of the whole map is block-diagonal: one block J_a per {what}, the Jacobian of "
        f"{layer.base.key} of that {what}'s n entries; nothing couples two {layer.blocks}s.",
        relation,
        ("epsilon > 0", "n >= 2"),
        Established.EXPLICIT_N,
        f"{detail}; for every size by construction: a {layer.blocks}'s statistics are means over its own entries",
        "",
        layer.key,
    )


def is_grouped(layer: Layer, _: object) -> bool:
    return isinstance(layer, Grouped)
