"""Where figures go, and how files are written: a whole set of them, or none."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import signal
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BUILD = Path("build") / "figures"

# Temporaries are named ".partial-<pid>-<random>-<name>".  One that a killed
# process left behind is removed by the next write to its folder.
PARTIAL = ".partial-"

Writer = Callable[[BinaryIO], object]


def display_math(latex: str) -> str:
    """Display-style fractions: mathtext's inline \\frac is too small to read."""
    return latex.replace(r"\frac", r"\dfrac")


def png(figure: Figure) -> Writer:
    """What writes ``figure`` as a PNG to a file."""
    return lambda file: figure.savefig(file, format="png", dpi=figure.dpi, facecolor="white", transparent=False)


def write_all(files: Mapping[Path, Writer]) -> list[Path]:
    """Write every file, or leave every old one as it was.

    A symlink is followed: the file it leads to is written (`destination`).
    Each is written through a temporary in that file's folder, synced, with
    the permissions the umask gives.  Only when all are written does each
    replace its file; the old file is kept as a hard link until all are in
    place.  A failure at any step, SIGTERM included, puts the old files back
    and removes every temporary.
    """
    leftovers: list[Path] = []  # removed at the end, whatever happens
    replaced: list[tuple[Path, Path | None]] = []  # file, and its old content (None: none); before the rename
    with _sigterm_exits():
        try:
            for folder in {target.parent for target in files}:
                prepare(folder)
            ends = {target: destination(target) for target in files}
            for folder in {end.parent for end in ends.values()} - {target.parent for target in files}:
                _sweep(folder)
            staged = [(target, _stage(target, ends[target], write, leftovers)) for target, write in files.items()]
            for target, temporary in staged:
                with _naming(target):
                    replaced.append((ends[target], _keep(ends[target], leftovers)))
                    os.replace(temporary, ends[target])
        except BaseException:
            for target, old in reversed(replaced):
                with suppress(OSError):
                    if old is None:
                        os.remove(target)
                    else:
                        os.replace(old, target)
            raise
        finally:
            for path in leftovers:
                with suppress(OSError):  # at worst, the next write to the folder removes it
                    os.remove(path)
    return list(files)


def prepare(folder: Path) -> None:
    """Create ``folder``, and remove the temporaries that killed processes left in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder)) from None
    _sweep(folder)


def destination(target: Path) -> Path:
    """The file a write to ``target`` replaces: ``target``, or where its symlinks lead.

    Raises IsADirectoryError for a folder, and OSError "Not a regular file"
    for a device, FIFO or socket, which a rename would replace by a file;
    either names ``target``.
    """
    with _naming(target):
        end = Path(os.path.realpath(target))
        try:
            mode = end.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):  # a new file, or a folder to be made (`prepare` says)
            return end
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "Not a regular file")
    return end


def _sweep(folder: Path) -> None:
    """Remove the temporaries that killed processes left in ``folder``."""
    for path in folder.glob(f"{PARTIAL}*"):
        if _orphaned(path):
            with suppress(FileNotFoundError):
                path.unlink()


def _orphaned(path: Path) -> bool:
    """Whether the process that named this temporary is gone: signal 0 probes, on POSIX only."""
    pid = path.name.removeprefix(PARTIAL).split("-", 1)[0]
    if os.name != "posix" or not pid.isdigit():  # elsewhere os.kill would end the process
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists, but is not ours to signal
        return False
    return False


def _temporary(target: Path) -> Path:
    return target.with_name(f"{PARTIAL}{os.getpid()}-{secrets.token_hex(4)}-{target.name}")


def _stage(target: Path, end: Path, write: Writer, leftovers: list[Path]) -> Path:
    """A temporary beside ``end``, the file ``target`` leads to, holding what ``write`` writes, on disk."""
    with _naming(target):
        temporary = _temporary(end)
        leftovers.append(temporary)  # before it exists: a SIGTERM in between still removes it
        # Mode 0o666 less the umask, as open() creates a file.
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
    return temporary


def _keep(target: Path, leftovers: list[Path]) -> Path | None:
    """A second name for the old ``target``, to put back if a later step fails; None if there is none."""
    if not target.exists():
        return None
    old = _temporary(target)
    leftovers.append(old)
    try:
        os.link(target, old)
    except OSError:  # a filesystem without hard links
        shutil.copy2(target, old)
    return old


@contextmanager
def _naming(target: Path) -> Iterator[None]:
    """An OSError on the way to ``target`` names ``target``, not a temporary."""
    try:
        yield
    except OSError as error:
        if error.errno is None:
            raise
        raise OSError(error.errno, error.strerror, str(target)) from error


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """While files are written, SIGTERM raises SystemExit, so that the clean-up runs."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
