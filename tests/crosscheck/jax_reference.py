"""``make crosscheck``, JAX part: JAX's and Flax's own normalizations against the derived layers, in float64.

- ``jax.nn.standardize`` against ``layernorm``, with both of its variance
  algorithms: ``"stable"`` (two passes) and ``"fast"`` (mean(x**2) -
  mean(x)**2, clipped at 0), the default, whose docstring states the
  two-pass formula;
- Flax's ``linen.LayerNorm`` (both ``use_fast_variance`` settings) against
  ``layernorm_affine``, ``linen.RMSNorm`` against ``rmsnorm_affine`` (bias 0)
  and ``linen.GroupNorm`` without scale and bias against ``groupnorm``.

Forward, Jacobian (``jax.jacrev``) and the input gradient (``jax.vjp``) on
n in {2, 3, 7, 64, 768} and three epsilons.  Prints a table and exits 1 if
any difference exceeds the tolerance.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import flax  # noqa: E402 - after the x64 switch
import flax.linen as nn  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from exact import exact_gradients  # noqa: E402

import numeric  # noqa: E402

SIZES = (2, 3, 7, 64, 768)
EPSILONS = (1e-8, 1e-5, 0.25)
TOLERANCE = 1e-12
GROUPS = 2  # Flax's GroupNorm on GROUPS * n features, n to a group

# What the library computes, at epsilon, with the gain and bias where the layer takes them.
Library = Callable[[Any, float, np.ndarray, np.ndarray], Any]


def _standardize(algorithm: str) -> Library:
    return lambda a, eps, gain, bias: jax.nn.standardize(a, axis=-1, epsilon=eps, algorithm=algorithm)


def _flax_layernorm(fast: bool) -> Library:
    def apply(a: Any, eps: float, gain: np.ndarray, bias: np.ndarray) -> Any:
        module = nn.LayerNorm(epsilon=eps, use_fast_variance=fast, param_dtype=jnp.float64)
        return module.apply({"params": {"scale": jnp.asarray(gain), "bias": jnp.asarray(bias)}}, a)

    return apply


def _flax_rmsnorm(a: Any, eps: float, gain: np.ndarray, bias: np.ndarray) -> Any:
    module = nn.RMSNorm(epsilon=eps, param_dtype=jnp.float64)
    return module.apply({"params": {"scale": jnp.asarray(gain)}}, a)


def _flax_groupnorm(a: Any, eps: float, gain: np.ndarray, bias: np.ndarray) -> Any:
    module = nn.GroupNorm(num_groups=GROUPS, epsilon=eps, use_bias=False, use_scale=False)
    return module.apply({}, a.reshape(-1, a.shape[-1])).reshape(a.shape)


# (what is checked, the layer it is checked against, the library's function, how many of the
# gradients in x, gain, bias it has: the input's alone, the gain's too, or all three)
CASES: tuple[tuple[str, str, Library, int], ...] = (
    ("jax.nn.standardize stable", "layernorm", _standardize("stable"), 1),
    ("jax.nn.standardize fast", "layernorm", _standardize("fast"), 1),
    ("flax LayerNorm", "layernorm_affine", _flax_layernorm(fast=True), 3),
    ("flax LayerNorm stable", "layernorm_affine", _flax_layernorm(fast=False), 3),
    ("flax RMSNorm", "rmsnorm_affine", _flax_rmsnorm, 2),
    ("flax GroupNorm", "groupnorm", _flax_groupnorm, 1),
)


def relative(a: Any, b: Any) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(np.asarray(b)).max(), 1e-300))


def _parameters(key: str, gain: np.ndarray, bias: np.ndarray) -> tuple[tuple[np.ndarray, ...], dict[str, Any]]:
    """What numeric.<key> takes besides x and epsilon, positional and named."""
    if key == "groupnorm":
        return (), {"groups": GROUPS}
    return ((gain, bias) if key.endswith("_affine") else ()), {}


def _exact(key: str, x: np.ndarray, eps: float, dy: np.ndarray, params: list[np.ndarray], n: int) -> tuple:
    """The Jacobian at x[0] and the gradients at x, dy, in mpmath.  GroupNorm's are LayerNorm's on each
    group of n features (its Jacobian is block-diagonal, proved: `derivations.derive.grouped`)."""
    if key == "groupnorm":
        blocks = [
            _exact("layernorm", x[:, g * n : (g + 1) * n], eps, dy[:, g * n : (g + 1) * n], [], n)
            for g in range(GROUPS)
        ]
        jacobian = np.zeros((GROUPS * n, GROUPS * n))
        for g, (block, _) in enumerate(blocks):
            jacobian[g * n : (g + 1) * n, g * n : (g + 1) * n] = block
        return jacobian, [np.concatenate([gradients[0] for _, gradients in blocks], axis=-1)]
    # The input gradient for dy = e_r at x[0] is row r of J.
    jacobian = exact_gradients(key, np.repeat(x[:1], n, axis=0), eps, np.eye(n), params)[0]
    return jacobian, exact_gradients(key, x, eps, dy, params)


def main() -> int:
    rng = np.random.default_rng(20261130)
    worst = 0.0
    print(f"numeric's path: {numeric.backend()} (EPSILON_LAYERNORM_BACKEND=numpy for NumPy's)\n")
    print(f"{'function':<27}{'layer':<18}{'n':>5}{'epsilon':>9}{'forward':>11}{'J':>11}{'vjp':>11}")
    for name, key, library, gradients in CASES:
        module = getattr(numeric, key)
        for n in SIZES:
            for eps in EPSILONS:
                width = GROUPS * n if key == "groupnorm" else n
                x = rng.standard_normal((3, width)) * rng.uniform(0.1, 10) + rng.standard_normal()
                dy = rng.standard_normal((3, width))
                gain, bias = rng.normal(0, 2, width), rng.standard_normal(width)
                if key == "rmsnorm_affine":
                    bias = np.zeros(width)
                params, named = _parameters(key, gain, bias)

                def function(
                    a: Any, e: float = eps, g: np.ndarray = gain, b: np.ndarray = bias, f: Library = library
                ) -> Any:
                    return f(a, e, g, b)

                forward = relative(module.forward(x, eps, *params, **named), function(jnp.asarray(x)))
                jacobian = jax.jacrev(function)(jnp.asarray(x[0]))
                jac = relative(module.jacobian(x[0], eps, *params, **named), jacobian)
                _, pull = jax.vjp(lambda a, g, b, e=eps, f=library: f(a, e, g, b), *map(jnp.asarray, (x, gain, bias)))
                theirs_back = pull(jnp.asarray(dy))[:gradients]
                ours_back = module.vjp(x, eps, dy, *params, **named)
                ours_back = ours_back if isinstance(ours_back, tuple) else (ours_back,)
                back = max(relative(a, b) for a, b in zip(ours_back[:gradients], theirs_back, strict=True))
                diff = max(forward, jac, back)
                row = f"{name:<27}{key:<18}{width:>5}{eps:>9g}{forward:>11.1e}{jac:>11.1e}{back:>11.1e}"
                if n == 2 and diff > TOLERANCE:
                    # Every implementation loses digits here (1 - q/s**2 cancels): the derived
                    # Jacobian and input gradient in mpmath decide, and numeric must match them.
                    exact_j, exact_v = _exact(key, x, eps, dy, list(params), n)
                    exact_v = exact_v[:gradients]
                    ours = max(
                        relative(module.jacobian(x[0], eps, *params, **named), exact_j),
                        *(relative(a, b) for a, b in zip(ours_back, exact_v, strict=False)),
                    )
                    theirs = max(
                        relative(jacobian, exact_j),
                        *(relative(a, b) for a, b in zip(theirs_back, exact_v, strict=False)),
                    )
                    worst = max(worst, ours)
                    flag = "" if ours <= TOLERANCE else "   FAIL"
                    print(f"{row}   pinned: vs mpmath numeric {ours:.1e}, library {theirs:.1e}{flag}")
                    continue
                worst = max(worst, diff)
                print(f"{row}{'' if diff <= TOLERANCE else '   FAIL'}")
    print(
        f"\nworst difference {worst:.2e}; tolerance {TOLERANCE:.0e} "
        f"(float64, jax {jax.__version__}, flax {flax.__version__})"
    )
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
