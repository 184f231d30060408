"""Input checks shared by every numeric function; errors name the argument."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_FLOAT64_MAX = np.finfo(np.float64).max
_FLOAT64_SMALLEST = np.finfo(np.float64).smallest_subnormal


def _real(value: Any, name: str) -> np.ndarray:
    if isinstance(value, np.ma.MaskedArray):
        # Its mask would be silently dropped by every computation here.
        raise ValueError(f"{name} must not be a masked array; fill or compress it first")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a real number or an array of them ({error})") from None
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be real numbers, got {type(value).__name__} of dtype {array.dtype}")
    if array.dtype.kind == "f" and array.dtype.itemsize > 8:
        # Computed in float64: a wider float must fit it (NaN and inf are reported as not finite).
        magnitude = np.abs(array[np.isfinite(array)])
        if magnitude.size and np.max(magnitude) > _FLOAT64_MAX:
            raise ValueError(
                f"{name} has entries beyond float64's range (dtype {array.dtype}); at most {_FLOAT64_MAX:g}"
            )
        nonzero = magnitude[magnitude != 0]
        if nonzero.size and np.min(nonzero) < _FLOAT64_SMALLEST:
            raise ValueError(
                f"{name} has non-zero entries below float64's range (dtype {array.dtype}); "
                f"at least {_FLOAT64_SMALLEST:g} in magnitude"
            )
    return array


# Up to this many entries a finiteness check is one `np.isfinite` (its boolean temporary small);
# above it, the dot product below, which writes nothing.
SMALL = 1024


def _finite(array: np.ndarray, name: str) -> None:
    if array.dtype.kind != "f":
        return
    if array.size <= SMALL and np.isfinite(array).all():
        return  # no floating-point state to set, for a call's fixed cost
    # A finite sum of squares means every entry is finite (NaN and inf reach it): one pass,
    # nothing written, by BLAS's dot product where the entries are contiguous (about twice as
    # fast as a reduction).  Only a sum that is not (a bad entry, or finite entries
    # overflowing) is searched.
    with np.errstate(all="ignore"):
        flat = array.reshape(-1) if array.flags.c_contiguous else None
        total = np.dot(flat, flat) if flat is not None else np.add.reduce(array, axis=None)
        if np.isfinite(total):
            return
    if not np.isfinite(array).all():
        bad = array[~np.isfinite(array)].flat[0]
        raise ValueError(f"{name} must be finite, got {bad}")


def result_dtype(*values: Any) -> np.dtype:
    """float32 only when every typed floating input is float32; else float64.

    Python scalars are weak, as in NumPy: they do not widen a float32 array.
    """
    # type() rather than isinstance: np.float64 subclasses float but is strong.
    typed = [np.asarray(v).dtype for v in values if type(v) not in (int, float)]
    floats = [d for d in typed if d.kind == "f"]
    if typed and len(floats) == len(typed) and all(d == np.float32 for d in floats):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def epsilon(value: Any) -> np.ndarray:
    """epsilon as float64: real, finite and positive, scalar or array."""
    if type(value) is float and 0.0 < value < math.inf:  # the common case, in one comparison
        return np.asarray(value)
    array = _real(value, "epsilon")
    _finite(array, "epsilon")
    if not (array > 0).all():
        raise ValueError(f"epsilon must be positive, got {array[array <= 0].flat[0]}")
    return array.astype(np.float64, copy=False)


def amplitude(value: Any) -> np.ndarray:
    """t as float64: real and finite."""
    array = _real(value, "t")
    _finite(array, "t")
    return array.astype(np.float64, copy=False)


def vector(value: Any, keep_float: bool = False, finite: bool = True) -> np.ndarray:
    """x with shape (..., n), n >= 2, every entry finite; as float64, or (``keep_float``)
    in its own floating dtype, integers still becoming float64.  With ``finite`` False the
    caller checks the entries' finiteness itself (`numeric.kernels.kernel.fused`)."""
    array = _real(value, "x")
    if array.ndim == 0 or array.shape[-1] < 2:
        raise ValueError(f"x must have shape (..., n) with n >= 2 features, got shape {array.shape}")
    if finite:
        _finite(array, "x")
    if keep_float and array.dtype.kind == "f":
        return array
    return array.astype(np.float64, copy=False)


