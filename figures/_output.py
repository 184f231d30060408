"""Where figures go, and how they are written: atomically, or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from matplotlib.figure import Figure

BUILD = Path("build") / "figures"


def display_math(latex: str) -> str:
    """Display-style fractions: mathtext's inline \\frac is too small to read."""
    return latex.replace(r"\frac", r"\dfrac")


def save(figure: Figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=path.suffix)
    os.close(handle)
    try:
        figure.savefig(temporary, dpi=figure.dpi, facecolor="white", transparent=False)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return path
