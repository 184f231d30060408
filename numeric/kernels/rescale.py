r"""Rescaling by the derived homogeneity, so that no intermediate overflows or underflows.

`derivations.derive.scaling` proves f(m x, m**e eps) = m**p f(x, eps).  At the scale
m = max(|x|, eps**(1/e)) both scaled inputs are at most 1 and one of them is
1, so every square or cube formed from them is a normal float64, and

.. math:: f(x, \varepsilon) = m^{d} f(x/m, \varepsilon/m^e).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from types import FrameType
from typing import Any, NamedTuple

import numpy as np

from numeric import _validate

# The range of the scale m where the plain lambdified scalar expressions are
# used as they are: every power of m up to the third is a normal float64.
MODERATE = (1e-100, 1e100)

# The smallest normal float64 and its unit roundoff: a rescaled epsilon below TINY has lost digits.
TINY = float(np.finfo(np.float64).tiny)
# A scaled epsilon below this is far below the input's scale: a power of it can underflow (`at_scale`).
FAR = 1e-30
# The largest input entry at the balanced scale that `at_scale` takes a value at: its square, and a
# mean of squares, stay finite.
RESOLVED = 1e150
# The largest input entry a scale of `_across_scales` may hold: its IEEE flags tell the rest.
INPUT = 1e300
EPSILON = float(np.finfo(np.float64).eps)
# A row's input scale below this, at the scale where epsilon is 1, is far below it (`_below`).
NEAR = 1e-15
# ... where the balanced scale holds the input above this, and epsilon below its inverse: the
# square of epsilon is then finite there, and the cube of the input normal.
BALANCED = 1e-90
# Rows whose input and root of epsilon are more than this many binades apart (about 1e25) are
# checked at several scales (`_across_scales`), and two values agree within this, normwise.
APART = 84
AGREE = 1e-11
# The most evaluations `_clean` spends on one scale, finding the rows an intermediate leaves the range in.
PROBES = 32
# A wider float than float64 where the platform has one (x87's 80 bits: exponents to 16383, not
# 1023): rows no float64 scale holds every intermediate of are evaluated in it (`_across_scales`).
WIDE = np.dtype(np.longdouble)
EXTENDED = np.finfo(WIDE).maxexp >= 8 * np.finfo(np.float64).maxexp

# Elementwise functions run over chunks of this many entries, so that the
# temporaries of each chunk stay in cache; on 10^6 points this halves the time.
BLOCK = 1 << 15


# A fused program runs on the rows as they are where every scale it sees
# (the spread, the root of epsilon, each vector's largest entry) lies within
# 2**-L .. 2**L, L an eighth of the format's exponent range: then no power up
# to the sixth of them, times a vector's entry, leaves the normal numbers.
def fast_range(dtype: np.dtype) -> tuple[float, float]:
    """The scales at which a fused program needs no rescaling in ``dtype``."""
    limit = np.finfo(dtype).maxexp // 8
    return 2.0**-limit, 2.0**limit


# A mean of x itself at most this many spreads from 0: subtracting it once
# loses at most a few ulp of the spread.  Further out (a large offset) the
# row is rescaled and centered twice, in `normalized`.
OFFSET = 4.0


def fits(
    spread: np.ndarray, means: list[np.ndarray], root: np.ndarray, tops: list[np.ndarray], dtype: np.dtype
) -> np.ndarray:
    """Which rows a fused program computed without rescaling, shape (rows,).

    ``spread`` is the length scale of each row's spread statistic, ``means``
    the raw means of x a centered layer subtracted, ``root`` the root of
    epsilon, ``tops`` each vector's `largest` entry; a non-finite value (an
    entry inf or NaN, an overflow) fails.  All of shape (rows, 1).
    """
    low, high = fast_range(dtype)
    ok = (low <= spread) & (spread <= high) & (low <= root) & (root <= high)
    for mean in means:
        ok &= np.abs(mean) <= OFFSET * spread
    for top in tops:
        ok &= (low <= top) & (top <= high)
    return ok[:, 0]


def largest(vector: np.ndarray) -> np.ndarray:
    """The largest magnitude in each row, shape (rows, 1); NaN where a row holds one."""
    return np.maximum(np.max(vector, axis=-1, keepdims=True), -np.min(vector, axis=-1, keepdims=True))


def epsilon_root(e: Any, degree: int) -> Any:
    """epsilon ** (1 / degree): the length scale epsilon sets, sqrt(epsilon) or
    epsilon itself (sqrt is correctly rounded, a general power is not)."""
    return np.sqrt(e) if degree == 2 else e if degree == 1 else np.power(e, 1.0 / degree)


def rescaled(amplitude: np.ndarray, e: np.ndarray, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """The scale m = max(|amplitude|, root of epsilon) and epsilon / m**degree."""
    root = epsilon_root(e, degree)
    m = np.maximum(amplitude, root)
    return m, (root / m) ** degree


def normalized(
    array: np.ndarray, e: np.ndarray, degree: int, centered: bool, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x and epsilon brought to size at most 1, and the scale M with x = M * scaled.

    A translation-invariant layer (`derivations.derive.scaling.translation_invariant`)
    sees only x - mean(x), so the mean is subtracted first, in two passes and
    after a first division by max(|x|, root of epsilon) that keeps every sum
    finite; then the centered input, whose size is the spread rather than the
    offset, sets the scale.  A constant input thus has scale root(epsilon),
    and an offset of 1e15 keeps an O(1) signal.  Returns (scaled x, scaled
    epsilon, M), epsilon and M with a trailing axis of length 1.

    ``weights`` (0/1, a subset's indicator) picks the entries the spread is a
    mean over, where that is not all of them (partial RMSNorm): their size sets
    the scale, so that the spread and epsilon stay in range even where other
    entries are far larger (which then grow, as the output does).
    """
    root = epsilon_root(e, degree)
    seen = np.abs(array) if weights is None else np.abs(array) * weights
    # A power of two at least max(|x|, root): dividing by it is exact, so the
    # centering below subtracts exactly what the input holds.
    _, exponent = np.frexp(np.maximum(np.max(seen, axis=-1, keepdims=True), root))
    m = np.ldexp(1.0, np.minimum(exponent, 1023))  # 2**1024 is not a float64
    values = array / m
    relative_root = root / m
    if centered:
        values = values - np.mean(values, axis=-1, keepdims=True)
        values -= np.mean(values, axis=-1, keepdims=True)
        spread = np.max(np.abs(values), axis=-1, keepdims=True)
        inner = np.maximum(spread, relative_root)
        # Where both vanish (a constant input, epsilon below the offset's
        # resolution) the only scale left is root(epsilon) itself.
        lost = inner == 0
        inner = np.where(lost, 1.0, inner)
        # A power of two too, so that m * inner below is exact where m is subnormal (an input
        # of 5e-324's scale: 0.75 * 2**-1074 rounds to 2**-1074); not where that power of two
        # would take m * inner past float64's largest (epsilon near it: 2**1023 * 2).
        whole = np.ldexp(1.0, np.frexp(inner)[1])
        with np.errstate(over="ignore"):
            inner = np.where(np.isfinite(m * whole), whole, inner)
        values = values / inner
        # m is at most 2**1023 and inner at most about 3 (x up to float64's largest, centered):
        # their product, the true scale, can exceed float64.  It is then inf, whose powers are
        # what the result's own are: 1 at degree 0 (the output), an overflow above, and below an
        # underflow to 0 of a value under 2**-1022 in size.  No warning for that overflow.
        first = m
        with np.errstate(over="ignore"):
            m = np.where(lost, root, m * inner)
        # Divided once by the final scale: root / m alone can be subnormal
        # (epsilon far below a large offset) and lose its digits.  Where that scale is inf, by
        # its two factors in turn (epsilon at 1e308 with x near the largest float: root / inf
        # gave 0, and epsilon was lost).
        with np.errstate(divide="ignore", invalid="ignore"):
            relative_root = np.where(lost, 1.0, np.where(np.isfinite(m), root / m, root / first / inner))
    return values, relative_root**degree, m


