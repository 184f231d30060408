"""Emit a layer's derived forward and backward pass as a self-contained module.

``emit(key, target)`` builds the backend-neutral `Program` from the registry's
rows (`derivations.codegen._program`) and prints it with one backend per
file: NumPy (`_numpy`), PyTorch (`_torch`) and C99 (`_c`), each a subclass
of a SymPy code printer, with common subexpressions eliminated by ``sympy.cse``.
"""

from __future__ import annotations

from collections.abc import Callable

from derivations.catalog import LAYERS
from derivations.codegen import _c, _numpy, _torch
from derivations.codegen._program import Program, program
from derivations.derive.grouped import Grouped

TARGETS: dict[str, Callable[[Program], str]] = {"numpy": _numpy.emit, "torch": _torch.emit, "c": _c.emit}


def emit(key: str, target: str) -> str:
    """The source of layer ``key``'s forward and backward pass for ``target``."""
    if key not in LAYERS:
        raise ValueError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}; got {target!r}")
    layer = LAYERS[key]
    if isinstance(layer, Grouped):
        # The emitted code works on one row; a row of this layer is one block of the base.
        raise ValueError(
            f"layer {key} is {layer.base.key} applied to each {layer.blocks} (n is {layer.size}): "
            f"emit --layer {layer.base.key} and apply it to each {layer.blocks}'s entries"
        )
    if layer.scalars:
        # The emitted signature is (x, epsilon, per-feature parameters); a scalar input is not one.
        names = ", ".join(name for name, _ in layer.scalars)
        raise ValueError(f"layer {key} takes the scalar {names}, which the emitted code does not take")
    if layer.subsets:
        # The emitted signature has no keyword that picks the entries a partial mean runs over.
        names = ", ".join(f"{subset.keyword} ({subset.meaning})" for subset in layer.subsets)
        raise ValueError(f"layer {key} takes {names}, which the emitted code does not take")
    return TARGETS[target](program(layer))


__all__ = ["TARGETS", "Program", "emit", "program"]
