"""The derivation cache: derived results kept across processes, never trusted without their key and checksum.

An entry lives in ``$XDG_CACHE_HOME/epsilon-layernorm/<key>/`` (``~/.cache``
when XDG_CACHE_HOME is unset).  The key hashes every file under
``derivations/``, the SymPy and mpmath sources that will be imported, the
Python version, and any bytes a command adds with `include` (a user-defined
layer's definition file), so a change to any of them reads from another
folder.  Each file holds a checksum of its name and payload; a truncated, torn
or corrupt file is a miss, and the next write replaces it.  Writes go to a
temporary file renamed into place, so a reader sees a whole entry or none.
Nothing here imports SymPy: a command that finds its output cached prints it
without importing SymPy at all.

A cache that cannot be written (a read-only folder, a full disk) is skipped
without a word: it changes how long a command takes, never what it prints.
``--no-cache`` (`disable`) or ``EPSILON_LAYERNORM_NO_CACHE=1`` turns it off.

>>> directory().name
'epsilon-layernorm'
>>> len(key()), key() != key(extra=b"a user-defined layer's definition file")
(32, True)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import io
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

PROJECT = "epsilon-layernorm"
ENVIRONMENT = "EPSILON_LAYERNORM_NO_CACHE"
SOURCES = Path(__file__).resolve().parent

# The first bytes of every entry, then the SHA-256 of its name and payload.
MAGIC = b"epsilon-layernorm derivation cache 1\n"
_DIGEST = hashlib.sha256().digest_size

_disabled = False
_included: list[bytes] = []


def disable() -> None:
    """Turn the cache off for the rest of this process (``--no-cache``)."""
    global _disabled
    _disabled = True


def enabled() -> bool:
    """Whether entries are read and written: not disabled, and the environment variable unset, empty or 0."""
    return not _disabled and os.environ.get(ENVIRONMENT, "").strip() in ("", "0")


def include(extra: bytes) -> None:
    """Make ``extra`` part of this process's key: entries written after this call are found only by a
    process that includes the same bytes (a user-defined layer's definition file, say)."""
    if not isinstance(extra, bytes):
        raise TypeError(f"extra must be bytes; got {type(extra).__name__}")
    _included.append(extra)


def directory() -> Path:
    """The cache's root folder: ``$XDG_CACHE_HOME/epsilon-layernorm``, where XDG_CACHE_HOME is an
    absolute path (the XDG rule), else ``~/.cache/epsilon-layernorm``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / PROJECT


def _update(digest: Any, part: bytes) -> None:
    # Length-prefixed, so that no two different sequences of parts hash alike.
    digest.update(len(part).to_bytes(8, "little"))
    digest.update(part)


def tree(root: Path, pattern: str = "*") -> bytes:
    """The SHA-256 of every file under ``root`` matching ``pattern`` (bytecode aside), by path and bytes."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob(pattern)):
        relative = path.relative_to(root)
        if "__pycache__" in relative.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        _update(digest, relative.as_posix().encode())
        _update(digest, path.read_bytes())
    return digest.digest()


@functools.cache
def _package(name: str) -> bytes:
    """Where package ``name`` would be imported from, and its version file: without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return b"absent"
    origin = Path(spec.origin)
    parts = [str(origin).encode()]
    for candidate in ("release.py", "__init__.py", "version.py", "_version.py"):
        with contextlib.suppress(OSError):
            parts.append((origin.parent / candidate).read_bytes())
            break
    return b"\0".join(parts)


def key(extra: bytes = b"") -> str:
    """The key of this process's entries: sources, SymPy, mpmath, gmpy2, Python, included bytes, ``extra``."""
    digest = hashlib.sha256()
    _update(digest, _sources())
    for name in ("sympy", "mpmath", "gmpy2"):
        _update(digest, _package(name))
    _update(digest, os.environ.get("SYMPY_GROUND_TYPES", "").encode())
    _update(digest, f"{sys.version}\0{sys.implementation.cache_tag}\0{pickle.HIGHEST_PROTOCOL}".encode())
    for part in (*_included, extra):
        _update(digest, part)
    return digest.hexdigest()[:32]


@functools.cache
def _sources() -> bytes:
    """Every file under derivations/, hashed once a process."""
    return tree(SOURCES)


def package(name: str) -> bytes:
    """Where package ``name`` would be imported from, and its version: part of a key, without importing it."""
    return _package(name)


def code(*folders: str) -> bytes:
    """The Python sources of the project's ``folders`` (beside derivations/), hashed: part of a key
    for what a command computes from more than the derivations."""
    return b"".join(tree(SOURCES.parent / folder, "*.py") for folder in folders)


def _path(name: str, extra: bytes) -> Path:
    return directory() / key(extra) / hashlib.sha256(name.encode()).hexdigest()[:40]


def _checksum(name: str, payload: bytes) -> bytes:
    digest = hashlib.sha256()
    _update(digest, name.encode())
    _update(digest, payload)
    return digest.digest()


def read(name: str, extra: bytes = b"") -> bytes | None:
    """The payload of entry ``name``, or None: cache off, no entry, or an entry that fails its checksum."""
    if not enabled():
        return None
    try:
        data = _path(name, extra).read_bytes()
    except (OSError, ValueError):
        return None
    head = len(MAGIC) + _DIGEST
    if len(data) < head or not data.startswith(MAGIC):
        return None
    payload = data[head:]
    if data[len(MAGIC) : head] != _checksum(name, payload):
        return None
    return payload


def write(name: str, payload: bytes, extra: bytes = b"") -> None:
    """Store ``payload`` as entry ``name``, atomically; a failure to write leaves the cache as it was."""
    if not enabled():
        return
    temporary = None
    try:
        path = _path(name, extra)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(handle, "wb") as file:
            file.write(MAGIC + _checksum(name, payload) + payload)
        os.replace(temporary, path)
        temporary = None
    except (OSError, ValueError):
        pass  # read-only, full, or in the way: this process goes on without the entry
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


# --- derived results -------------------------------------------------------
#
# A result may hold the catalog's own objects (a layer, its patterns,
# directions and statistics).  Those compare by identity, so they are pickled
# as references and restored as the very objects of this process.


@functools.cache
def _registry(layers: tuple[Any, ...]) -> tuple[dict[int, str], dict[str, Any]]:
    objects: dict[str, Any] = {}
    for layer in layers:
        objects[f"layer:{layer.key}"] = layer
        for field in ("patterns", "directions", "statistics"):
            for index, item in enumerate(getattr(layer, field)):
                objects[f"{field}:{layer.key}:{index}"] = item
    ids: dict[int, str] = {}
    for token, item in objects.items():
        ids.setdefault(id(item), token)
    return ids, objects


def _catalog() -> tuple[dict[int, str], dict[str, Any]]:
    """References for the catalog's layers built so far; none while the catalog is still being imported."""
    layers = getattr(sys.modules.get("derivations.catalog"), "LAYERS", None)
    return _registry(layers.loaded()) if layers is not None else ({}, {})


def _resolve(pid: str) -> Any:
    """A reference to a catalog layer not built yet in this process: its layer is built, then looked up."""
    layers = getattr(sys.modules.get("derivations.catalog"), "LAYERS", None)
    key = pid.split(":")[1] if pid.count(":") in (1, 2) else None
    if layers is None or key not in layers:
        raise pickle.UnpicklingError(f"no catalog object {pid!r} in this process")
    layers[key]
    objects = _catalog()[1]
    if pid not in objects:
        raise pickle.UnpicklingError(f"no catalog object {pid!r} in this process")
    return objects[pid]


@functools.cache
def _sympy() -> tuple[Any, Any, Any, Any]:
    """SymPy's raw node constructor, LatticeOp, the evaluate switch and srepr, imported when first needed."""
    from sympy import Basic, srepr
    from sympy.core.operations import LatticeOp
    from sympy.core.parameters import evaluate

    return Basic.__new__, LatticeOp, evaluate, srepr


def _rebuild(cls: Any, args: tuple[Any, ...]) -> Any:
    """A SymPy node from its stored arguments; `loads` turns evaluation off around it."""
    new, lattice, _, _ = _sympy()
    if issubclass(cls, lattice):
        # And, Or, Min, Max filter and order their arguments even with
        # evaluation off, and that filter fails on unevaluated relations; the
        # stored arguments are filtered and ordered already, so the node is
        # assembled as LatticeOp assembles it.
        node = new(cls, *args)
        node._argset = frozenset(args)
        return node
    return cls(*args)


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, ids: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._ids = ids
        self._basic = sys.modules["sympy"].Basic if "sympy" in sys.modules else None

    def persistent_id(self, obj: Any) -> str | None:
        return self._ids.get(id(obj))

    def reducer_override(self, obj: Any) -> Any:
        # SymPy's own pickling rebuilds every node through its evaluating
        # constructor, which re-simplifies (seconds for a layer's formulas).
        # A node is rebuilt from its stored arguments with evaluation off
        # instead: the tree that was derived, in milliseconds.  Atoms keep
        # SymPy's pickling (a symbol's assumptions, a float's precision).
        if self._basic is not None and isinstance(obj, self._basic) and obj.args:
            return _rebuild, (type(obj), obj.args)
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, objects: dict[str, Any]) -> None:
        super().__init__(file)
        self._objects = objects

    def persistent_load(self, pid: Any) -> Any:
        if pid in self._objects:
            return self._objects[pid]
        return _resolve(str(pid))