def balanced(
    array: np.ndarray, e: np.ndarray, degree: int, centered: bool, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like `normalized`, but at the geometric mean of the input's own scale and the root of
    epsilon: where the two are more than the float range apart (x ~ 1e-300, epsilon ~ 1e-120),
    scaling by either one loses the other; halfway, x and epsilon are both inside the range."""
    own, _, m_own = normalized(array, np.zeros_like(e), degree, centered, weights)
    root = epsilon_root(e, degree)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        m = np.where(m_own > 0, np.sqrt(m_own) * np.sqrt(root), root)
        ratio = np.where(m > 0, m_own / m, 0.0)
        relative = np.where(m > 0, root / m, 1.0)
    return own * ratio, relative**degree, m


class Scaled(NamedTuple):
    """Rows of x and epsilon divided by a scale M, and M, as `normalized` and `balanced` give them."""

    x: np.ndarray
    e: np.ndarray
    m: np.ndarray


def at_scale(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any],
    array: np.ndarray,
    e: np.ndarray,
    degree: int,
    centered: bool,
    weights: np.ndarray | None,
    checked: bool = True,
) -> Any:
    """``at(scaled x, scaled epsilon, M)``, the value at rows of x and epsilon from the rows scaled
    by M, at the scale of `normalized`; in a row whose scaled epsilon fell below the normal floats
    and whose value changes with it there (epsilon a factor, not added to a statistic), or fell
    below `FAR` and changes the value at the scale of `balanced`, at that scale instead.

    ``at`` gives an array with the rows' leading axes (shape (..., n), or (..., n, n) for a
    Jacobian), or a list of them (one per backward product): the result is the same.
    ``checked``: warn where the value cannot be trusted (`_across_scales`); off for a part of
    a value its caller assembles from several, which is still taken at a clean scale where one
    is found (a part can be rounding residue, on which no scale agrees)."""
    here = Scaled(*normalized(array, e, degree, centered, weights))
    # An intermediate beyond the range here (a square of an input far below epsilon's scale
    # underflowing, then 0 / 0) is the rows' to be taken again below: NumPy's own warning for
    # it would be about a value that is not returned.
    with np.errstate(all="ignore"):
        first = at(*here)
    out = _as_list(first)
    # Only a row far from epsilon's scale, one way or the other, is taken again elsewhere.
    negligible = np.zeros(here.m.shape, dtype=bool)
    if ((here.e < FAR) | (largest(here.x) < NEAR)).any():
        with np.errstate(all="ignore"):  # a constant row's spread is 0 at its own scale: not one of these
            there = Scaled(*balanced(array, e, degree, centered, weights))
        out = _below(at, out, here, there, e)
        out, negligible = _above(at, out, here, there, e)
    out = _across_scales(at, out, array, e, degree, centered, weights, here, ~negligible, checked)
    return out if isinstance(first, list) else out[0]


def _below(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], out: list[Any], here: Scaled, there: Scaled, e: np.ndarray
) -> list[Any]:
    """Rows whose input is far below the root of epsilon (at their scale, the input is under
    `NEAR`): a product or ratio of several entries (x x^T / r**1.5 in a Hessian) underflows there,
    while at the balanced scale, where the input and epsilon are both inside the range, it does not.
    Taken there wherever that scale holds the input above `BALANCED` and epsilon below its inverse,
    and the value there is finite.  ``here``: the rows as `normalized` scales them, ``there`` as
    `balanced` does."""
    (scaled, e_scaled, m), (own, e_own, m_own) = here, there
    near = np.broadcast_to((largest(scaled) < NEAR) & (e > 0), m.shape)
    near = near & (largest(own) >= BALANCED) & (e_own <= 1 / BALANCED)
    if not near.any():
        return out
    with np.errstate(all="ignore"):
        again = _as_list(at(np.where(near, own, scaled), np.where(near, e_own, e_scaled), np.where(near, m_own, m)))
        finite = np.all([~_any_per_row(~np.isfinite(a), scaled) for a in again], axis=0)
    use = near & finite
    return [np.where(_widened(use, value), other, value) for value, other in zip(out, again, strict=True)]


def _above(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], out: list[Any], here: Scaled, there: Scaled, e: np.ndarray
) -> tuple[list[Any], np.ndarray]:
    """Rows whose scaled epsilon is far below the input's scale (`at_scale`); ``here`` and
    ``there`` as in `_below`.  Also returns the rows whose scaled epsilon fell below the normal
    floats and whose value does not change with it there (epsilon added to a statistic it is
    negligible beside), shape (..., 1): their value stands.  (At the balanced scale that test is
    not made: a value saturated there does not change with epsilon either.)"""
    (scaled, e_scaled, m), (own, e_own, m_own) = here, there
    candidates = np.broadcast_to((e_scaled < FAR) & (e > 0), m.shape)
    negligible = np.zeros(m.shape, dtype=bool)
    if not candidates.any():
        return out, negligible
    # Only where the balanced scale holds the input itself within the range of its squares:
    # beyond, a statistic overflows there, and 1/inf gives a finite, wrong 0.
    resolved = largest(own) <= RESOLVED

    def at_balanced(rows: np.ndarray, e_rows: np.ndarray) -> list[Any]:
        """The value with the rows ``rows`` at the balanced scale, epsilon ``e_rows`` there; the
        others computed as before."""
        return _as_list(at(np.where(rows, own, scaled), e_rows, np.where(rows, m_own, m)))

    # Every further evaluation changes only those rows: the others are computed as before.
    lost = candidates & (e_scaled < TINY)
    if lost.any():
        with np.errstate(all="ignore"):
            zero, tiny = (_as_list(at(scaled, np.where(lost, value, e_scaled), m)) for value in (0.0, TINY))
        changed = _changed(zero, tiny, scaled)
        # A value that is 0 with epsilon 0 and with the smallest normal one tells nothing: a
        # power of epsilon may underflow at both.
        negligible |= lost & ~changed & _telling(tiny, scaled)
        lost = lost & changed & resolved
    if lost.any():
        with np.errstate(all="ignore"):
            again = at_balanced(lost, np.where(lost, e_own, e_scaled))
            out = [np.where(_widened(lost, value), other, value) for value, other in zip(out, again, strict=True)]
        for value in out:
            _unresolved(value, _widened(lost, value))
    # Rows where epsilon is far below the input's scale but not lost: a power of it, or a
    # product with it, can still underflow at this scale (epsilon**2 * x / (r + epsilon) at
    # |x| = 1e100 gave 0).  Where epsilon changes the value at the balanced scale, and the value
    # there is finite, it is taken there; where it does not (epsilon added to a statistic it is
    # negligible beside), the value here stands.
    far = candidates & ~lost & resolved
    if far.any():
        with np.errstate(all="ignore"):
            again = at_balanced(far, np.where(far, e_own, e_scaled))
            without = at_balanced(far, np.where(far, 0.0, e_scaled))
            finite = [~_any_per_row(~np.isfinite(a), scaled) for a in again]
        use = far & _changed(again, without, scaled) & np.all(finite, axis=0)
        if use.any():
            # Only where the balanced scale takes the value with no IEEE flag raised: there an
            # intermediate can fall below the normal floats (epsilon / (s + epsilon)**2 at 1e-312
            # for x ~ 1e-31, epsilon = 1e-240) and keep a few of its digits, where this scale's
            # value had them all.
            use &= _clean(at, use, there, scaled)
        if use.any():
            out = [np.where(_widened(use, value), other, value) for value, other in zip(out, again, strict=True)]
    return out, negligible


def _across_scales(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any],
    out: list[Any],
    array: np.ndarray,
    e: np.ndarray,
    degree: int,
    centered: bool,
    weights: np.ndarray | None,
    first: Scaled,
    doubtful: np.ndarray,
    warn: bool = True,
) -> list[Any]:
    """``out``, checked in each ``doubtful`` row (shape (..., 1)) whose input and root of epsilon
    are more than `APART` binades apart, where float64 may not hold every intermediate at any one
    scale.  A row where epsilon was found negligible (`_above`) is not doubtful.

    The definition is homogeneous, so its value is the same at every scale.  The row is evaluated
    at nine scales a power of two apart, from the input's own to epsilon's, those where the scaled
    input and epsilon are themselves normal floats; at each, IEEE's flags say whether an
    intermediate overflowed, underflowed, was divided by zero or was not a number (`_clean`).  Where the value
    returned agrees with a clean one it stands; where it agrees with none, the clean value nearest
    the balanced scale is taken.  Where no scale is clean and the value returned is lost (zero or
    not finite across the row) while another scale keeps it, or agrees with none of those that
    keep it, a RuntimeWarning says it may be wrong."""
    scaled, e_scaled, m = first
    # At `normalized`'s scale one of the two is about 1 and the other tells the distance.
    with np.errstate(all="ignore"):
        near = (e_scaled < 2.0 ** (-APART * degree)) | (largest(scaled) < 2.0**-APART)
    if not near.any():
        return out
    own = _own_scale(array, e, degree, centered, weights, m.shape)
    apart = (np.abs(own.gap) > APART) & (own.m > 0) & (own.root > 0) & doubtful
    if not apart.any():
        return out
    values, cleans = _tried(at, first, own, e, apart, degree)
    out, settled = _settled(out, values, cleans, scaled, m.shape)
    disagree = apart & ~settled & _unconfirmed(out, values, apart, scaled, m.shape)
    if warn and disagree.any():
        _warn(
            "epsilon and x are too far apart in scale for this layer in float64: intermediates leave the "
            "float range at every scale tried, and some values may be wrong"
        )
    return out


class _OwnScale(NamedTuple):
    """Rows at their own scale (`normalized` with epsilon 0) and that scale ``m``, the root of
    epsilon, the mantissa and exponent (`np.frexp`) of each of the two scales, and the binades
    from the input's scale to epsilon's, ``gap``; all but ``x`` of shape (..., 1)."""

    x: np.ndarray
    m: np.ndarray
    root: np.ndarray
    f_root: np.ndarray
    b_root: np.ndarray
    f_own: np.ndarray
    b_own: np.ndarray
    gap: np.ndarray


def _own_scale(
    array: np.ndarray, e: np.ndarray, degree: int, centered: bool, weights: np.ndarray | None, shape: tuple[int, ...]
) -> _OwnScale:
    """The rows at their own scale and how far it lies from epsilon's, broadcast to ``shape``."""
    with np.errstate(all="ignore"):
        own, _, m_own = normalized(array, np.zeros_like(e), degree, centered, weights)
        root = np.broadcast_to(epsilon_root(e, degree), shape)
        m_own = np.broadcast_to(m_own, shape)
        f_root, b_root = np.frexp(root)
        f_own, b_own = np.frexp(m_own)
        gap = (b_root - b_own).astype(np.float64)
    return _OwnScale(own, m_own, root, f_root, b_root, f_own, b_own, gap)