def vector_like(value: Any, name: str, shape: tuple[int, ...], keep_float: bool = False) -> np.ndarray:
    """A vector besides x (the upstream gradient dy, a direction v): real, finite, one entry
    per feature, in a shape that broadcasts with x's ``shape``."""
    array = _real(value, name)
    if array.ndim == 0 or array.shape[-1] != shape[-1]:
        raise ValueError(f"{name} must have shape (..., {shape[-1]}), one entry per feature of x; got {array.shape}")
    try:
        np.broadcast_shapes(array.shape, shape)
    except ValueError:
        raise ValueError(f"{name} of shape {array.shape} does not broadcast with x's shape {shape}") from None
    _finite(array, name)
    if keep_float and array.dtype.kind == "f":
        return array
    return array.astype(np.float64, copy=False)


def parameter(value: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A per-feature parameter (gain, bias) as float64, finite, broadcast to x's ``shape``
    without enlarging it: shape (n,), or any shape that broadcasts to x's."""
    array = _real(value, name)
    _finite(array, name)
    if array.size == 0:
        raise ValueError(f"{name} must have at least one entry, got shape {array.shape}")
    if array.ndim and array.shape == tuple(shape):  # x's own shape: nothing to broadcast
        view = array.astype(np.float64, copy=False).view()
        view.flags.writeable = False  # read-only, as a broadcast view is: the caller's array is not written
        return view
    expected = f"shape ({shape[-1]},) or one that broadcasts to x's shape {shape}" if shape else "shape (n,)"
    if array.ndim == 0 or (shape and array.shape[-1] != shape[-1]):
        raise ValueError(f"{name} must have one entry per feature, {expected}; got {array.shape}")
    try:
        fits = not shape or np.broadcast_shapes(array.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name} must have {expected}; got {array.shape}")
    return np.broadcast_to(array.astype(np.float64, copy=False), shape or array.shape)


def output(array: np.ndarray, dtype: np.dtype) -> Any:
    """Round to the result dtype; a 0-d result becomes a NumPy scalar."""
    rounded = np.asarray(array).astype(dtype, copy=False)
    if rounded.ndim == 0:
        return rounded[()]
    # A broadcast view is read-only and shares memory: hand out an array of its own.
    return rounded if rounded.flags.writeable else rounded.copy()


def bound(
    key: str, names: tuple[str, ...], given: tuple[Any, ...], named: dict[str, Any], also: str = ""
) -> dict[str, Any]:
    """The parameters ``names`` of layer ``key`` from positional ``given`` and keyword ``named``
    (``also`` lists the keywords taken elsewhere, for the messages); a `ValueError` names a wrong one."""
    if len(given) > len(names):
        raise ValueError(f"{key} takes parameters {list(names)}{also}, got {len(given)} positional")
    values = dict(zip(names, given, strict=False))
    for name, value in named.items():
        if name not in names:
            raise ValueError(f"{name} is not a parameter of {key} (parameters: {list(names)}{also})")
        if name in values:
            raise ValueError(f"{name} is given both by position and by name")
        values[name] = value
    return values


def indicators(
    key: str, subsets: tuple[Any, ...], named: dict[str, Any], shape: tuple[int, ...], strict: bool = False
) -> list[np.ndarray]:
    """Each subset's indicator, from its keyword in ``named`` (taken out of it) or its default,
    broadcast to ``shape``; with ``strict``, any other keyword is refused, naming layer ``key``."""
    out = []
    for subset in subsets:
        value = named.pop(subset.keyword, subset.default)
        out.append(np.broadcast_to(np.asarray(subset.entries(shape[-1], value), dtype=np.float64), shape))
    if strict and named:
        raise ValueError(f"{next(iter(named))} is not an argument of {key}")
    return out


def parameters(
    key: str,
    names: tuple[str, ...],
    subsets: tuple[Any, ...],
    array: np.ndarray,
    given: tuple[Any, ...],
    named: dict[str, Any],
    defaults: dict[str, Any] | None = None,
) -> list[np.ndarray]:
    """Layer ``key``'s parameters ``names`` by position or name (or from ``defaults``, for one
    the result does not depend on), each real, finite and broadcast to x's shape; then the
    indicators of its ``subsets``."""
    if not subsets and not named and len(given) == len(names):  # every parameter by position
        return [parameter(value, name, array.shape) for name, value in zip(names, given, strict=True)]
    named = dict(named)
    picked = indicators(key, subsets, named, array.shape)
    # A subset's keyword (partial RMSNorm's p) is named only, never positional.
    keywords = "".join(f"; keyword {subset.keyword}=" for subset in subsets)
    values = {**(defaults or {}), **bound(key, names, given, named, keywords)}
    missing = [name for name in names if name not in values]
    if missing:
        raise ValueError(f"{missing[0]} is required by {key}")
    return [parameter(values[name], name, array.shape) for name in names] + picked
