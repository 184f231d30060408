"""The derivation cache: derived results kept across processes as data, trusted only under this user's own key.

An entry lives in ``$XDG_CACHE_HOME/epsilon-layernorm/<key>/`` (``~/.cache``
when XDG_CACHE_HOME is unset).  The key hashes every file under
``derivations/``, the SymPy and mpmath sources that will be imported, the
Python version, and any bytes a command adds with `include` (a user-defined
layer's definition file), so a change to any of them reads from another
folder.  Writes go to a temporary file renamed into place, so a reader sees a
whole entry or none.  Nothing here imports SymPy: a command that finds its
output cached prints it without importing SymPy at all.

Nobody but the user may put an entry there:

- the folders are made mode 0700; a folder or an entry owned by another user,
  or writable by group or others, is not used: the process says so once on
  stderr, in one line, and goes on without the cache;
- each key's folder holds ``hmac-key``, 32 random bytes made with the folder
  (written to a temporary file, then linked into place, which fails if one
  exists), mode 0600; one that is not a regular file of 32 bytes, private to
  its owner, is refused in the same way;
- each entry carries the HMAC-SHA256 under that key of its folder, name and
  payload; an entry that fails it (torn, corrupt, planted, moved) is a miss,
  and the next write replaces it;
- an entry is read only if it is a regular file of at most `LIMIT` bytes
  (`files.read_capped`): a FIFO or a link to ``/dev/zero`` is a miss.

A derived result is stored as JSON, not as a pickle, so that even an entry
under the right key cannot run code when read.  A pickle whose find_class
admitted only the SymPy and project classes stored would not do: it may hand
any argument to an admitted class, and a SymPy function given a string
sympifies it, which evaluates it.  Read back from JSON, a SymPy node's
arguments are nodes read first, never text (see the comment on derived
results below).

A cache that cannot be written (a read-only folder, a full disk) is skipped
without a word: it changes how long a command takes, never what it prints.
``--no-cache`` (`disable`) or ``EPSILON_LAYERNORM_NO_CACHE`` set to 1, true,
yes or on turns it off; unset, empty, 0, false, no or off keep it on; any
other value turns it off and says once on stderr that it was not understood.

>>> directory().name
'epsilon-layernorm'
>>> len(key()), key() != key(extra=b"a user-defined layer's definition file")
(32, True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import hashlib
import hmac
import importlib.util
import json
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from derivations.files import read_capped

PROJECT = "epsilon-layernorm"
ENVIRONMENT = "EPSILON_LAYERNORM_NO_CACHE"
SOURCES = Path(__file__).resolve().parent

# The first bytes of every entry, then the HMAC-SHA256 of its folder, name and payload.
MAGIC = b"epsilon-layernorm derivation cache 2\n"
_DIGEST = hashlib.sha256().digest_size
SECRET = "hmac-key"  # the name of each key folder's authentication key
LIMIT = 64 * 2**20  # the largest entry read, in bytes (a drawn figure set is under 1 MB)

_OFF = ("1", "true", "yes", "on")
_ON = ("", "0", "false", "no", "off")

_disabled = False
_included: list[bytes] = []
_said: set[str] = set()
_IN_THE_WAY = "a folder is in the way of the cache entry"


def disable() -> None:
    """Turn the cache off for the rest of this process (``--no-cache``)."""
    global _disabled
    _disabled = True


def _say(message: str) -> None:
    """Print ``message`` as one line on stderr, once a process."""
    if message not in _said:
        _said.add(message)
        print(f"{PROJECT}: {message}", file=sys.stderr)


def enabled() -> bool:
    """Whether entries are read and written: not disabled, and the environment variable not turning it off."""
    if _disabled:
        return False
    value = os.environ.get(ENVIRONMENT, "")
    if value.strip().lower() in _ON:
        return True
    if value.strip().lower() not in _OFF:
        _say(f"{ENVIRONMENT}={value!r} is not understood (1, true, yes or on turn the cache off); the cache is off")
    return False


def _refuse(path: Path, problem: str) -> None:
    """Go on without the cache, saying why once."""
    _say(f"not using the derivation cache: {str(path)!r} {problem}")
    disable()


def _untrusted(status: os.stat_result) -> str | None:
    """What makes a file or folder with ``status`` one another user could have written, or None."""
    if status.st_uid != os.geteuid():
        return "is owned by another user"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by group or others"
    return None


def _trusted_folders(folder: Path, create: bool) -> bool:
    """Whether the cache's root and ``folder`` (a key's) are folders only this user can write;
    made mode 0700 first where ``create``.  A problem is said once and turns the cache off."""
    for path in (directory(), folder):
        try:
            if create:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            status = path.stat()
        except OSError:
            return False  # missing, or not a folder that can be made: no cache, and nothing to say
        problem = "is not a folder" if not stat.S_ISDIR(status.st_mode) else _untrusted(status)
        if problem is not None:
            _refuse(path, problem)
            return False
    return True


def _secret(folder: Path, create: bool) -> bytes | None:
    """The authentication key of ``folder``, made where ``create`` and there is none; None when absent
    or refused (not a regular file of 32 bytes, private to this user)."""
    path = folder / SECRET
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    for _ in range(2):
        try:
            descriptor = os.open(path, flags)
        except FileNotFoundError:
            if not create or not _make_secret(path):
                return None
            continue
        except OSError:
            _refuse(path, "is not a regular file")  # a symbolic link (ELOOP), or unopenable
            return None
        try:
            status = os.fstat(descriptor)
            problem = _untrusted(status)
            if not stat.S_ISREG(status.st_mode) or status.st_size != _DIGEST:
                problem = f"is not a regular file of {_DIGEST} bytes"
            elif status.st_mode & 0o077:
                problem = "is readable by group or others"
            data = os.read(descriptor, _DIGEST + 1) if problem is None else b""
        finally:
            os.close(descriptor)
        if problem is None and len(data) == _DIGEST:
            return data
        _refuse(path, problem or f"is not a regular file of {_DIGEST} bytes")
        return None
    return None


def _make_secret(path: Path) -> bool:
    """Put 32 random bytes at ``path``, mode 0600, unless a file is there already; False on a failure."""
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")  # O_EXCL, mode 0600
        with os.fdopen(handle, "wb") as file:
            file.write(secrets.token_bytes(_DIGEST))
        with contextlib.suppress(FileExistsError):  # another process made one first: that one is the key
            os.link(temporary, path)
        return True
    except OSError:
        return False
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


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
    _update(digest, f"{sys.version}\0{sys.implementation.cache_tag}".encode())
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


def _tag(secret: bytes, path: Path, name: str, payload: bytes) -> bytes:
    digest = hmac.new(secret, digestmod=hashlib.sha256)
    for part in (path.parent.name.encode(), name.encode(), payload):
        _update(digest, part)
    return digest.digest()


def read(name: str, extra: bytes = b"") -> bytes | None:
    """The payload of entry ``name``, or None: cache off, no entry, or an entry that fails its tag."""
    if not enabled():
        return None
    path = _path(name, extra)
    if not _trusted_folders(path.parent, create=False):
        return None
    secret = _secret(path.parent, create=False)
    try:
        status = path.lstat()
    except (OSError, ValueError):
        return None
    if secret is None or not stat.S_ISREG(status.st_mode):
        return None  # a FIFO, a device, a folder or a symbolic link is a miss, and the next write replaces it
    problem = _untrusted(status)
    if problem is not None:
        _refuse(path, problem)
        return None
    try:
        data = read_capped(path, LIMIT)
    except OSError:
        return None
    head = len(MAGIC) + _DIGEST
    if len(data) < head or not data.startswith(MAGIC):
        return None
    payload = data[head:]
    if not hmac.compare_digest(data[len(MAGIC) : head], _tag(secret, path, name, payload)):
        return None
    return payload


def write(name: str, payload: bytes, extra: bytes = b"") -> None:
    """Store ``payload`` as entry ``name``, atomically; a failure to write leaves the cache as it was."""
    if not enabled():
        return
    temporary = None
    try:
        path = _path(name, extra)
        if not _trusted_folders(path.parent, create=True):
            return
        secret = _secret(path.parent, create=True)
        if secret is None:
            return
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(handle, "wb") as file:
            file.write(MAGIC + _tag(secret, path, name, payload) + payload)
        os.replace(temporary, path)
        temporary = None
    except IsADirectoryError:
        # Not removed: a folder in the cache is not the cache's to delete.  Said once a process,
        # for the first such entry: a cache planted with folders would say it for each.
        if not any(said.startswith(_IN_THE_WAY) for said in _said):
            _say(
                f"{_IN_THE_WAY} {str(path)!r} (and maybe others): such entries are derived again "
                "each run until the folders are removed"
            )
    except (OSError, ValueError):
        pass  # read-only, full, or in the way: this process goes on without the entry
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


# --- derived results -------------------------------------------------------
#
# A result is stored as JSON: plain values as themselves, anything else as a
# list whose first item names its kind.  Reading one back constructs only
# these kinds, and calls nothing an entry names but the constructor of a SymPy
# class (one defined under the packages of _NODES, of a class loaded already)
# and of the project's own dataclasses and enums.  JSON was chosen over a
# pickle, even one whose find_class admits only those classes: a pickle can
# hand any argument to an admitted class, and a SymPy function sympifies a
# string argument by evaluating it (``sin("__import__('os')...")``).  Here a
# node's arguments are nodes read back first, never text, and the one string
# a constructor is given is a name (of a symbol, a Str or an undefined
# function), which SymPy does not parse.
#
# A result may hold the catalog's own objects (a layer, its patterns,
# directions and statistics).  Those compare by identity, so they are stored
# as references and restored as the very objects of this process.

_NODES = (
    "sympy.core.",
    "sympy.functions.",
    "sympy.logic.",
    "sympy.matrices.",
    "sympy.sets.",
    "sympy.series.",
    "sympy.tensor.",
    "sympy.concrete.",
    "derivations.",
)


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
        raise ValueError(f"no catalog object {pid!r} in this process")
    # `loads` decodes with evaluation off; a layer is built as it always is, with it on.
    with _sympy().core.parameters.evaluate(True):
        layers[key]
    objects = _catalog()[1]
    if pid not in objects:
        raise ValueError(f"no catalog object {pid!r} in this process")
    return objects[pid]


@functools.cache
def _sympy() -> Any:
    """SymPy, imported when first needed."""
    import sympy

    return sympy


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _node_classes() -> dict[str, type]:
    """Every SymPy class loaded in this process under the packages of _NODES, by `_name`."""
    found: dict[str, type] = {}
    stack = [_sympy().Basic]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        module = cls.__dict__.get("__module__")
        if isinstance(module, str) and module.startswith(_NODES) and "<" not in cls.__qualname__:
            found[_name(cls)] = cls
    return found


_classes: dict[str, type] = {}


def _node_class(name: str) -> type:
    if name not in _classes:
        _classes.update(_node_classes())  # a class loaded since the last look
    if name not in _classes:
        raise ValueError(f"no SymPy class {name!r}")
    return _classes[name]


def _project_class(name: str, kind: type) -> Any:
    """The dataclass or enum ``name`` of a loaded module of the project's."""
    module, _, qualname = name.partition(":")
    loaded = sys.modules.get(module) if module.startswith("derivations.") else None
    found = vars(loaded).get(qualname) if loaded is not None else None
    if not isinstance(found, type) or _name(found) != name or not isinstance(found, kind):
        raise ValueError(f"no project class {name!r}")
    return found


