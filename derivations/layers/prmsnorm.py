r"""Partial RMSNorm (Zhang & Sennrich 2019): the root mean square of the first k entries only.

.. math:: y_i = \frac{x_i}{\sqrt{r_k + \varepsilon}}, \qquad
   r_k = \frac{1}{k} \sum_{j < k} x_j^2, \qquad k = \lceil p\, n \rceil.

The first k entries are a `Subset`: an indicator m with m_j = 1 for j < k,
and the partial mean is the mean over all n entries of m_j x_j^2 divided by
the fraction kappa = mean(m) = k / n.  Every result is derived for symbolic n
and symbolic k; only the input patterns, which need explicit entries, take
the default p = 1/16 (the paper's 6.25 %), so that k = 1 at n = 3 (stated).

The Jacobian J = I/s - x (m * x)^T / (k s^3) is not symmetric (for k < n),
so its eigenvalues do not bound its norm: the eigenvalues are eps/s^3 along
x and 1/s on the (n - 1)-dimensional space (m * x)^T w = 0, yet ||J||_2 has
no bound over all inputs (at n = 2, k = 1, x = (a, B) the entry J_10 =
-a B / s^3 grows with B).  What is derived instead is a bound at each input,
by the triangle inequality over the terms of J (`derivations.derive.spectral`).

The authors' reference code (github.com/bzhangGo/rmsnorm) computes another
convention: the subset has ``int(d * p)`` entries (the floor, not the
ceiling: p = 0.3 at d = 10 gives 3 either way, p = 0.0625 at d = 3 gives 0
there, an empty subset), p = -1 (the default) turns it off, and where ε goes
differs by framework: ``rmsnorm_torch.py`` divides by ``rms + eps`` (ε
outside the root, as `derivations.layers.rmsnorm_eps_outside`), ``rmsnorm_tensorflow.py``
by ``rsqrt(ms + eps)`` (ε inside, as here).  This layer implements the
definition with the ceiling and ε inside the root.
"""

import math
import numbers
from fractions import Fraction
from typing import Any

import sympy as sp

from derivations.core.layer import Direction, Layer, Pattern, Statistic, Subset
from derivations.derive.sums import Indicator
from derivations.derive.sums import mean as mean_over
from derivations.layers.rmsnorm import UNIFORM
from derivations.symbols import epsilon, g, i, j, k, k_p, kappa, n, r, r_k, s, t, v, w, x

# The indicator of the first k entries.
m = Indicator("m", real=True)

DEFAULT_P = Fraction(1, 16)


def first_entries(size: int, p: Any) -> tuple[int, ...]:
    """The indicator of the first k = ceil(p * size) of ``size`` entries, for 0 < p <= 1.

    k is the ceiling of an exact product, in integers: a float p is the
    decimal it prints as (what was typed), so p = 0.3 at n = 10 gives k = 3
    and p = 0.1 at n = 10 gives k = 1, where the binary values would give
    ``ceil(0.3 * 10) == 4`` in floating point and ``0.1 * 10 > 1`` exactly.

    >>> first_entries(10, 0.3), first_entries(3, 0.0625)
    ((1, 1, 1, 0, 0, 0, 0, 0, 0, 0), (1, 0, 0))
    """
    value = exact_fraction(p)
    product = value * size
    chosen = -(-product.numerator // product.denominator)  # the ceiling, in integers
    return tuple(1 if entry < chosen else 0 for entry in range(size))


def exact_fraction(p: Any) -> Fraction:
    """p as an exact fraction, checked to satisfy 0 < p <= 1 (a `ValueError` naming p)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise ValueError(f"p must be a real number with 0 < p <= 1; got {p!r}")
    if isinstance(p, numbers.Rational):
        value = Fraction(int(p.numerator), int(p.denominator))
    elif not math.isfinite(float(p)):
        raise ValueError(f"p must be a real number with 0 < p <= 1; got {p!r}")
    else:
        value = Fraction(str(p))  # the shortest decimal that rounds to it: what was typed
    if not 0 < value <= 1:
        raise ValueError(f"p must satisfy 0 < p <= 1; got {p!r}")
    return value


FIRST_K = Subset(m, "the first k = ceil(p n) entries", "p", DEFAULT_P, first_entries)

_x = sp.MatrixSymbol("x", n, 1)
_m = sp.MatrixSymbol("m", n, 1)

LAYER = Layer(
    key="prmsnorm",
    title=(
        "Partial RMSNorm: the mean square of the first k = ceil(p n) entries, epsilon inside the root "
        "(the input patterns at p = 1/16: k = 1 of n = 3)"
    ),
    statistics=(
        Statistic(kappa, m[j], "fraction k / n of the entries in the subset"),
        Statistic(r_k, m[j] * x[j] ** 2 / kappa, "mean of the squares of the first k entries"),
        Statistic(r, x[j] ** 2, "mean of the squares of all entries (the output's second moment, the bound)"),
    ),
    output=x[i] / sp.sqrt(r_k + epsilon),
    patterns=(Pattern((-t, sp.Integer(0), t), coordinate=2), UNIFORM),
    directions=(
        Direction("x", x[k], "the input x itself"),
        Direction(
            "complement",
            w[k],
            "every w with (m * x)^T w = 0 (orthogonal to the first k entries of x)",
            constraints=(m[k] * x[k] * w[k],),
            complement=True,
        ),
    ),
    display=((sp.sqrt(r_k + epsilon), s), (kappa, k_p / n)),
    spread=r_k,
    subsets=(FIRST_K,),
    used_by=(
        "partial RMSNorm (Zhang & Sennrich 2019), k = ceil(p n), eps inside the root; "
        "no library ships it; the authors' code takes k = int(d p), and adds eps outside the root "
        "in its PyTorch version (inside in its TensorFlow one)",
    ),
    stated={
        # At p = 1/16, n = 3: k = 1, so r_k = t**2 on (-t, 0, t) and on (t, t, t).
        "response": t / sp.sqrt(t**2 + epsilon),
        "slope": epsilon / (t**2 + epsilon) ** sp.Rational(3, 2),
        "slope_at_zero": 1 / sp.sqrt(epsilon),
        "response_uniform": t / sp.sqrt(t**2 + epsilon),
        "slope_at_zero_uniform": 1 / sp.sqrt(epsilon),
        "constant_response": t / sp.sqrt(t**2 + epsilon),
        "jacobian": sp.Identity(n) / s - _x * sp.HadamardProduct(_m, _x).T / (k_p * s**3),
        "eigen_x": epsilon / s**3,
        "eigen_complement": 1 / s,
        # ||x|| ||m * x|| / (k s**3) bounds the rank-one term: ||x|| = sqrt(n r), ||m * x|| = sqrt(k r_k).
        "norm_bound": 1 / s + sp.sqrt(n * r) * sp.sqrt(k_p * r_k) / (k_p * s**3),
        "second_moment": r / (r_k + epsilon),
        # As the literature's backward pass: dx = g / s - (sum_i g_i x_i) m * x / (k s**3).
        "vjp": g[k] / s - n * mean_over(g[j] * x[j], j) * m[k] * x[k] / (n * kappa * s**3),
        # J v = v / s - x (m * x)^T v / (k s**3): J is not symmetric, so this is not the vjp.
        "jvp": v[k] / s - n * mean_over(m[j] * x[j] * v[j], j) * x[k] / (n * kappa * s**3),
    },
)
