"""The one agreement check used by every test and by the pre-figure verification."""

from __future__ import annotations

from typing import Any

import numpy as np


class AgreementError(AssertionError):
    """Two computations of the same quantity disagree beyond the tolerance."""


def assert_agree(actual: Any, expected: Any, *, rtol: float, atol: float = 0.0, what: str) -> int:
    """Check ``|actual - expected| <= atol + rtol * |expected|`` entry-wise.

    Shapes must match exactly (no silent broadcasting).  Returns the number of
    entries compared; raises `AgreementError` naming the worst entry.
    """
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AgreementError(f"{what}: shape {a.shape} != expected shape {e.shape}")
    if not (np.isfinite(a).all() and np.isfinite(e).all()):
        raise AgreementError(f"{what}: non-finite values (actual {a.ravel()[:4]}, expected {e.ravel()[:4]})")
    excess = np.abs(a - e) - (atol + rtol * np.abs(e))
    if a.size and excess.max() > 0:
        worst = np.unravel_index(np.argmax(excess), a.shape)
        raise AgreementError(f"{what}: at {worst} got {a[worst]!r}, expected {e[worst]!r} (rtol={rtol}, atol={atol})")
    return int(a.size)


def exact(expr: Any, values: dict[Any, float], digits: int = 30) -> float:
    """Evaluate a SymPy expression at float inputs taken as exact rationals.

    The inputs are converted without rounding, so the only error left is
    the final rounding to float64: an independent reference for lambdify.
    """
    import sympy as sp

    point = {symbol: sp.Rational(float(value)) for symbol, value in values.items()}
    return float(sp.sympify(expr).evalf(digits, subs=point))
