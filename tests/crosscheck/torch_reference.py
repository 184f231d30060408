"""``make crosscheck``: every layer against PyTorch, forward and Jacobian, in float64.

The references are PyTorch's own ``layer_norm`` and ``rms_norm`` and, for
the two conventions PyTorch does not ship, a few lines of torch written as
their reference implementations write them.  Jacobians come from
``torch.func.jacrev`` of the same functions.  Prints a table and exits 1 if
any difference exceeds the tolerance.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import jacrev

SIZES = (2, 3, 7, 64, 768)
EPSILONS = (1e-8, 1e-5, 0.25)
TOLERANCE = 1e-12


def annotated_transformer(x: torch.Tensor, eps: float) -> torch.Tensor:
    # As in "The Annotated Transformer": std() is unbiased, eps is added to it.
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True)
    return (x - mean) / (std + eps)


def rmsnorm_reference(x: torch.Tensor, eps: float) -> torch.Tensor:
    # As in the RMSNorm authors' code: rms = ||x|| / sqrt(d), eps added outside.
    d = x.shape[-1]
    rms = x.norm(2, dim=-1, keepdim=True) * d ** (-1.0 / 2)
    return x / (rms + eps)


def reference(key: str, n: int, eps: float, gain: torch.Tensor, bias: torch.Tensor):
    return {
        "layernorm": lambda x: F.layer_norm(x, (n,), eps=eps),
        "layernorm_affine": lambda x: F.layer_norm(x, (n,), weight=gain, bias=bias, eps=eps),
        "layernorm_std_eps": lambda x: annotated_transformer(x, eps),
        "rmsnorm": lambda x: F.rms_norm(x, (n,), eps=eps),
        # nn.RMSNorm with elementwise_affine has a weight and no bias.
        "rmsnorm_affine": lambda x: F.rms_norm(x, (n,), weight=gain, eps=eps),
        "rmsnorm_eps_outside": lambda x: rmsnorm_reference(x, eps),
    }[key]


def main() -> int:
    from derivations import LAYERS

    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(20261129)
    worst = 0.0
    print(f"{'layer':<22}{'n':>5}{'epsilon':>9}{'max |forward diff|':>21}{'max |J diff|':>15}")
    for key in LAYERS:
        module = importlib.import_module(f"numeric.{key}")
        for n in SIZES:
            for eps in EPSILONS:
                x = rng.standard_normal(n) * rng.uniform(0.1, 10) + rng.standard_normal()
                gain, bias = rng.normal(0, 2, n), rng.standard_normal(n)
                if key == "rmsnorm_affine":
                    bias = np.zeros(n)
                # A wrapped layer takes the gain and bias; the others take nothing besides x.
                params = (gain, bias) if module.LAYER.definition.parameters else ()
                function = reference(key, n, eps, torch.from_numpy(gain), torch.from_numpy(bias))
                tx = torch.from_numpy(x)
                forward = np.abs(module.forward(x, eps, *params) - function(tx).numpy()).max()
                jac = np.abs(module.jacobian(x, eps, *params) - jacrev(function)(tx).numpy()).max()
                worst = max(worst, forward, jac)
                flag = "" if max(forward, jac) <= TOLERANCE else "   FAIL"
                print(f"{key:<22}{n:>5}{eps:>9g}{forward:>21.2e}{jac:>15.2e}{flag}")
    print(f"\nworst difference {worst:.2e}; tolerance {TOLERANCE:.0e} (float64, torch {torch.__version__})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
