"""The machinery: what is derived from a layer's definition, one module per family of results.

- `response`, `jacobian`, `eigen`, `spectral`, `moments` and `backward` (vjp, jvp, hvp and the
  parameters' gradients);
- `regimes` (clamped layers and their kinks) and `scaling` (homogeneity);
- `sums`, which reduces sums over a symbolic n;
- the wrappers `affine`, `grouped`, `elementwise` and `reparametrized`, each a layer made of another.

Each was a module of `derivations` itself before; `derivations.jacobian` and the like still
import, as names of these modules.
"""
