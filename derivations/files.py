"""Reading a file nobody vouches for: a regular file only, and never more than a cap.

A FIFO would block the reader forever and ``/dev/zero`` would fill memory, so
the file is opened without blocking, checked to be a regular file on the open
descriptor (not by name, which could change in between), and read up to one
byte past the cap.

>>> import tempfile, os
>>> with tempfile.NamedTemporaryFile(delete=False) as handle:
...     _ = handle.write(b"abc")
>>> read_capped(handle.name, 3)
b'abc'
>>> read_capped(handle.name, 2)
Traceback (most recent call last):
...
derivations.files.Unreadable: larger than 2 bytes
>>> os.unlink(handle.name)
>>> read_capped("/dev/null", 10)
Traceback (most recent call last):
...
derivations.files.Unreadable: not a regular file
>>> read_capped(tempfile.gettempdir(), 10)
Traceback (most recent call last):
...
derivations.files.Unreadable: not a regular file
"""

from __future__ import annotations

import os
import stat


class Unreadable(OSError):
    """A file that is not a regular file, is too large, or cannot be opened; says which."""


def read_capped(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file ``path``, if it holds at most ``limit`` of them."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise Unreadable(error.strerror or str(error)) from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise Unreadable("not a regular file")
        data = b""
        while len(data) <= limit:  # a regular file read in pieces: os.read may return fewer bytes
            piece = os.read(descriptor, limit + 1 - len(data))
            if not piece:
                break
            data += piece
    except Unreadable:
        raise
    except OSError as error:
        raise Unreadable(error.strerror or str(error)) from None
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise Unreadable(f"larger than {limit} bytes")
    return data
