"""A claim decided within a time and memory budget: in a forked child that is killed past it.

SymPy has no cancellation points, so a budget cannot be kept from inside;
a child process can be stopped from outside.  The child gets an address-space
limit, so a claim that would grow to gigabytes fails there with MemoryError
instead of taking the machine.  Where fork is unavailable the claim runs here,
unbounded.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

MEMORY = 2 << 30  # bytes the child may grow by

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
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running the parent's exit handlers
        os.close(read)
        status = 0
        try:
            _limit_memory(memory)
            payload = pickle.dumps(("ok", function()))
        except MemoryError:
            payload = pickle.dumps(("memory", None))
        except BaseException as error:
            payload = pickle.dumps(("error", f"{type(error).__name__}: {error}"))
        try:
            with os.fdopen(write, "wb") as channel:
                channel.write(payload)
        except BaseException:
            status = 1
        _leave(status)
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
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "memory":
        raise Exceeded(f"undecided within {memory >> 20} MiB of memory")
    if kind == "error":
        raise Exceeded(f"undecided: {value}")
    return value


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
