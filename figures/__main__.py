"""``python -m figures``: verify the numerics, then draw every figure.

The drawn set is kept in the derivation cache (`derivations.cache`), keyed
by every source file under ``derivations/``, ``numeric/`` and ``figures/``,
the versions of the packages that compute and draw it, and what matplotlib
read when imported: the matplotlibrc it found (the current folder's first)
and every setting it holds.  A later run with the same key writes those very
bytes without importing pyplot or SymPy: they were drawn after a verification
that passed on the same sources.  ``--no-cache`` verifies and draws again.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from derivations import cache as derivation_cache
from derivations.cli import OneLineParser, finish
from derivations.files import read_capped
from figures._output import BUILD, Writer, png, write_all

PROG = "python -m figures"
ENTRY = "figures: the verified set"

# What the drawn bytes depend on besides the sources: the packages that compute and draw them,
# and where matplotlib would read a user's settings.
_PACKAGES = ("numpy", "matplotlib", "PIL", "sympy", "mpmath")  # by import name
_SETTINGS = ("MATPLOTLIBRC", "MPLCONFIGDIR", "MPLBACKEND", "XDG_CONFIG_HOME", "HOME")


def _key() -> bytes:
    """The bytes that, with the derivation cache's own key, name the drawn set."""
    # The code that computes and draws, not what it wrote (figures/png holds copies of the set).
    parts = [derivation_cache.code("numeric", "figures"), *(derivation_cache.package(name) for name in _PACKAGES)]
    parts += [f"{name}={os.environ.get(name, '')}".encode() for name in _SETTINGS]
    return b"\0".join([*parts, _matplotlib()])


def _matplotlib() -> bytes:
    """What matplotlib draws with besides its code: the matplotlibrc it read, and every setting as it stands."""
    import matplotlib

    path = matplotlib.matplotlib_fname()
    contents = b""
    with contextlib.suppress(OSError):
        contents = read_capped(path, 2**20)
    # Read as stored: asking rcParams for an unresolved backend would import pyplot to resolve it, and the
    # sentinel it holds is named by its address.  The backend is in _SETTINGS, and a PNG is drawn by Agg.
    settings = sorted((name, repr(value)) for name, value in dict.items(matplotlib.rcParams) if name != "backend")
    return b"\0".join([path.encode(), contents, json.dumps(settings).encode()])


def _stored(count: int, files: dict[str, bytes]) -> bytes:
    """The entry of a drawn set: JSON, each file's bytes in base64."""
    encoded = {name: base64.b64encode(data).decode() for name, data in files.items()}
    return json.dumps({"count": count, "files": encoded}).encode()


def _file_name(name: object) -> bool:
    """Whether ``name`` names a file in --out (not a path elsewhere, nor a hidden or partial file)."""
    return isinstance(name, str) and name == Path(name).name and not name.startswith(".")


def _recalled(extra: bytes) -> tuple[int, dict[str, bytes]] | None:
    """The verified count and the PNG files of an earlier run with this key, or None."""
    payload = derivation_cache.read(ENTRY, extra)
    if payload is None:
        return None
    try:
        stored = json.loads(payload)
        count, files = stored["count"], stored["files"]
        valid = type(count) is int and isinstance(files, dict)
        valid = valid and all(_file_name(name) and isinstance(data, str) for name, data in files.items())
        return (count, {name: base64.b64decode(v, validate=True) for name, v in files.items()}) if valid else None
    except (ValueError, TypeError, KeyError):  # binascii.Error is a ValueError
        return None


def __getattr__(name: str) -> Any:
    # The figure modules and the verification, imported only when a set is drawn.
    if name == "FIGURES":
        import figures

        return figures.FIGURES
    if name == "verify":
        from numeric.checks import verify

        return verify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _drawn() -> tuple[int, dict[str, bytes]] | None:
    """Verify, then draw every figure to PNG bytes; None when verification failed."""
    this = sys.modules[__name__]
    verify, figures = this.verify, this.FIGURES
    try:
        count = sum(verify.run().values())
    except verify.AgreementError as error:
        print(f"verification failed: {error}", file=sys.stderr)
        return None
    print(f"verification passed: {count} values agree")
    files = {}
    for module in figures:
        buffer = io.BytesIO()
        png(module.draw())(buffer)
        files[module.FILENAME] = buffer.getvalue()
    return count, files


def _folder(text: str) -> Path:
    # An empty --out would be the current folder: say "." for that.
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a folder, not be empty")
    return Path(text)


def _writer(data: bytes) -> Writer:
    return lambda file: file.write(data)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=_folder, default=BUILD, help=f"output folder (default: {BUILD})")
    parser.add_cache_option()
    args = parser.parse_args(argv)
    extra = _key() if derivation_cache.enabled() else b""
    found: Any = _recalled(extra) if derivation_cache.enabled() else None
    if found is not None:
        print(f"verification passed: {found[0]} values agree (an earlier run, same sources and versions)")
    else:
        found = _drawn()
        if found is None:
            print(f"{PROG}: no figure written", file=sys.stderr)
            return 1
        derivation_cache.write(ENTRY, _stored(*found), extra)
    # Every figure is drawn before any replaces its old file: the set is new, or as it was.
    for path in write_all({args.out / name: _writer(data) for name, data in found[1].items()}):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    finish(main, PROG)
