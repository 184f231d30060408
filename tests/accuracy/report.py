"""``make accuracy``: worst errors against mpmath, and where the seed's formula and PyTorch fail.

The table comes from `numeric.checks.accuracy`; the failure cases compare the
seed's hand-typed expressions (kept in tests/seed_reference.py) and, when it
is installed, PyTorch's ``layer_norm`` with ours at the same inputs.  With
``--readme`` the accuracy block of docs/accuracy.md is rewritten from these numbers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import mpmath
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import seed_reference

from numeric import layernorm
from numeric.checks import accuracy

PAGE = Path(__file__).resolve().parents[2] / "docs" / "accuracy.md"


def _true(name: str, t: Any, eps: Any) -> float:
    with mpmath.workdps(accuracy.DIGITS):
        return float(accuracy._reference("layernorm", name)(mpmath.mpf(float(t)), mpmath.mpf(float(eps))))


def failures() -> list[tuple[str, float, str, float]]:
    """(case, true value, what the seed or PyTorch returns, what we return)."""
    cases = [
        ("response", np.float64(1e200), np.float64(0.25)),
        ("slope", np.float64(1e-200), np.float64(1e-300)),
        ("response", np.float32(1e20), np.float32(0.25)),
        ("slope", np.float32(1e-20), np.float32(1e-30)),
    ]
    rows = []
    for name, t, eps in cases:
        with np.errstate(all="ignore"):
            theirs = getattr(seed_reference, name)(t, eps)
        ours = getattr(layernorm, name)(t, eps)
        case = f"`{name}(t={t:g}, epsilon={eps:g})`, {np.asarray(t).dtype}"
        rows.append((case, _true(name, t, eps), f"seed: {float(theirs):.7g}", float(ours)))
    try:
        import torch
    except ImportError:
        return rows
    x = np.array([-1e20, 0.0, 1e20], dtype=np.float32)
    theirs = torch.nn.functional.layer_norm(torch.from_numpy(x), (3,), eps=0.25).numpy()[2]
    ours = layernorm.forward(x, np.float32(0.25))[2]
    case = "`layer_norm((-1e20, 0, 1e20), eps=0.25)[2]`, float32"
    rows.append((case, _true("response", 1e20, 0.25), f"PyTorch: {float(theirs):.7g}", float(ours)))
    return rows


def markdown(results: list[accuracy.Result], broken: list[tuple[str, float, str, float]]) -> str:
    lines = ["| function | dtype | worst error (ulp) | bound | points | where |", "|---|---|---|---|---|---|"]
    lines += [f"| `{r.function}` | {r.dtype} | {r.worst:.2f} | {r.bound:g} | {r.points} | {r.where} |" for r in results]
    lines += ["", "| input | true value | seed / PyTorch | ours |", "|---|---|---|---|"]
    lines += [f"| {case} | {true:.7g} | {theirs} | {ours:.7g} |" for case, true, theirs, ours in broken]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    results = accuracy.measure()
    broken = failures()
    print(accuracy.table(results))
    print(f"{'input':<58}{'true':>14}{'seed / PyTorch':>22}{'ours':>14}")
    for case, true, theirs, ours in broken:
        print(f"{case:<58}{true:>14.7g}{theirs:>22}{ours:>14.7g}")
    if "--readme" in argv:
        pattern = re.compile(r"(<!-- accuracy:start -->\n)(.*?)(<!-- accuracy:end -->)", re.S)
        text = PAGE.read_text()
        if pattern.search(text) is None:
            raise SystemExit(f"{PAGE}: no accuracy block (<!-- accuracy:start --> ... <!-- accuracy:end -->)")
        PAGE.write_text(pattern.sub(lambda m: m.group(1) + markdown(results, broken) + m.group(3), text))
    passed = sum(r.ok for r in results)
    print(f"accuracy: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
