"""Every layer's formulas, in a stable order, looked up by name."""

from __future__ import annotations

from functools import cache

from derivations import eigen, jacobian, layernorm, moments, response, rmsnorm, spectral
from derivations._formula import Formula
from derivations._layer import Layer

LAYERS: dict[str, Layer] = {layer.key: layer for layer in (layernorm.LAYER, rmsnorm.LAYER)}

# The derivations in the order `make derive` prints them.
_STAGES = (response, jacobian, eigen, spectral, moments)


@cache
def formulas(key: str = "layernorm") -> tuple[Formula, ...]:
    """The derived formulas of layer ``key``, in a stable order."""
    if key not in LAYERS:
        raise ValueError(f"layer must be one of {sorted(LAYERS)}, got {key!r}")
    layer = LAYERS[key]
    return tuple(f for stage in _STAGES for f in stage.formulas(layer))


def formula(name: str, key: str = "layernorm") -> Formula:
    """One formula by its stable name."""
    for f in formulas(key):
        if f.name == name:
            return f
    known = ", ".join(f.name for f in formulas(key))
    raise ValueError(f"name must be one of {known}; got {name!r}")
