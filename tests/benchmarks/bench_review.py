"""``python tests/benchmarks/bench_review.py``: review of the example paper, cold and warm.

Prints wall times of `python -m derivations review examples/paper/main.tex` in a cache of its own:
cold (an empty cache), warm (the derivations cached, every verdict decided afresh: a paper never
reviewed before; verdicts are cached by their time budget, so a budget not used before gives
fresh ones), and repeated (the verdicts cached too).  The target is warm < 15 s on two cores; the
machine is noisy, so each warm figure is the best of three.  A benchmark, never a timed test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "examples" / "paper" / "main.tex"


def _run(out: str, cache: str, timeout: float) -> float:
    start = time.perf_counter()
    status = subprocess.run(
        [sys.executable, "-m", "derivations", "review", str(PAPER), "--out", out, "--timeout", str(timeout)],
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "XDG_CACHE_HOME": cache},
    ).returncode
    if status not in (0, 1):
        raise SystemExit(f"review exited with {status}")
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as cache:
        cold = _run(out, cache, 10)
        warm = min(_run(out, cache, 10 + attempt / 100) for attempt in range(1, 4))
        repeated = min(_run(out, cache, 10) for _ in range(3))
    print(f"review examples/paper, cold cache                  {cold:6.2f} s")
    print(f"review examples/paper, warm (verdicts afresh)      {warm:6.2f} s   (target < 15 s)")
    print(f"review examples/paper, repeated (verdicts cached)  {repeated:6.2f} s")


if __name__ == "__main__":
    main()
