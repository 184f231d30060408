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
from collections.abc import Callable, Iterator, Sequence
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
    (result,) = run_many([function], seconds, memory, workers=1)
    if isinstance(result, Exceeded):
        raise result
    return result


def processors() -> int:
    """The processors this process may run on: how many children `run_many` keeps at once."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_many(
    functions: Sequence[Callable[[], Any]], seconds: float, memory: int = MEMORY, workers: int | None = None
) -> list[Any]:
    """Each of ``functions`` called in its own child, as `each` calls them: the results in order,
    an `Exceeded` in place of each that ran out.

    >>> run_many([lambda: 1, lambda: [2]], 60, workers=2)
    [1, [2]]
    """
    results: list[Any] = [None] * len(functions)
    for index, result in each(functions, seconds, memory, workers):
        results[index] = result
    return results


def each(
    functions: Sequence[Callable[[], Any]], seconds: float, memory: int = MEMORY, workers: int | None = None
) -> Iterator[tuple[int, Any]]:
    """(index, result) for each of ``functions`` as it finishes, each called in its own child
    with ``seconds`` and ``memory`` of its own, up to ``workers`` children at once (default: one
    per processor); a result is an `Exceeded` where the budget ran out.  Closing the iterator
    early ends the children still running."""
    if not hasattr(os, "fork"):
        yield from enumerate(function() for function in functions)
        return
    limit = max(1, workers if workers is not None else processors())
    waiting = list(enumerate(functions))[::-1]
    running: dict[int, _Child] = {}  # by the read end of its pipe
    try:
        while waiting or running:
            while waiting and len(running) < limit:
                index, function = waiting.pop()
                child = _start(index, function, memory, seconds)
                running[child.read] = child
            now = time.monotonic()
            for child in [c for c in running.values() if c.deadline <= now]:
                _end(running.pop(child.read))
                yield child.index, Exceeded(f"undecided within {seconds:g} s")
            if not running:
                continue
            left = min(c.deadline for c in running.values()) - now
            ready, _, _ = select.select(list(running), [], [], max(left, 0))
            for read in ready:
                child = running[read]
                chunk = os.read(read, 1 << 16)
                if chunk:
                    child.chunks.append(chunk)
                    continue
                _end(running.pop(read))
                yield child.index, _result(child.chunks, memory)
    finally:
        for child in running.values():
            _end(child)


@dataclasses.dataclass
class _Child:
    index: int
    pid: int
    read: int
    deadline: float
    chunks: list[bytes] = dataclasses.field(default_factory=list)


def _start(index: int, function: Callable[[], Any], memory: int, seconds: float) -> _Child:
    """``function`` started in a child that sends its result back through a pipe."""
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
    return _Child(index, pid, read, time.monotonic() + seconds)


def _end(child: _Child) -> None:
    os.close(child.read)
    _reap(child.pid)


def _result(chunks: list[bytes], memory: int) -> Any:
    """The value a child sent, or the `Exceeded` that says why there is none."""
    if not chunks:
        return Exceeded("the check ended without a result (out of memory?)")
    try:
        kind, value = json.loads(b"".join(chunks))
        if kind == "ok":
            return _decode(value)
    except (ValueError, TypeError, KeyError):
        return Exceeded("the check ended without a whole result")
    if kind == "memory":
        return Exceeded(f"undecided within {memory >> 20} MiB of memory")
    return Exceeded(f"undecided: {value}")


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