def _tried(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any],
    first: Scaled,
    own: _OwnScale,
    e: np.ndarray,
    apart: np.ndarray,
    degree: int,
) -> tuple[list[tuple[np.ndarray, list[Any]]], list[np.ndarray]]:
    """The value at each scale tried, paired with the rows evaluated at that scale (the others as
    ``first`` holds them), and the rows where that value is clean and telling (`_clean`,
    `_telling`); in the order of preference: the wider float where the platform has one, then
    nine float64 scales."""
    values, cleans = [], []
    if EXTENDED:
        rows, clean = _in_wide_float(at, first, own, e, apart)
        values.append((apart, rows))
        cleans.append(clean)
    # The balanced scale first (its clean value is preferred), then outwards: an intermediate of
    # high degree in one and low in the other can fit at one eighth of the way and no quarter.
    for fraction in (0.5, 0.375, 0.625, 0.25, 0.75, 0.125, 0.875, 0.0, 1.0):
        valid, rows, clean = _at_fraction(at, first, own, fraction, apart, degree)
        values.append((valid, rows))
        cleans.append(clean)
    return values, cleans


def _in_wide_float(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any],
    first: Scaled,
    own: _OwnScale,
    e: np.ndarray,
    apart: np.ndarray,
) -> tuple[list[Any], np.ndarray]:
    """The value with the rows ``apart`` unscaled in `WIDE`, rounded to float64, and the rows
    where it is clean and telling."""
    scaled, e_scaled, m = first
    # The row itself in the wider float first: its exponents reach past every power the
    # value forms of x and epsilon up to the eighth, so where its flags are clean its value
    # is the float64 one rounded once.
    with np.errstate(all="ignore"):
        x_w = own.x.astype(WIDE) * np.asarray(own.m, dtype=WIDE)
        e_w = np.broadcast_to(np.asarray(e, dtype=WIDE), m.shape)
        one = WIDE.type(1)
        wide = Scaled(np.where(apart, x_w, scaled), np.where(apart, e_w, e_scaled), np.where(apart, one, m))
        rows = [np.asarray(v, dtype=np.float64) for v in _as_list(at(*wide))]
    return rows, apart & _telling(rows, scaled) & _clean(at, apart, wide, scaled)