def _assumptions(names: Any) -> dict[str, bool | None]:
    """Assumptions as SymPy names them, each True, False or None; anything else is refused."""
    from sympy.core.assumptions import _assume_defined

    if not isinstance(names, dict) or not all(
        k in _assume_defined and (v is None or type(v) is bool) for k, v in names.items()
    ):
        raise ValueError(f"not assumptions: {names!r}")
    return names


def _encode(value: Any, ids: dict[int, str]) -> Any:
    if value is None or type(value) in (str, bool, int, float):
        return value
    token = ids.get(id(value))
    if token is not None:
        return ["R", token]
    if type(value) in (tuple, list):
        return ["T" if type(value) is tuple else "L", *(_encode(item, ids) for item in value)]
    if type(value) is dict:
        return ["D", *(_encode(part, ids) for pair in value.items() for part in pair)]
    if isinstance(value, enum.Enum):
        return ["E", _name(_project_class(_name(type(value)), enum.EnumMeta)), value.name]
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(value, sympy.Basic):
        return _encode_sympy(value, ids, sympy)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = _name(_project_class(_name(type(value)), type))
        return ["C", name, {f.name: _encode(getattr(value, f.name), ids) for f in dataclasses.fields(value)}]
    raise TypeError(f"not stored: {type(value).__name__}")


