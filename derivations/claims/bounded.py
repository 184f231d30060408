"""A claim decided within a time and memory budget: in a forked child that is killed past it.

SymPy has no cancellation points, so a budget cannot be kept from inside;
a child process can be stopped from outside.  The child gets an address-space
limit, so a claim that would grow to gigabytes fails there with MemoryError
instead of taking the machine.  Where fork is unavailable the claim runs here,
unbounded.

The child ends with its parent (the kernel kills it when the parent dies, on
Linux) and leaves Ctrl-C to the parent.  It sends its result back as JSON:
plain data, and the dataclasses in `_RESULTS` field by field, so that reading
a result builds values and never runs code (as unpickling could).

>>> run(lambda: {"a": (1, 2.5, None), "b": ["x"]}, 60)
{'a': (1, 2.5, None), 'b': ['x']}
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import select
import signal
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from derivations.cli import end_with_parent

MEMORY = 2 << 30  # bytes the child may grow by

# The dataclasses a bounded function may return, by module: each is sent back as its fields,
# those it shows in its repr (a verdict's exact witness is for the child's own audit).
_RESULTS = {"derivations.claims.checker": ("Claim", "Verdict")}

# The child leaves by this, taken when the module is first imported: whatever later replaces
# os._exit (a test running a command in its own process does) cannot keep the child running
# on as a copy of its parent.
_leave = os._exit


class Exceeded(Exception):
    """The budget ran out; the message says which."""


def run(function: Callable[[], Any], seconds: float, memory: int = MEMORY) -> Any:
    """``function()`` in a child process; its result, or `Exceeded`."""
    if not hasattr(os, "fork"):
        return function()
    read, write = os.pipe()
    parent = os.getpid()
    # Ctrl-C is the parent's to report: held back until the child has come to ignore it.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running the parent's exit handlers
        os.close(read)
        status = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            end_with_parent(parent)
            _limit_memory(memory)
            payload = _dumps(["ok", _encode(function())])
        except MemoryError:
            payload = _dumps(["memory", None])
        except BaseException as error:
            message = " ".join(str(error).split())
            payload = _dumps(["error", f"{type(error).__name__}: {message}" if message else type(error).__name__])
        try:
            with os.fdopen(write, "wb") as channel:
                channel.write(payload)
        except BaseException:
            status = 1
        _leave(status)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(write)
    chunks = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Exceeded(f"undecided within {seconds:g} s")
            ready, _, _ = select.select([read], [], [], left)
            if not ready:
                continue
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        _reap(pid)
    if not chunks:
        raise Exceeded("the check ended without a result (out of memory?)")
    try:
        kind, value = json.loads(b"".join(chunks))
        if kind == "ok":
            return _decode(value)
    except (ValueError, TypeError, KeyError):
        raise Exceeded("the check ended without a whole result") from None
    if kind == "memory":
        raise Exceeded(f"undecided within {memory >> 20} MiB of memory")
    raise Exceeded(f"undecided: {value}")


def _dumps(message: list[Any]) -> bytes:
    return json.dumps(message).encode()


def _encode(value: Any) -> Any:
    """``value`` as JSON data: a tuple, a dict and a dataclass become tagged objects, so that each comes back as itself.

    >>> _encode({"n": (3, [1.5])})
    {'dict': {'n': {'tuple': [3, [1.5]]}}}
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, tuple):
        return {"tuple": [_encode(item) for item in value]}
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"dict": {key: _encode(item) for key, item in value.items()}}
    kind = type(value)
    if dataclasses.is_dataclass(value) and kind.__name__ in _RESULTS.get(kind.__module__, ()):
        fields = {field.name: _encode(getattr(value, field.name)) for field in dataclasses.fields(value) if field.repr}
        return {"class": [kind.__module__, kind.__name__], "fields": fields}
    raise TypeError(f"a bounded result holds a {kind.__name__}, which is not plain data")


def _decode(data: Any) -> Any:
    """The value `_encode` gave ``data`` for; a class outside `_RESULTS` is refused."""
    if isinstance(data, list):
        return [_decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    if "tuple" in data:
        return tuple(_decode(item) for item in data["tuple"])
    if "dict" in data:
        return {key: _decode(item) for key, item in data["dict"].items()}
    module, name = data["class"]
    if name not in _RESULTS.get(module, ()):
        raise ValueError(f"a {name} is not a result")
    fields = {key: _decode(item) for key, item in data["fields"].items()}
    return getattr(importlib.import_module(module), name)(**fields)


def _limit_memory(extra: int) -> None:
    try:
        import resource

        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[0])
        limit = pages * os.sysconf("SC_PAGE_SIZE") + extra
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, OSError, ValueError):
        pass  # no address-space limit on this platform: the time budget still holds


def _reap(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with suppress(ChildProcessError):
        os.waitpid(pid, 0)