def _at_fraction(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any],
    first: Scaled,
    own: _OwnScale,
    fraction: float,
    apart: np.ndarray,
    degree: int,
) -> tuple[np.ndarray, list[Any], np.ndarray]:
    """The rows of ``apart`` that the scale ``fraction`` of the way from the input's own to
    epsilon's holds, as normal floats with the input at most `INPUT`; the value with those rows at
    that scale; and the rows where it is clean and telling."""
    scaled, e_scaled, m = first
    shift = np.round(fraction * own.gap).astype(np.int64)
    with np.errstate(all="ignore"):
        x_t = np.ldexp(own.x, np.broadcast_to(-shift, (*own.x.shape[:-1], 1)) if own.x.ndim else -shift)
        relative = np.ldexp(own.f_root / own.f_own, (own.b_root - own.b_own - shift).astype(np.int64))
        e_t = relative**degree
        m_t = np.ldexp(own.m, shift.astype(np.int64))
        valid = apart & (e_t >= TINY) & np.isfinite(e_t) & (largest(x_t) <= INPUT) & np.isfinite(m_t)
        rows = _as_list(at(np.where(valid, x_t, scaled), np.where(valid, e_t, e_scaled), np.where(valid, m_t, m)))
    return valid, rows, valid & _telling(rows, scaled) & _clean(at, valid, Scaled(x_t, e_t, m_t), scaled)


