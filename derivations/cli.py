"""Command-line plumbing shared by every command: derivations, figures, figures.report, numeric.checks.verify."""

from __future__ import annotations

import argparse
import codecs
import difflib
import os
import signal
import sys
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any, NoReturn

from derivations import cache as derivation_cache
from derivations import interrupts

# The longest time budget a command's --timeout takes, in seconds: an hour.
TIMEOUT_LIMIT = 3600


class _NoCache(argparse.Action):
    """``--no-cache``: the derivation cache is off from the moment the option is read."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        derivation_cache.disable()
        setattr(namespace, self.dest, True)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit status 2."""

    def add_cache_option(self) -> None:
        """``--no-cache``, for a command whose derivations start after its arguments are read."""
        self.add_argument(
            "--no-cache",
            action=_NoCache,
            help=f"neither read nor write the derivation cache (or set {derivation_cache.ENVIRONMENT}=1)",
        )

    def add_timeout_option(self, default: float, help: str) -> None:
        """``--timeout SECONDS``, a time budget in (0, `TIMEOUT_LIMIT`], the same for every command."""
        self.add_argument("--timeout", type=_seconds, default=default, metavar="SECONDS", help=help)

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse's own version swallows a failure to write (--help > /dev/full);
        # here it reaches `run`, which reports it in one line.
        if message:
            (file or sys.stderr).write(message)

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own message, with the nearest choice named first: a misspelt layer,
        # format or command is one line that says what was meant.
        choices = action.choices
        if choices is not None and value not in choices:
            listed = ", ".join(map(repr, choices))
            near = suggest(str(value), [str(choice) for choice in choices])
            hint = f"; did you mean {near!r}?" if near else ""
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {listed})")


def _seconds(text: str) -> float:
    """``text`` as a time budget in seconds; argparse names the option in its error."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < seconds <= TIMEOUT_LIMIT:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {TIMEOUT_LIMIT} seconds, not {text}")
    return seconds


def suggest(word: str, known: Iterable[str]) -> str | None:
    """The known name ``word`` most likely stands for: one it begins (at least two letters),
    else the closest spelling (`difflib.get_close_matches`), else None.

    >>> suggest("rmsnrom", ["layernorm", "rmsnorm"]), suggest("chek", ["check", "codegen"])
    ('rmsnorm', 'check')
    >>> suggest("eps", ["epsilon", "n"]), suggest("zzz", ["check"]) is None
    ('epsilon', True)
    """
    names = sorted(set(known))
    if len(word) >= 2:
        started = [name for name in names if name.startswith(word) and name != word]
        if started:
            return min(started, key=len)
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return close[0] if close else None


def read_input(limit: int) -> bytes:
    """Standard input, read whole, as bytes: at most ``limit`` of them.

    Raises ValueError, in words fit for one line, where it is closed or holds more.
    """
    stream = sys.stdin
    if stream is None:
        raise ValueError("standard input is closed")
    source = getattr(stream, "buffer", None)
    try:
        data = source.read(limit + 1) if source is not None else stream.read(limit + 1).encode()
    except OSError as error:
        raise ValueError(f"standard input: {error.strerror or error}") from None
    if len(data) > limit:
        raise ValueError(f"standard input is larger than {limit} bytes")
    return data


class _NoBar:
    """What `progress` gives where stderr is not a terminal: every call does nothing."""

    def update(self, count: int = 1) -> None:
        pass

    def clear(self) -> None:
        pass

    def close(self) -> None:
        pass


def progress(total: int, unit: str, description: str) -> Any:
    """A progress bar on stderr, ``total`` ticks of ``unit``, where stderr is a terminal; elsewhere
    one that prints nothing (a pipe, a file, a test's capture).  The caller closes it; the bar
    leaves no line behind.  tqdm's monitor thread is off: the commands fork workers while a bar
    is shown.
    """
    stream = sys.stderr
    try:
        shown = stream is not None and stream.isatty()
    except (OSError, ValueError):  # a closed stream
        shown = False
    if not shown:
        return _NoBar()
    from tqdm import tqdm

    class Bar(tqdm):
        monitor_interval = 0

    # Each tick is slow work (a layer derived, a claim decided): each is shown as it comes.
    return Bar(total=total, unit=unit, desc=description, file=stream, leave=False, mininterval=0, miniters=1)


def run(main: Callable[[list[str] | None], int], prog: str, argv: list[str] | None = None) -> int:
    """Run a command's ``main``: its exit status, and never a traceback for a failure to write.

    A reader that stopped early (a broken pipe) ends the command quietly, with
    status 0 if ``main`` had not finished.  Any other failure to write, stdout
    or a file (a full disk, an unwritable folder), is one line on stderr and
    status 2; running out of memory is one line and status 1.  stdout is
    flushed here, inside the guard, because the flush Python makes at exit
    reports a failure as a traceback.  A stdout that cannot encode a character
    (an ASCII locale) gets its ASCII spelling (`ascii_spelling`).
    """
    if sys.stdout is None:  # started with stdout closed (>&-): nothing can be written
        _error(f"{prog}: error: standard output is closed")
        return 2
    _spell_unencodable(sys.stdout)
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
    except MemoryError as error:
        _error(f"{prog}: error: {describe(error)}")
        stop, status = None, 1
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
    Ctrl-C ends it at once, with one line and status 130.
    """
    interrupts.one_line(prog)
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


def end_with_parent(parent: int) -> None:
    """In a forked child: have the kernel kill it when ``parent`` ends (Linux's PR_SET_PDEATHSIG).

    A child whose parent has already ended by the time this is set leaves at once.  Elsewhere
    than Linux nothing is set: the parent ends its children itself where it can.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def describe(error: BaseException) -> str:
    """``error`` in one line, ``Type: message``; a MemoryError, which has no message, as "out of memory".

    >>> describe(MemoryError()), describe(ValueError("two\\nlines")), describe(KeyError())
    ('out of memory', 'ValueError: two lines', 'KeyError')
    """
    if isinstance(error, MemoryError):
        return "out of memory"
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


# The ASCII spellings of the characters the commands print beyond ASCII.
_ASCII = {
    "\u2212": "-",  # minus
    "\u2013": "-",
    "\u2014": "--",
    "\u2016": "||",  # double vertical line: a norm
    "\u2082": "_2",
    "\u00b7": "*",
    "\u00d7": "x",
    "\u00b1": "+-",
    "\u2264": "<=",
    "\u2265": ">=",
    "\u2260": "!=",
    "\u2248": "~=",
    "\u2192": "->",
    "\u2190": "<-",
    "\u21d2": "=>",
    "\u221a": "sqrt ",
    "\u221e": "inf",
    "\u2026": "...",
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u03b5": "epsilon",
    "\u03b1": "alpha",
    "\u03b2": "beta",
    "\u03b3": "gamma",
    "\u03bc": "mu",
    "\u03c3": "sigma",
}


def ascii_spelling(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler ``derivations-ascii``: a character the output cannot encode
    in its ASCII spelling, else as a backslash escape.

    >>> "‖J‖₂ ≤ 1/√ε".encode("ascii", "derivations-ascii")
    b'||J||_2 <= 1/sqrt epsilon'
    """
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(_ASCII.get(char) or char.encode("ascii", "backslashreplace").decode() for char in text), error.end


codecs.register_error("derivations-ascii", ascii_spelling)


def _spell_unencodable(stream: Any) -> None:
    """Have ``stream`` write what its encoding lacks in ASCII spellings, where it is a text file not in UTF."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
    if not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
        with suppress(OSError, ValueError):
            stream.reconfigure(errors="derivations-ascii")


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
