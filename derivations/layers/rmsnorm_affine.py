r"""RMSNorm with a learnable gain (PyTorch ``nn.RMSNorm`` with ``elementwise_affine``, LLaMA).

.. math:: y = \gamma \odot \frac{x}{\sqrt{r + \varepsilon}} + \beta, \qquad r = \overline{x^2}.

The same wrapper as `derivations.layers.layernorm_affine`, over RMSNorm.  PyTorch's
RMSNorm has no bias; it is the case beta = 0.  No eigenvector of RMSNorm
survives the gain (none has eigenvalue 0), so only the bound remains.
"""

import sympy as sp

from derivations.derive.affine import affine
from derivations.derive.sums import mean
from derivations.layers import rmsnorm
from derivations.symbols import beta, epsilon, g, gamma, gamma_max, j, k, s, t, x

LAYER = affine(
    rmsnorm.LAYER,
    key="rmsnorm_affine",
    title="RMSNorm with gain and bias, epsilon inside the square root",
    used_by=(
        "PyTorch `nn.RMSNorm` (bias 0)",
        "T5 and LLaMA (bias 0)",
        "Flax `linen.RMSNorm` (bias 0)",
    ),
    stated={
        "response": gamma[2] * t / sp.sqrt(2 * t**2 / 3 + epsilon) + beta[2],
        "slope": gamma[2] * epsilon / (2 * t**2 / 3 + epsilon) ** sp.Rational(3, 2),
        "slope_at_zero": gamma[2] / sp.sqrt(epsilon),
        "response_uniform": gamma[2] * t / sp.sqrt(t**2 + epsilon) + beta[2],
        "spectral_bound": gamma_max / sp.sqrt(epsilon),
        # The weight multiplies the upstream gradient before the reduction.
        "vjp": gamma[k] * g[k] / s - mean(gamma[j] * g[j] * x[j], j) * x[k] / s**3,
        "dgain": g[k] * x[k] / s,
        "dbias": g[k],
    },
)
