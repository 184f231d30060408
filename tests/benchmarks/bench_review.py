"""``python tests/benchmarks/bench_review.py``: review of the example paper, cold and with a warm cache.

Prints wall times of `python -m derivations review examples/paper/main.tex` (target: warm < 15 s on
two cores); the machine is noisy, so each warm figure is the best of three.  A benchmark, never a timed test.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "examples" / "paper" / "main.tex"


def _run(out: str, *extra: str) -> float:
    start = time.perf_counter()
    status = subprocess.run(
        [sys.executable, "-m", "derivations", "review", str(PAPER), "--out", out, *extra],
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    ).returncode
    if status not in (0, 1):
        raise SystemExit(f"review exited with {status}")
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as out:
        cold = _run(out, "--no-cache")
        _run(out)  # fills the cache
        warm = min(_run(out) for _ in range(3))
    print(f"review examples/paper (--no-cache)     {cold:6.2f} s")
    print(f"review examples/paper (warm cache)     {warm:6.2f} s   (target < 15 s)")


if __name__ == "__main__":
    main()