def _settled(
    out: list[Any],
    values: list[tuple[np.ndarray, list[Any]]],
    cleans: list[np.ndarray],
    scaled: np.ndarray,
    shape: tuple[int, ...],
) -> tuple[list[Any], np.ndarray]:
    """``out`` where it agrees with a clean value, else the first clean value; and the rows where
    either is, of shape ``shape``."""
    # The value returned stands where it agrees with a clean one.
    settled = np.zeros(shape, dtype=bool)
    for clean, (_, value) in zip(cleans, values, strict=True):
        if clean.any():
            settled |= clean & ~_far_apart(out, value, scaled)
    # Else the first clean one is taken.
    for clean, (_, value) in zip(cleans, values, strict=True):
        use = clean & ~settled
        if use.any():
            out = [np.where(_widened(use, a), b, a) for a, b in zip(out, value, strict=True)]
            settled |= use
    return out, settled


def _unconfirmed(
    out: list[Any],
    values: list[tuple[np.ndarray, list[Any]]],
    apart: np.ndarray,
    scaled: np.ndarray,
    shape: tuple[int, ...],
) -> np.ndarray:
    """The rows, of shape ``shape``, where some scale tried keeps the value (`_telling`) and
    ``out`` agrees with none of those that do."""
    # A value that is zero, or not finite, across a whole row is what an intermediate beyond the
    # range gives (1/inf, inf - inf), as is one a subnormal intermediate left with a few digits:
    # where no scale is clean, the value returned stands where it agrees with one of the others.
    telling = [valid & _telling(value, scaled) for valid, value in values]
    returned = apart & _telling(out, scaled)
    agrees = np.zeros(shape, dtype=bool)
    for flags, (_, value) in zip(telling, values, strict=True):
        both = returned & flags
        if both.any():
            agrees |= both & ~_far_apart(out, value, scaled)
    return np.any(telling, axis=0) & ~agrees


