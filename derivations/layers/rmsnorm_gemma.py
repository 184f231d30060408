r"""Gemma's RMSNorm: epsilon inside the square root, and a gain stored as its offset from 1.

.. math:: y = \frac{x}{\sqrt{\overline{x^2} + \varepsilon}} \odot (1 + w).

Gemma stores w and multiplies by 1 + w, so that w = 0 is the identity gain;
this is `derivations.layers.rmsnorm_affine` at gamma = 1 + w, beta = 0, and every
result of that layer holds with the substitution (`derivations.derive.reparametrized`).
"""

import sympy as sp

from derivations.derive.reparametrized import reparametrized
from derivations.layers import rmsnorm_affine
from derivations.symbols import beta, gamma, gemma_max, i, n
from derivations.symbols import w_gemma as w

LAYER = reparametrized(
    rmsnorm_affine.LAYER,
    key="rmsnorm_gemma",
    title="Gemma's RMSNorm: gain 1 + w, epsilon inside the square root",
    values={gamma: 1 + w[i], beta: sp.Integer(0)},
    stored=(("weight", w),),
    largest=gemma_max,
    diagonal=sp.MatrixSymbol(r"\operatorname{diag}(1 + w)", n, n),
    used_by=("Gemma: `x * rsqrt(mean(x**2) + eps) * (1 + weight)`",),
)