def _encode_sympy(value: Any, ids: dict[int, str], sympy: Any) -> list[Any]:
    cls = type(value)
    if isinstance(cls, sympy.FunctionClass) and cls.__module__ is None:  # an undefined function f(x)
        return ["F", cls.name, _assumptions(dict(cls._kwargs)), *(_encode(arg, ids) for arg in value.args)]
    if value.args:
        return ["N", _name(cls), *(_encode(arg, ids) for arg in value.args)]
    if isinstance(cls, sympy.core.singleton.Singleton):
        return ["S", cls.__name__]
    if cls is sympy.Symbol:
        return ["Y", value.name, dict(value._assumptions_orig)]
    if cls is sympy.core.symbol.Str:
        return ["Z", value.name]
    if cls is sympy.Integer:
        return ["I", int(value)]
    if cls is sympy.Rational:
        return ["Q", int(value.p), int(value.q)]
    raise TypeError(f"not stored: {cls.__name__}")


def _decode(tree: Any, objects: dict[str, Any]) -> Any:
    if not isinstance(tree, list):
        if isinstance(tree, dict):
            raise ValueError("a bare JSON object")
        return tree
    kind, *rest = tree
    if kind == "R":
        (token,) = rest
        return objects[token] if token in objects else _resolve(str(token))
    if kind in ("T", "L", "D"):
        items = [_decode(item, objects) for item in rest]
        if kind == "D":
            return dict(zip(items[::2], items[1::2], strict=True))
        return tuple(items) if kind == "T" else items
    if kind == "E":
        name, member = rest
        return _project_class(name, enum.EnumMeta)[member]
    if kind == "C":
        name, fields = rest
        cls: type = _project_class(name, type)
        if not dataclasses.is_dataclass(cls) or not isinstance(fields, dict):
            raise ValueError(f"not a dataclass: {name}")
        if set(fields) != {field.name for field in dataclasses.fields(cls)}:
            raise ValueError(f"not the fields of {name}")
        obj = object.__new__(cls)
        for field, item in fields.items():
            object.__setattr__(obj, field, _decode(item, objects))
        return obj
    return _decode_sympy(kind, rest, objects)