def _clean(
    at: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], rows: np.ndarray, there: Scaled, scaled: np.ndarray
) -> np.ndarray:
    """Per row, shape (..., 1): which of ``rows`` evaluate at the scale ``there`` with no IEEE flag
    raised: no overflow, underflow, division by zero or invalid operation (an underflowed term can
    leave a cancelling sum with few digits, as eps / s**3 at n = 2 is).  The other rows are set to
    a row of moderate size, which raises none; the rows are tried all at once, then by halves, at
    most `PROBES` evaluations."""
    shape = rows.shape
    benign = np.broadcast_to(np.linspace(-1.0, 1.0, scaled.shape[-1]) + 0.25, scaled.shape)
    found = np.zeros(shape, dtype=bool)
    pending = [np.flatnonzero(rows)]
    probes = 0
    while pending and probes < PROBES:
        picked = pending.pop()
        if picked.size == 0:
            continue
        mask = np.zeros(shape, dtype=bool)
        mask.flat[picked] = True
        probes += 1
        try:
            with np.errstate(all="raise"):
                at(np.where(mask, there.x, benign), np.where(mask, there.e, 1.0), np.where(mask, there.m, 1.0))
        except FloatingPointError:
            if picked.size > 1:
                pending += [picked[: picked.size // 2], picked[picked.size // 2 :]]
            continue
        found |= mask
    return found


def _telling(values: list[Any], scaled: np.ndarray) -> np.ndarray:
    """Per row, shape (..., 1): every entry finite, and some entry not zero."""
    finite = np.all([~_any_per_row(~np.isfinite(v), scaled) for v in values], axis=0)
    nonzero = np.any([_any_per_row(np.asarray(v) != 0, scaled) for v in values], axis=0)
    return finite & nonzero


def _far_apart(first: list[Any], second: list[Any], scaled: np.ndarray) -> np.ndarray:
    """Per row, shape (..., 1): whether ``first`` and ``second`` differ beyond rounding, normwise
    over each row's entries (NaN differs from everything)."""
    flags = []
    with np.errstate(all="ignore"):
        for a, b in zip(first, second, strict=True):
            a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            same = (a == b) | (np.isnan(a) & np.isnan(b))
            size = np.maximum(
                _max_per_row(np.where(np.isfinite(a), np.abs(a), 0.0), scaled),
                _max_per_row(np.where(np.isfinite(b), np.abs(b), 0.0), scaled),
            )
            gap = np.where(same, 0.0, np.abs(a - b))
            gap = np.where(np.isnan(gap), np.inf, gap)
            flags.append(_max_per_row(gap, scaled) > AGREE * size)
    return np.any(flags, axis=0)


def _max_per_row(values: np.ndarray, scaled: np.ndarray) -> np.ndarray:
    """The largest entry of each row's value, shape (..., 1)."""
    values = np.asarray(values)
    rows = np.ndim(scaled) - 1
    reduced = np.max(values.reshape(*values.shape[:rows], -1), axis=-1, keepdims=True, initial=0.0)
    return np.broadcast_to(reduced, np.broadcast_shapes(reduced.shape, (*np.shape(scaled)[:-1], 1)))


def _changed(first: list[Any], second: list[Any], scaled: np.ndarray) -> np.ndarray:
    """Per row, shape (..., 1): whether any value of ``first`` differs from ``second`` beyond rounding."""
    with np.errstate(all="ignore"):
        return np.any(
            [
                _any_per_row(~np.isclose(a, b, rtol=8 * EPSILON, atol=0.0), scaled)
                for a, b in zip(first, second, strict=True)
            ],
            axis=0,
        )


def _as_list(values: Any) -> list[Any]:
    return values if isinstance(values, list) else [values]


def _widened(per_row: np.ndarray, value: Any) -> np.ndarray:
    """``per_row`` (shape (..., 1), one entry per row) with the axes ``value`` has beyond a row's."""
    return np.reshape(per_row, (*np.shape(per_row), *(1,) * max(0, np.ndim(value) - np.ndim(per_row))))


def _any_per_row(flags: np.ndarray, scaled: np.ndarray) -> np.ndarray:
    """Whether any entry of a row's value is set: ``flags`` (the value's shape) reduced to (..., 1)."""
    flags = np.asarray(flags)
    rows = np.ndim(scaled) - 1
    reduced = np.any(flags.reshape(*flags.shape[:rows], -1), axis=-1, keepdims=True)
    return np.broadcast_to(reduced, np.broadcast_shapes(reduced.shape, (*np.shape(scaled)[:-1], 1)))


def scaled_back(values: Any, m: np.ndarray, degree: int) -> Any:
    """`times_power` for a value with axes beyond a row's (a Jacobian's two), M one per row."""
    return times_power(values, _widened(m, values), degree)


def times_power(values: Any, m: np.ndarray, degree: int) -> Any:
    """values * m**degree, the homogeneity undone; a zero value stays zero.

    m**degree overflows only where the true result does (epsilon or x near
    the ends of the range), and there 0 * inf would give NaN for an entry
    whose true value is exactly 0.
    """
    if degree == 0:
        return values
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        factor = m**degree
        out = values * factor
        beyond = ~(np.abs(factor) >= TINY) | np.isinf(factor)
        if beyond.any():
            # m**degree alone can leave the range where values * m**degree does not (a small
            # value, as where terms cancel to epsilon / s**5, times 1 / m at a subnormal m):
            # one factor of m at a time.
            step = values
            for _ in range(abs(degree)):
                step = step * m if degree > 0 else step / m
            out = np.where(beyond, step, out)
            out = np.where(np.asarray(values) == 0, 0.0, out)
    return out


def blockwise(function: Any, *arrays: np.ndarray) -> np.ndarray:
    """``function(*arrays)`` with broadcasting, evaluated chunk by chunk."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    size = int(np.prod(shape))
    if size <= BLOCK:
        return np.broadcast_to(function(*arrays), shape)
    flat = [a.reshape(()) if a.size == 1 else np.broadcast_to(a, shape).ravel() for a in arrays]
    out = np.empty(size)
    for start in range(0, size, BLOCK):
        out[start : start + BLOCK] = function(*(a if a.ndim == 0 else a[start : start + BLOCK] for a in flat))
    return out.reshape(shape)


def elementwise(function: Any, degree: int, eps_degree: int, *args: Any) -> Any:
    """A scalar function of (t, epsilon) or (epsilon): plain where the scale is moderate,
    rescaled elsewhere.  The last argument is epsilon; a first one is the amplitude t."""
    *amplitude, eps = args
    arrays = [*(_validate.amplitude(a) for a in amplitude), _validate.epsilon(eps)]

    def at(scale: np.ndarray, picked: list[np.ndarray], e_scaled: Any) -> np.ndarray:
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            value = function(*(q / scale for q in picked[:-1]), e_scaled)
        return np.broadcast_to(value, scale.shape)

    def chunk(*values: np.ndarray) -> np.ndarray:
        *tc, ec = values
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            out = np.asarray(function(*values), dtype=np.float64)
        root = epsilon_root(ec, eps_degree)
        m = np.maximum(np.abs(tc[0]), root) if tc else root
        # Plain where the scale is moderate and the value finite: a higher power of a moderate
        # scale can still leave the range (a 0/0 of two underflows).
        far = (m < MODERATE[0]) | (m > MODERATE[1]) | ~np.isfinite(out)
        if far.any():
            out = np.array(np.broadcast_to(out, far.shape))
            picked = [np.broadcast_to(v, far.shape)[far] for v in values]
            amplitude = np.abs(picked[0]) if tc else np.zeros(())
            scale, e_scaled = rescaled(amplitude, picked[-1], eps_degree)
            value = at(scale, picked, e_scaled)
            # epsilon / m**e below the normal floats is dropped; harmless where the value does not
            # change with it there (epsilon added to a statistic), else the value is taken at the
            # geometric mean of the two scales, where both are in range.
            lost = (e_scaled < TINY) & (picked[-1] > 0)
            # Arrays, not Python floats: a lambdified 1/epsilon of a float 0.0 raises, of an array is inf.
            dropped, kept = np.zeros(scale.shape), np.full(scale.shape, TINY)
            lost &= ~np.isclose(at(scale, picked, dropped), at(scale, picked, kept), rtol=8 * EPSILON, atol=0.0)
            if lost.any():
                root_far = np.broadcast_to(epsilon_root(picked[-1], eps_degree), scale.shape)
                mean = np.sqrt(np.broadcast_to(amplitude, scale.shape)) * np.sqrt(root_far)
                scale = np.where(lost, mean, scale)
                e_scaled = np.where(lost, (root_far / scale) ** eps_degree, e_scaled)
                value = np.where(lost, at(scale, picked, e_scaled), value)
            out[far] = times_power(value, scale, degree)
            _unresolved(out[far], lost)
        return out

    return _validate.output(blockwise(chunk, *arrays), _validate.result_dtype(*args))


def _unresolved(values: np.ndarray, lost: np.ndarray) -> None:
    """Warn where the value at the geometric mean of the scales is not a finite number either."""
    if (lost & ~np.isfinite(values)).any():
        _warn(
            "epsilon and x are too far apart in scale for this layer in float64: some values are not "
            "finite numbers, though their true values may be"
        )


def _warn(message: str) -> None:
    """A RuntimeWarning that points at the line that called into `numeric`: the first frame
    outside the package, however deep in it the call that warns is."""
    frame: FrameType | None = sys._getframe(1)
    level = 2  # the frame that called this one
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "numeric":
        frame, level = frame.f_back, level + 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)


def validated(
    values: Any, eps: Any, keep_float: bool = False, finite: bool = True
) -> tuple[np.ndarray, np.ndarray, np.dtype, tuple[int, ...]]:
    """x, epsilon, the result dtype and the batch shape they broadcast to (``finite``:
    as `_validate.vector`)."""
    array = _validate.vector(values, keep_float=keep_float, finite=finite)
    e = _validate.epsilon(eps)
    if e.ndim == 0:
        return array, e, _validate.result_dtype(values, eps), array.shape[:-1]
    try:
        batch = np.broadcast_shapes(e.shape, array.shape[:-1])
    except ValueError:
        raise ValueError(
            f"epsilon of shape {e.shape} does not broadcast with the batch shape {array.shape[:-1]} of x"
        ) from None
    return array, e, _validate.result_dtype(values, eps), batch
