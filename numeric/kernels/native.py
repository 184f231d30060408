"""The compiled path: the C that `derivations.codegen` emits, built into a shared library.

For a layer the emitted signature takes (`derivations.codegen.emittable`), the source of
`derivations.codegen.library` (the emitted C, and batch drivers over rows of float64 and
float32) is compiled with the system's C compiler on first use, with ``-O3 -march=native`` and
never ``-ffast-math``, and cached like the derivations (`derivations.cache`: an authenticated
entry, keyed on the source, the compiler's identity, its flags and the processor).  `forward`
and `vjp` then call it for the plain cases (x of float32 or float64 rows, epsilon a scalar or
one per row, the parameters the same in every row); any other case, and every case where no
library could be built, is NumPy's (`numeric.kernels.kernel`), silently.

The environment variable ``EPSILON_LAYERNORM_BACKEND`` chooses: ``numpy`` turns the compiled
path off, ``c`` requires it (a layer whose library cannot be built raises), anything else or
unset uses it where it can be built.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from derivations import cache
from numeric import _validate

ENVIRONMENT = "EPSILON_LAYERNORM_BACKEND"
# Exact IEEE arithmetic: no -ffast-math (nor -Ofast), no contraction of a * b + c into one
# rounding, which would make the result depend on the processor.
FLAGS = ("-std=c99", "-O3", "-march=native", "-ffp-contract=off", "-fPIC", "-shared")
BUILD_SECONDS = 120.0
# Rows this short of a layer that applies J through its eigenstructure are NumPy's: the emitted
# entry formula of dx projects out the explicit directions by subtraction, and with one or two
# directions left over it cancels (at n = 3, epsilon = 1e-300: 15 ulp where the eigenstructure's
# path has 7; at n = 2 half the digits).  At n = 16 the accuracy grid finds the two paths alike.
EIGEN_BELOW = 3
# A backward driver's status for a row it refuses (`derivations.codegen._c.APART_BINADES`): the
# root of epsilon dwarfs the row, and a parameter's gradient is NumPy's path's, which takes such
# rows at several scales (`numeric.kernels.rescale`).
REFUSED = -2
# Entries of the rows converted at once where an input is not already as a driver takes it (of
# another dtype, broadcast, strided): the copies stay small, never the size of the input.
BLOCK = 2**16
# The width of each parameter's pointer type, by dtype: the drivers' names end in it.
SUFFIX = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32"}

_long, _int, _double, _pointer = ctypes.c_long, ctypes.c_int, ctypes.c_double, ctypes.c_void_p


@functools.cache
def _choice() -> str:
    """EPSILON_LAYERNORM_BACKEND, read once a process (and again after `clear`)."""
    return os.environ.get(ENVIRONMENT, "").strip().lower()


def compiler() -> list[str] | None:
    """The C compiler's command: ``$CC`` where it is set (its words, the first found on PATH:
    ``ccache gcc`` too), else ``cc``, ``gcc`` or ``clang`` on PATH; None where there is none."""
    given = os.environ.get("CC", "").strip()
    try:
        candidates = [shlex.split(given)] if given else [["cc"], ["gcc"], ["clang"]]
    except ValueError:
        return None  # unbalanced quotes: no command
    for words in candidates:
        found = shutil.which(words[0]) if words else None
        if found:
            return [found, *words[1:]]
    return None


@functools.cache
def _identity(command: tuple[str, ...]) -> bytes:
    """What a built library depends on besides its source: the compiler's command and version,
    the flags, the C library, and the processor (-march=native)."""
    try:
        version = subprocess.run([*command, "--version"], capture_output=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        version = b""
    processor = b""
    try:
        for line in Path("/proc/cpuinfo").read_bytes().splitlines():
            if line.startswith((b"flags", b"Features", b"model name")):
                processor += line
    except OSError:
        processor = platform.processor().encode()
    parts = ["\0".join(command), " ".join(FLAGS), platform.machine(), " ".join(platform.libc_ver())]
    return b"\0".join([*(part.encode() for part in parts), version, processor])


@dataclass(frozen=True)
class Library:
    """A layer's compiled drivers: ``forward[suffix]`` and ``backward[suffix]`` by dtype suffix."""

    key: str
    forward: dict[str, Any]
    backward: dict[str, Any]
    parameters: int  # how many per-feature parameters the layer takes
    products: tuple[str, ...]  # the backward products `backward` returns, by their registry names
    jacobian: dict[str, Any]  # by suffix, where J is assembled from the eigenstructure; else empty


class BuildError(RuntimeError):
    """A library that could not be built where ``EPSILON_LAYERNORM_BACKEND=c`` requires it."""


