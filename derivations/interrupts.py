"""Ctrl-C in one line, from a command's first statement: imports only os and signal, so that a
command installs it before it imports anything else (an interrupt during the imports printed a
traceback through them)."""

from __future__ import annotations

import os
import signal
from contextlib import suppress


def one_line(prog: str) -> None:
    """Make Ctrl-C end this process at once: one line on stderr, status 130 (128 + SIGINT).

    The handler leaves by ``os._exit`` where it is called: no cleanup that could wait on a
    worker (a pool's teardown can wait forever) and no traceback.  The worker processes
    ignore Ctrl-C and end with this process (`derivations.cli.end_with_parent`).
    """
    line = f"{prog}: interrupted\n".encode()

    def interrupted(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with suppress(OSError):
            os.write(2, line)  # not sys.stderr: the interrupted code may be inside its lock
        os._exit(128 + signal.SIGINT)

    signal.signal(signal.SIGINT, interrupted)