def dumps(value: Any) -> bytes:
    """``value`` pickled, the catalog's objects as references."""
    file = io.BytesIO()
    _Pickler(file, _catalog()[0]).dump(value)
    return file.getvalue()


def loads(payload: bytes) -> Any:
    """A value from `dumps`, its references resolved to this process's catalog objects."""
    with _sympy()[2](False):
        return _Unpickler(io.BytesIO(payload), _catalog()[1]).load()


def _entry(function: Callable[..., Any], args: tuple[Any, ...]) -> str | None:
    """The entry name of ``function(*args)``, or None where an argument is not the catalog's, a SymPy
    expression (named by the hash of its full structure) or plain."""
    ids = _catalog()[0]
    basic = getattr(sys.modules.get("sympy"), "Basic", None)
    parts = []
    for arg in args:
        token = ids.get(id(arg))
        if token is None:
            if basic is not None and isinstance(arg, basic):
                token = "sympy:" + hashlib.sha256(_sympy()[3](arg).encode()).hexdigest()[:32]
            elif arg is None or isinstance(arg, (str, int)):
                token = repr(arg)
            else:
                return None  # a layer built outside the catalog: its results stay in this process
        parts.append(token)
    return f"{function.__module__}.{function.__qualname__}({', '.join(parts)})"


P = ParamSpec("P")
R = TypeVar("R")


def derived(function: Callable[P, R]) -> Callable[P, R]:
    """`functools.cache` that also keeps the results for the catalog's layers in the derivation cache.

    A stored result that cannot be read back (checksum, unpickling) is derived
    again and written over; a result that cannot be stored is only returned.
    """

    @functools.cache
    @functools.wraps(function)
    def cached(*args: Any, **keywords: Any) -> Any:
        name = _entry(function, args) if enabled() and not keywords else None
        if name is not None:
            payload = read(name)
            if payload is not None:
                try:
                    return loads(payload)
                except Exception:
                    pass
        value = function(*args, **keywords)
        if name is not None:
            try:
                payload = dumps(value)
            except Exception:
                return value
            write(name, payload)
        return value

    return cached  # type: ignore[return-value]
