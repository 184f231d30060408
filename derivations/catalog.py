"""Every layer's formulas, in a stable order, looked up by name."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from functools import cache

from derivations import (
    eigen,
    jacobian,
    layernorm,
    layernorm_affine,
    layernorm_std_eps,
    moments,
    response,
    rmsnorm,
    rmsnorm_eps_outside,
    scaling,
    spectral,
)
from derivations._formula import Formula
from derivations._layer import Layer

LAYERS: dict[str, Layer] = {
    layer.key: layer
    for layer in (
        layernorm.LAYER,
        layernorm_affine.LAYER,
        layernorm_std_eps.LAYER,
        rmsnorm.LAYER,
        rmsnorm_eps_outside.LAYER,
    )
}

# The derivations in the order `make derive` prints them.
_STAGES = (response, jacobian, eigen, spectral, moments, scaling)


# Bare names such as "response" refer to the core layer.
CORE = "layernorm"


@cache
def formulas(key: str = CORE) -> tuple[Formula, ...]:
    """The derived formulas of layer ``key``, in a stable order."""
    if key not in LAYERS:
        raise ValueError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}")
    layer = LAYERS[key]
    return tuple(f for stage in _STAGES for f in stage.formulas(layer))


def formula(name: str, key: str | None = None) -> Formula:
    """One formula by its stable name: ``<layer>.<name>``, or a bare core name."""
    if key is None:
        key, _, name = name.rpartition(".")
        key = key or CORE
    for f in formulas(key):
        if f.name == name:
            return f
    known = ", ".join(f.qualified for f in formulas(key))
    raise ValueError(f"name must be one of {known}; got {name!r}")


def _rows(keys: tuple[str, ...]) -> list[dict[str, object]]:
    return [f.row() for key in keys for f in formulas(key)]


def rows(keys: Sequence[str]) -> list[dict[str, object]]:
    """The rendered rows of several layers, in the order given.

    Layers are independent, so on a machine with more than one core they are
    derived in forked worker processes.  A layer built on a base layer goes
    to the same worker as its base, which then derives the base only once.
    """
    for key in keys:
        if key not in LAYERS:
            raise ValueError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}")
    groups: dict[str, list[str]] = {}
    for key in keys:
        base = LAYERS[key].base
        groups.setdefault(base.key if base is not None and base.key in keys else key, []).append(key)
    tasks = [tuple(group) for group in groups.values()]
    workers = min(len(tasks), os.cpu_count() or 1)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        done = [_rows(task) for task in tasks]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            done = pool.map(_rows, tasks, chunksize=1)
    order = {key: position for position, key in enumerate(keys)}
    # A stable sort by layer keeps each layer's own stable order.
    return sorted((row for chunk in done for row in chunk), key=lambda row: order[str(row["layer"])])
