r"""BatchNorm in training mode: each feature normalized across the batch.

.. math:: y_{b,f} = \frac{x_{b,f} - \bar{x}_f}{\sqrt{q_f + \varepsilon}},
   \qquad \bar{x}_f = \tfrac{1}{B} \textstyle\sum_b x_{b,f},

as ``torch.nn.functional.batch_norm(training=True)`` computes it: the mean
and the biased variance are taken over the B examples of the batch, epsilon
inside the square root.  For each feature this is LayerNorm over the batch
with n = B: every result of `derivations.layers.layernorm` holds per feature, and
the Jacobian couples the examples of a batch, one B x B block per feature,
which `derivations.derive.grouped` proves.
"""

from derivations.derive.grouped import grouped
from derivations.layers import layernorm

LAYER = grouped(
    layernorm.LAYER,
    key="batchnorm_train",
    title="BatchNorm in training mode: each feature normalized across the batch, epsilon inside the square root",
    blocks="feature",
    size="the batch size B",
    argument=None,
    axis=0,
    used_by=("PyTorch `F.batch_norm(training=True)` without affine",),
)
