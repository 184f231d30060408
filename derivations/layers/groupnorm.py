r"""GroupNorm: LayerNorm within each of G contiguous groups of channels.

.. math:: y_{a,i} = \frac{x_{a,i} - \bar{x}_a}{\sqrt{q_a + \varepsilon}},
   \qquad a = 1, \ldots, G,

as ``torch.nn.functional.group_norm`` computes it on an (N, C) input with
C = G n: each group's n channels are normalized by their own mean and biased
variance, epsilon inside the square root.  Every result of
`derivations.layers.layernorm` holds per group, with n the size of a group; the
Jacobian of the whole row is block-diagonal, which `derivations.derive.grouped` proves.
"""

from derivations.derive.grouped import grouped
from derivations.layers import layernorm

LAYER = grouped(
    layernorm.LAYER,
    key="groupnorm",
    title="GroupNorm: LayerNorm within each of G groups, epsilon inside the square root",
    blocks="group",
    size="the number of channels in a group (C = G n)",
    argument="groups",
    axis=-1,
    used_by=("PyTorch `F.group_norm`, `nn.GroupNorm` without affine; Flax `linen.GroupNorm` without scale, bias",),
)