def _decode_sympy(kind: Any, rest: list[Any], objects: dict[str, Any]) -> Any:
    sympy = _sympy()
    if kind == "S":
        (name,) = rest
        found = getattr(sympy.S, name) if isinstance(name, str) and name.isidentifier() else None
        if not isinstance(found, sympy.Basic) or type(found).__name__ != name:
            raise ValueError(f"no singleton {name!r}")
        return found
    if kind in ("Y", "Z"):
        name, *assumptions = rest
        if not isinstance(name, str):
            raise ValueError(f"not a name: {name!r}")
        return sympy.Symbol(name, **_assumptions(*assumptions)) if kind == "Y" else sympy.core.symbol.Str(name)
    if kind in ("I", "Q"):
        if not all(type(part) is int for part in rest):
            raise ValueError(f"not integers: {rest!r}")
        return sympy.Integer(*rest) if kind == "I" else sympy.Rational(*rest)
    if kind == "F":  # an undefined function, applied
        name, assumptions, *encoded = rest
        if not isinstance(name, str):
            raise ValueError(f"not a name: {name!r}")
        cls = sympy.Function(name, **_assumptions(assumptions))
    elif kind == "N":
        name, *encoded = rest
        cls = _node_class(name)
    else:
        raise ValueError(f"no kind {kind!r}")
    args = [_decode(arg, objects) for arg in encoded]
    if not all(isinstance(arg, sympy.Basic) for arg in args):
        raise ValueError(f"{name}: an argument that is not a SymPy node")  # never a string to sympify
    return _rebuild(cls, args, sympy)


def _rebuild(cls: type, args: list[Any], sympy: Any) -> Any:
    """A SymPy node from its stored arguments; `loads` turns evaluation off around it."""
    if issubclass(cls, sympy.core.operations.LatticeOp):
        # And, Or, Min, Max filter and order their arguments even with
        # evaluation off, and that filter fails on unevaluated relations; the
        # stored arguments are filtered and ordered already, so the node is
        # assembled as LatticeOp assembles it.
        node = sympy.Basic.__new__(cls, *args)
        node._argset = frozenset(args)
        return node
    return cls(*args)


def dumps(value: Any) -> bytes:
    """``value`` as JSON, the catalog's objects as references; a TypeError or ValueError for what is not
    stored: a value of another kind (a float that is not finite, a set, a SymPy Dummy or Float, a function)."""
    tree = _encode(value, _catalog()[0])
    return json.dumps(tree, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def loads(payload: bytes) -> Any:
    """A value from `dumps`, its references resolved to this process's catalog objects; a ValueError
    (or another Exception) for anything else."""
    tree = json.loads(payload, parse_constant=_no_constant)
    with _sympy().core.parameters.evaluate(False):
        return _decode(tree, _catalog()[1])


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not stored")


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
                token = "sympy:" + hashlib.sha256(_sympy().srepr(arg).encode()).hexdigest()[:32]
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

    A stored result that cannot be read back (tag, format) is derived
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