def _build(source: str, command: list[str]) -> bytes:
    """The shared library of ``source``, compiled by ``command``, as bytes."""
    with tempfile.TemporaryDirectory(prefix="epsilon-layernorm-c-") as folder:
        c_file, library = Path(folder) / "layer.c", Path(folder) / "layer.so"
        c_file.write_text(source)
        done = subprocess.run(
            [*command, *FLAGS, "-o", str(library), str(c_file), "-lm"],
            capture_output=True,
            timeout=BUILD_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            raise BuildError(done.stderr.decode(errors="replace").strip()[-2000:] or "the compiler failed")
        return library.read_bytes()


def _load(payload: bytes) -> ctypes.CDLL:
    """The library whose bytes are ``payload`` (checked against the cache's tag when read), loaded
    from a file of this process's own that is removed again once loaded."""
    with tempfile.TemporaryDirectory(prefix="epsilon-layernorm-so-") as folder:
        path = Path(folder) / "layer.so"
        path.write_bytes(payload)
        return ctypes.CDLL(str(path))


def library(key: str) -> Library | None:
    """Layer ``key``'s compiled drivers, built (or read from the cache) once a process, or None:
    the compiled path is off, the layer is not one the emitted C takes, or no compiler built it
    (with ``EPSILON_LAYERNORM_BACKEND=c``, a `BuildError` saying why, every call)."""
    choice = _choice()
    if choice == "numpy":
        return None
    found = _built(key)
    if isinstance(found, str):
        if choice == "c":
            raise BuildError(f"{ENVIRONMENT}=c, but layer {key}'s C did not build: {found}")
        return None
    return found


def clear() -> None:
    """Forget every library this process built or loaded, and the environment's choice (a layer
    registered again, a test that sets EPSILON_LAYERNORM_BACKEND)."""
    _built.cache_clear()
    _choice.cache_clear()


@functools.cache
def _built(key: str) -> Library | str | None:
    """`library`'s work, once a process a layer: the drivers, None where the layer has no compiled
    path, or why they could not be built."""
    from derivations import catalog, codegen
    from derivations.catalog import LAYERS

    if key not in catalog.BUILT_IN:
        # A user's layer stays NumPy's: the emitted C evaluates a row at one scale, where a
        # statistic or a result can leave the float range (epsilon * x at x = 1e200,
        # tests/test_definition.py and tests/test_extreme_scales.py), and NumPy's path rescales
        # for it.  The built-in layers' C is checked at the extreme scales by the same tests.
        return None
    try:
        source = codegen.library(key)
        plan = codegen.program(LAYERS[key])
    except ValueError:
        return None  # not a layer the emitted signature takes: NumPy's
    command = compiler()
    if command is None:
        given = os.environ.get("CC", "").strip()
        return f"the compiler CC={given!r} is not found" if given else "no C compiler: set CC, or put cc on PATH"
    extra = hashlib.sha256(source.encode() + b"\0" + _identity(tuple(command))).digest()
    name = f"native library {key}"
    try:
        payload = cache.read(name, extra)
        try:
            handle = _load(payload) if payload is not None else None
        except OSError:
            handle = None  # an entry this system cannot load (another C library): built again
        if handle is None:
            payload = _build(source, command)
            handle = _load(payload)
            cache.write(name, payload, extra)
    except (BuildError, OSError, subprocess.SubprocessError) as error:
        return str(error) or type(error).__name__
    parameters = len(plan.parameters)
    gradients = len(plan.gradients) - 1
    forward, backward, jacobian = {}, {}, {}
    for suffix in SUFFIX.values():
        # The library holds a Jacobian where the layer's J is assembled from its eigenstructure
        # (`derivations.codegen.library`).
        function = getattr(handle, f"{key}_jacobian_rows_{suffix}", None)
        if function is not None:
            function.argtypes = [_long, _int, _pointer, _pointer, _double, _pointer, _pointer]
            function.restype = _long
            jacobian[suffix] = function
        vector = [_pointer] * parameters
        function = getattr(handle, f"{key}_{plan.forward}_rows_{suffix}")
        function.argtypes = [_long, _int, _pointer, _pointer, _double, *vector, _pointer]
        function.restype = _long
        forward[suffix] = function
        function = getattr(handle, f"{key}_backward_rows_{suffix}")
        function.argtypes = [
            _long,
            _int,
            _pointer,
            _pointer,
            _double,
            _pointer,
            *vector,
            _pointer,
            *[_pointer] * gradients,
        ]
        function.restype = _long
        backward[suffix] = function
    products = tuple(name.partition(".")[2] for name in plan.formulas[1:])
    return Library(key, forward, backward, parameters, products, jacobian)


_off = threading.local()


@contextlib.contextmanager
def off() -> Iterator[None]:
    """Within it, every function of this thread runs on NumPy's path (a benchmark's "before")."""
    was = getattr(_off, "on", False)
    _off.on = True
    try:
        yield
    finally:
        _off.on = was


def _library(key: str) -> Library | None:
    return None if getattr(_off, "on", False) else library(key)


def backend(key: str | None = None) -> str:
    """``"c"`` where layer ``key`` (the core layer by default) runs on the compiled path here,
    else ``"numpy"``; a key that is not a layer raises `KeyError` naming the nearest."""
    from derivations import CORE, LAYERS

    layer = LAYERS[CORE if key is None else key].key
    return "numpy" if _library(layer) is None else "c"


_CHAR = ctypes.c_char.from_buffer


def _address(array: np.ndarray) -> int:
    """The address of a contiguous array's first entry: through the buffer protocol where the
    array is writable (a quarter of the cost of ``array.ctypes.data``, a third of a single
    call's fixed cost), else from its array interface."""
    try:
        return ctypes.addressof(_CHAR(array))  # type: ignore[arg-type]  # an ndarray exports a buffer
    except TypeError:  # read-only (every array passed here is contiguous, with an entry)
        return array.__array_interface__["data"][0]


def _array(value: Any) -> np.ndarray | None:
    """``value`` as an ndarray of float32 or float64, or None: another dtype, ragged, or a
    subclass of ndarray (a masked array, which NumPy's path refuses)."""
    if isinstance(value, np.ndarray):
        return value if type(value) is np.ndarray and value.dtype in SUFFIX else None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None  # ragged, or not numbers: NumPy's path says what is wrong
    return array if array.dtype in SUFFIX else None


class _Prepared(NamedTuple):
    """The arguments of a driver: the rows (x, then each vector) as given, broadcast to the batch
    (converted a block at a time: `_blocks`), epsilon (one per row, or None and one value), the
    parameters (rounded to the result's dtype, held as doubles), the batch shape and the dtype."""

    rows: list[np.ndarray]
    epsilons: np.ndarray | None
    epsilon: float
    parameters: list[np.ndarray]
    batch: tuple[int, ...]
    dtype: np.dtype


def _prepared(x: Any, epsilon: Any, vectors: tuple[Any, ...], parameters: tuple[Any, ...]) -> _Prepared | None:
    """The arguments as a driver takes them, or None where it does not (NumPy's path then takes
    them, and says what is wrong with any): x and the vectors real arrays of n >= 2 entries a row,
    broadcast together with epsilon (finite and positive) to one batch of rows, and each
    parameter n finite entries, the same for every row."""
    found = [_array(value) for value in (x, *vectors)]
    arrays = [array for array in found if array is not None and array.ndim > 0]
    if len(arrays) < len(found):
        return None
    size = arrays[0].shape[-1]
    e = _array(epsilon) if type(epsilon) is not float else np.array(epsilon)
    if size < 2 or e is None or any(array.shape[-1] != size for array in arrays):
        return None
    try:
        # The parameters do not widen it (NumPy's path computes them in x's dtype too).
        dtype = _validate.result_dtype(x, epsilon, *vectors)
        batch = np.broadcast_shapes(*(array.shape[:-1] for array in arrays), e.shape)
    except (ValueError, TypeError):
        return None
    if not all(count > 0 for count in batch) or not ((e > 0) & (e < np.inf)).all():
        return None
    params = []
    for value in parameters:
        array = _array(value)
        if array is None or array.shape != (size,):
            return None
        with np.errstate(over="ignore"):  # a float64 beyond float32's range is inf, refused here
            rounded = np.ascontiguousarray(array, dtype=dtype)
        if not np.isfinite(rounded).all():
            return None
        params.append(_widened(rounded))
    rows = [np.broadcast_to(array, (*batch, size)) for array in arrays]
    if e.size == 1:
        return _Prepared(rows, None, float(e.reshape(-1)[0]), params, batch, dtype)
    flat = np.ascontiguousarray(np.broadcast_to(e, batch), dtype=np.float64).reshape(-1)
    return _Prepared(rows, flat, 0.0, params, batch, dtype)


def _plain(x: Any, epsilon: Any) -> bool:
    """Whether x is a C-contiguous float32 or float64 ndarray of rows of n >= 2 entries (at least
    one row) and epsilon a finite positive Python float (or a NumPy scalar of x's own type):
    what a driver takes as it is."""
    return (
        type(x) is np.ndarray
        and (type(epsilon) is float or type(epsilon) is x.dtype.type)  # not one that widens x
        and x.dtype in SUFFIX
        and x.ndim > 0
        and x.flags.c_contiguous
        and x.shape[-1] > 1
        and x.size > 0
        and 0.0 < epsilon < np.inf
    )


def _given(layer: Any, parameters: tuple[Any, ...], named: dict[str, Any]) -> tuple[Any, ...] | None:
    """Every parameter of the layer, in its order, from ``parameters`` by position and ``named``
    by name; None where one is missing or another keyword is given (NumPy's path decides)."""
    names = [name for name, _ in layer.definition.parameters]
    rest = names[len(parameters) :]
    if len(parameters) > len(names) or any(name not in rest for name in named):
        return None
    values = (*parameters, *(named[name] for name in rest if name in named))
    return values if len(values) == len(names) else None


def _refuse(status: int, arrays: list[np.ndarray], names: tuple[str, ...]) -> None:
    """Raise the `ValueError` NumPy's path raises where a driver stopped (status 2 r + k: array k's
    row r holds an entry that is not finite): each argument checked whole, in order, x first."""
    for array, name in zip(arrays, names, strict=True):
        _validate._finite(array, name)
    raise ValueError(f"{names[status % 2]} must be finite")  # pragma: no cover - a driver saw one


def _blocks(found: _Prepared, *outputs: np.ndarray) -> Iterator[tuple[tuple[Any, ...], list[int], list[int]]]:
    """For each block of the batch's rows (about `BLOCK` entries): a driver's first arguments (the
    row count, n, x, epsilon per row or NULL, and epsilon), the addresses of the other vectors,
    and those of each of ``outputs`` (arrays of shape (*batch, ...), contiguous) at the block.
    Each input is converted to the result's dtype, contiguous, one block at a time, so that none
    is copied whole; an input that already is contiguous in that dtype is not copied at all."""
    size = found.rows[0].shape[-1]
    flat = [rows.reshape(-1, size) for rows in found.rows]
    count = len(flat[0])
    into = [out.reshape(count, *out.shape[len(found.batch) :]) for out in outputs]
    step = max(1, BLOCK // size)
    for start in range(0, count, step):
        stop = min(start + step, count)
        taken = [np.ascontiguousarray(rows[start:stop], dtype=found.dtype) for rows in flat]
        epsilons = None if found.epsilons is None else _address(found.epsilons[start:stop])
        head = (stop - start, size, _address(taken[0]), epsilons, found.epsilon)
        yield head, [_address(rows) for rows in taken[1:]], [_address(out[start:stop]) for out in into]


def _as_given(
    lib: Library, x: np.ndarray, parameters: tuple[Any, ...], named: dict[str, Any]
) -> list[np.ndarray] | None:
    """The parameters as the drivers take them (doubles) where each is given by position as an
    ndarray of x's dtype and shape (n,), contiguous and finite; else None (the converting path
    decides)."""
    if named or len(parameters) != lib.parameters:
        return None
    size = x.shape[-1]
    for value in parameters:
        if not (
            type(value) is np.ndarray
            and value.dtype == x.dtype
            and value.shape == (size,)
            and value.flags.c_contiguous
            and np.isfinite(value).all()
        ):
            return None
    return [_widened(value) for value in parameters]


def _widened(parameter: np.ndarray) -> np.ndarray:
    """A parameter already in the rows' dtype as the drivers take it: a double for each entry
    (exact), converted once per call instead of once per entry of every row."""
    return parameter.astype(np.float64, copy=False)


def forward(layer: Any, x: Any, epsilon: Any, parameters: tuple[Any, ...], named: dict[str, Any]) -> np.ndarray | None:
    """The layer applied along the last axis of x by its compiled driver, or None where that does
    not apply (``layer`` is the facade, `numeric._layer.NumericLayer`)."""
    lib = _library(layer.key)
    widened = _as_given(lib, x, parameters, named) if lib is not None and _plain(x, epsilon) else None
    if lib is not None and widened is not None:
        # The common case, with nothing to convert: one call.
        size = x.shape[-1]
        y = np.empty_like(x)
        status = lib.forward[SUFFIX[x.dtype]](
            x.size // size, size, _address(x), None, float(epsilon), *map(_address, widened), _address(y)
        )
        if status >= 0:
            _refuse(status, [x], ("x",))
        return y
    given = _given(layer, parameters, named) if lib is not None else None
    found = _prepared(x, epsilon, (), given) if given is not None else None
    if lib is None or found is None:
        return None
    y = np.empty(found.rows[0].shape, dtype=found.dtype)
    call = lib.forward[SUFFIX[found.dtype]]
    for head, _, outs in _blocks(found, y):
        status = call(*head, *map(_address, found.parameters), *outs)
        if status >= 0:
            _refuse(status, found.rows, ("x",))
    return y


def jacobian(layer: Any, x: Any, epsilon: Any) -> np.ndarray | None:
    """J of every row of a plain x (`_plain`) by the compiled driver, shape (..., n, n), or None
    where that does not apply or a row is not one the driver takes (`direct`)."""
    lib = _library(layer.key)
    if lib is None or not lib.jacobian or not _plain(x, epsilon):
        return None
    size = x.shape[-1]
    out = np.empty((*x.shape, size), dtype=x.dtype)
    taken = np.empty(x.shape[:-1], dtype=np.uint8)
    call = lib.jacobian[SUFFIX[x.dtype]]
    left = call(x.size // size, size, _address(x), None, float(epsilon), _address(out), _address(taken))
    return out if left == 0 else None


def direct(layer: Any, x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """As `numeric.kernels.assemble.direct` (x float64 rows, e epsilon broadcast against the
    batch), by the compiled driver: J, and the rows it took, shape (..., 1); None where the
    layer has no compiled Jacobian.  The driver takes the rows `assemble.direct` takes, assembled
    in the same order, so a row's J is the same alone, in any batch, and through `jacobian`."""
    lib = _library(layer.key)
    if lib is None or not lib.jacobian:
        return None
    found = _prepared(x, e, (), ())
    if found is None:
        return None
    size = found.rows[0].shape[-1]
    out = np.empty((*found.batch, size, size))
    taken = np.empty(found.batch, dtype=np.uint8)
    for head, _, outs in _blocks(found, out, taken):
        lib.jacobian["f64"](*head, *outs)
    return out, taken[..., None].astype(bool)


def products(
    layer: Any, names: list[str], x: Any, epsilon: Any, args: tuple[Any, ...], named: dict[str, Any]
) -> list[Any] | None:
    """The vjp (and the parameters' gradients, summed over the rows) by the compiled driver, or
    the jvp of a layer whose Jacobian is symmetric, or None.

    Not at n <= `EIGEN_BELOW` where the layer applies J through its eigenstructure: the emitted
    entry formula cancels there, and NumPy's path takes the eigenstructure
    (`numeric.kernels.kernel.products`); nor where the driver refuses a row (`REFUSED`)."""
    lib = _library(layer.key)
    if lib is None or not args:
        return None
    if tuple(names) != lib.products:
        # J v is J^T v where J is symmetric (derived: `jacobian.is_symmetric`), the vjp's driver.
        direct = len(names) == 1 and layer._c.product(names[0]).jacobian_product == "direct"
        if not (direct and layer._c.symmetric and lib.parameters == 0 and len(lib.products) == 1):
            return None
    dy, *rest = args
    called = ("x", layer._c.product(names[0]).vectors[0])  # dy, or v where J v is the vjp's driver
    widened = _as_given(lib, x, tuple(rest), named) if _plain(x, epsilon) and _plain(dy, 1.0) else None
    if widened is not None:
        size = x.shape[-1]
        if dy.shape == x.shape and dy.dtype == x.dtype and not (size <= EIGEN_BELOW and layer.through_eigen):
            dx = np.empty_like(x)
            sums = [np.zeros(size) for _ in names[1:]]
            status = lib.backward[SUFFIX[x.dtype]](
                x.size // size,
                size,
                _address(x),
                None,
                float(epsilon),
                _address(dy),
                *map(_address, widened),
                _address(dx),
                *map(_address, sums),
            )
            if status == REFUSED:
                return None
            if status >= 0:
                _refuse(status, [x, dy], called)
            return [dx, *(total.astype(x.dtype, copy=False) for total in sums)]
    given = _given(layer, tuple(rest), named)
    found = _prepared(x, epsilon, (dy,), given) if given is not None else None
    if found is None:
        return None
    size = found.rows[0].shape[-1]
    if size <= EIGEN_BELOW and layer.through_eigen:
        return None
    dx = np.empty(found.rows[0].shape, dtype=found.dtype)
    sums = [np.zeros(size) for _ in names[1:]]  # each block's rows add to them
    call = lib.backward[SUFFIX[found.dtype]]
    for head, upstream, outs in _blocks(found, dx):
        status = call(*head, *upstream, *map(_address, found.parameters), *outs, *map(_address, sums))
        if status == REFUSED:
            return None
        if status >= 0:
            _refuse(status, found.rows, called)
    return [dx, *(total.astype(found.dtype, copy=False) for total in sums)]
