"""``make crosscheck``, JAX part: ``jax.nn.standardize`` against the derived LayerNorm, in float64.

Both of its variance algorithms are checked: ``"stable"`` (two passes) and
``"fast"`` (mean(x**2) - mean(x)**2, clipped at 0), the default, whose
docstring states the two-pass formula.  Forward, Jacobian (``jax.jacrev``)
and the input gradient (``jax.vjp``) on n in {2, 3, 7, 64, 768} and three
epsilons.  Prints a table and exits 1 if any difference exceeds the tolerance.
"""

from __future__ import annotations

import sys

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402 - after the x64 switch
from exact import exact_gradients  # noqa: E402

import numeric  # noqa: E402

SIZES = (2, 3, 7, 64, 768)
EPSILONS = (1e-8, 1e-5, 0.25)
TOLERANCE = 1e-12


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(np.asarray(b)).max(), 1e-300))


def main() -> int:
    rng = np.random.default_rng(20261130)
    worst = 0.0
    print(f"{'jax.nn.standardize':<22}{'n':>5}{'epsilon':>9}{'forward':>11}{'J':>11}{'vjp':>11}")
    for algorithm in ("stable", "fast"):
        for n in SIZES:
            for eps in EPSILONS:
                x = rng.standard_normal((3, n)) * rng.uniform(0.1, 10) + rng.standard_normal()
                dy = rng.standard_normal((3, n))

                def function(a, e=eps, how=algorithm):
                    return jax.nn.standardize(a, axis=-1, epsilon=e, algorithm=how)

                forward = relative(numeric.layernorm.forward(x, eps), function(jnp.asarray(x)))
                jac = relative(numeric.layernorm.jacobian(x[0], eps), jax.jacrev(function)(jnp.asarray(x[0])))
                _, pull = jax.vjp(function, jnp.asarray(x))
                back = relative(numeric.layernorm.vjp(x, eps, dy), pull(jnp.asarray(dy))[0])
                diff = max(forward, jac, back)
                if n == 2 and diff > TOLERANCE:
                    # Every implementation loses digits here (1 - q/s**2 cancels): the derived
                    # Jacobian and input gradient in mpmath decide, and numeric must match them.
                    rows = np.repeat(x[:1], n, axis=0)
                    exact_j = exact_gradients("layernorm", rows, eps, np.eye(n), [])[0]
                    exact_v = exact_gradients("layernorm", x, eps, dy, [])[0]
                    ours = max(
                        relative(numeric.layernorm.jacobian(x[0], eps), exact_j),
                        relative(numeric.layernorm.vjp(x, eps, dy), exact_v),
                    )
                    theirs = max(
                        relative(jax.jacrev(function)(jnp.asarray(x[0])), exact_j),
                        relative(pull(jnp.asarray(dy))[0], exact_v),
                    )
                    worst = max(worst, ours)
                    flag = "" if ours <= TOLERANCE else "   FAIL"
                    print(
                        f"{algorithm:<22}{n:>5}{eps:>9g}{forward:>11.1e}{jac:>11.1e}{back:>11.1e}   pinned: vs mpmath "
                        f"numeric {ours:.1e}, jax {theirs:.1e}{flag}"
                    )
                    continue
                worst = max(worst, diff)
                flag = "" if diff <= TOLERANCE else "   FAIL"
                print(f"{algorithm:<22}{n:>5}{eps:>9g}{forward:>11.1e}{jac:>11.1e}{back:>11.1e}{flag}")
    print(f"\nworst difference {worst:.2e}; tolerance {TOLERANCE:.0e} (float64, jax {jax.__version__})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
