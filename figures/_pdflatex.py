"""Compiling LaTeX with pdflatex, and reading from its log what a reader would see go wrong."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# A box this much wider than the line sticks visibly into the margin.
OVERFULL_LIMIT_PT = 10.0

_OVERFULL = re.compile(r"^Overfull \\[hv]box \((\d+(?:\.\d+)?)pt too (?:wide|high)\).*$", re.M)
_ERROR = re.compile(r"^! (.*)$", re.M)


class LatexError(RuntimeError):
    """pdflatex failed, or its log shows a problem a reader would see."""


@dataclass(frozen=True)
class Compiled:
    pdf: bytes
    log: str


def available() -> bool:
    return shutil.which("pdflatex") is not None


def problems(log: str) -> list[str]:
    """Errors (an undefined control sequence among them) and boxes overfull by more than the limit."""
    found = [f"! {message}" for message in _ERROR.findall(log)]
    found += [m.group(0) for m in _OVERFULL.finditer(log) if float(m.group(1)) > OVERFULL_LIMIT_PT]
    return found


def compile_pdf(source: str, cwd: Path | None = None) -> Compiled:
    """Compile ``source`` in a temporary folder; files it includes are found from ``cwd``.

    Raises `LatexError` naming the first problem when pdflatex fails or
    `problems` finds one.
    """
    with tempfile.TemporaryDirectory(prefix="pdflatex-") as folder:
        tex = Path(folder) / "document.tex"
        tex.write_text(source, encoding="utf-8")
        command = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"-output-directory={folder}", str(tex)]
        finished = subprocess.run(command, cwd=cwd, capture_output=True, timeout=120, check=False)
        log_file = tex.with_suffix(".log")
        log = log_file.read_text(encoding="latin-1") if log_file.exists() else finished.stdout.decode("latin-1")
        found = problems(log)
        if finished.returncode != 0 or found:
            first = found[0] if found else f"exit status {finished.returncode}"
            raise LatexError(f"pdflatex: {first}")
        return Compiled(tex.with_suffix(".pdf").read_bytes(), log)
