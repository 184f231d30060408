"""Command-line plumbing shared by every command: derivations, figures, figures.report, numeric.verify."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from contextlib import suppress
from typing import Any, NoReturn

from derivations import _cache


class _NoCache(argparse.Action):
    """``--no-cache``: the derivation cache is off from the moment the option is read."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        _cache.disable()
        setattr(namespace, self.dest, True)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit status 2."""

    def add_cache_option(self) -> None:
        """``--no-cache``, for a command whose derivations start after its arguments are read."""
        self.add_argument(
            "--no-cache",
            action=_NoCache,
            help=f"neither read nor write the derivation cache (or set {_cache.ENVIRONMENT}=1)",
        )

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse's own version swallows a failure to write (--help > /dev/full);
        # here it reaches `run`, which reports it in one line.
        if message:
            (file or sys.stderr).write(message)

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def run(main: Callable[[list[str] | None], int], prog: str, argv: list[str] | None = None) -> int:
    """Run a command's ``main``: its exit status, and never a traceback for a failure to write.

    A reader that stopped early (a broken pipe) ends the command quietly, with
    status 0 if ``main`` had not finished.  Any other failure to write, stdout
    or a file (a full disk, an unwritable folder), is one line on stderr and
    status 2.  stdout is flushed here, inside the guard, because the flush
    Python makes at exit reports a failure as a traceback.
    """
    if sys.stdout is None:  # started with stdout closed (>&-): nothing can be written
        _error(f"{prog}: error: standard output is closed")
        return 2
    stop: SystemExit | None = None
    status = 0
    try:
        try:
            status = main(argv)
        except SystemExit as exiting:  # argparse, after --help or a usage error; the help is still to flush
            stop = exiting
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    except OSError as error:
        _error(f"{prog}: error: {_describe(error)}")
        stop, status = None, 2
    finally:
        _release_stdout()
    if stop is not None:
        raise stop
    return status


def finish(main: Callable[[list[str] | None], int], prog: str) -> NoReturn:
    """`run` as the whole life of a process: exit with its status, without the interpreter's teardown.

    A process that has imported SymPy spends about 0.15 s at exit freeing its
    objects (SymPy's caches, collected cycle by cycle), for nothing: by then
    every output is flushed (`run`) and every file written whole and closed.
    """
    try:
        status = run(main, prog)
    except SystemExit as stop:  # argparse's exit after --help or a usage error
        status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        if not isinstance(stop.code, (int, type(None))):
            print(stop.code, file=sys.stderr)
    if sys.stderr is not None:  # None when started with stderr closed (2>&-)
        with suppress(OSError, ValueError):
            sys.stderr.flush()
    os._exit(status)


def _error(line: str) -> None:
    """``line`` on stderr, where there is one (it is None when started with stderr closed)."""
    if sys.stderr is not None:
        with suppress(OSError, ValueError):
            print(line, file=sys.stderr)


def _describe(error: OSError) -> str:
    if error.strerror is None:
        return str(error)
    return error.strerror if error.filename is None else f"{error.filename}: {error.strerror}"


def _release_stdout() -> None:
    """Flush stdout; if it takes no more output, point it at devnull, so that the flush at exit cannot fail.

    The Python documentation's "Note on SIGPIPE" (module ``signal``).
    """
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except OSError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        with suppress(ValueError, OSError):  # not a file descriptor: nothing is flushed at exit
            os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
