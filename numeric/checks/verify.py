"""Agreement checks that must pass before any figure is drawn.

Each check compares two independent computations with `assert_agree` and
returns how many values it compared.  The tests run the same checks over
wider grids; ``python -m numeric.checks.verify`` runs the pre-figure set.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import sympy as sp

from derivations import LAYERS, cli, quantities, symmetric
from derivations.derive import eigen, scaling
from derivations.symbols import epsilon as eps_symbol
from derivations.symbols import k, n, t
from derivations.symbols import x as x_base
from numeric._layer import NumericLayer, facade
from numeric.checks.agreement import AgreementError, assert_agree, exact


def symmetric_layers() -> tuple[NumericLayer, ...]:
    """The layers whose Jacobian is symmetric and whose functions take x and epsilon alone,
    or, without epsilon (Dynamic Tanh), x and the scalar in its place, so that every check
    applies (from the catalog)."""
    return tuple(facade(key) for key in symmetric() if not LAYERS[key].scalars or not LAYERS[key].has_epsilon)


def _second(layer: Any) -> sp.Symbol:
    """The symbol of the functions' second argument: epsilon, or the scalar in its place (alpha)."""
    return scaling.scale_parameter(layer.definition)


def _at_defaults(layer: Any, expr: sp.Expr) -> sp.Expr:
    """``expr`` at the parameters a layer without epsilon uses when none are given: gain 1, bias 0."""
    if layer.definition.has_epsilon:
        return expr
    ones = {base: sp.Integer(1 if name == "gain" else 0) for name, base in layer.definition.parameters}
    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base in ones, lambda e: ones[e.base])


def subset_layers() -> tuple[NumericLayer, ...]:
    """The layers whose partial means run over a subset (partial RMSNorm): J is not symmetric, so
    every check but the eigenstructure's applies, at the subset's default; drawn too."""
    return tuple(facade(key) for key, layer in LAYERS.items() if layer.subsets and not layer.scalars)


# What `run` reports, in order.
CHECKS = (
    "functions of t, lambdified vs symbolic evaluated exactly",
    "derivatives in t vs central differences",
    "J v vs central differences in random directions",
    "eigenvalues, J v per direction and spectral norm vs numpy.linalg",
)

# Central differences: truncation error ~ h^2 and rounding error ~ u/h balance
# at h ~ u^(1/3) times the scale over which the function changes.
_FD_STEP = np.finfo(np.float64).eps ** (1 / 3)
_ROOT_STEP = np.finfo(np.float64).eps ** (1 / 2)


def functions_of_t(layer: NumericLayer) -> list[tuple[str, str | None]]:
    """(numeric name, numeric name of what it is the t-derivative of) for each function of t."""
    out = []
    for quantity, item in quantities.rows(layer.definition):
        name = quantity.numeric_name(item)
        if quantity.evaluate == "of_t" and name is not None and layer.function(name) is not None:
            of = quantity.derivative_of
            out.append((name, None if of is None else quantities.names(layer.definition)[of][0].numeric_name(item)))
    return out


def scalar_against_symbolic(layer: NumericLayer, name: str, ts: np.ndarray, epsilons: np.ndarray) -> int:
    """A function of (t, epsilon), lambdified, vs its derived expression evaluated exactly."""
    found = quantities.by_numeric(layer.definition, name)
    assert found is not None, f"{layer.key} has no function {name}"
    _, quantity, item = found
    expr = _at_defaults(layer, quantity.derive(layer.definition, item))
    function = getattr(layer, name)
    tt, ee = np.meshgrid(ts, epsilons)
    second = _second(layer)
    expected = np.array([exact(expr, {t: a, second: b}) for a, b in zip(tt.ravel(), ee.ravel(), strict=True)])
    return assert_agree(function(tt.ravel(), ee.ravel()), expected, rtol=1e-13, what=f"{name} vs symbolic")


def derivative_against_differences(layer: NumericLayer, name: str, of: str, ts: np.ndarray, epsilon: float) -> int:
    """A derivative in t vs central differences of what it is the derivative of.

    The step is scaled to t and to the width over which the response rises to
    its asymptote, asymptote / slope at 0 (sqrt(epsilon) or epsilon, by
    convention).  Some conventions have a kink at t = 0 where central
    differences are only first-order accurate, so the step is sqrt(u) times
    the scale there, which keeps both truncation and rounding near 1e-8 relative.
    """
    derivative, primitive = getattr(layer, name), getattr(layer, of)
    peak = derivative(0.0, epsilon)
    upper = layer.asymptotes()[0] if layer.definition.has_epsilon else float(layer.asymptote(epsilon))
    width = abs(upper / peak)
    h = _ROOT_STEP * np.maximum(np.abs(ts), width)
    differences = (primitive(ts + h, epsilon) - primitive(ts - h, epsilon)) / (2 * h)
    # The slope never exceeds its value at 0; the absolute part of the
    # tolerance is relative to that.
    return assert_agree(
        differences, derivative(ts, epsilon), rtol=1e-7, atol=1e-8 * abs(peak), what=f"{name} vs differences of {of}"
    )


def jacobian_against_differences(
    layer: NumericLayer, x: np.ndarray, epsilon: float, rng: np.random.Generator, *parameters: np.ndarray
) -> int:
    """J v vs central differences of ``forward`` along random directions v.

    J annihilates the ones direction, so a check along 1 would prove nothing;
    v is standard normal, almost surely far from 1.
    """
    count = 0
    jac = layer.jacobian(x, epsilon, *parameters)
    scale = max(float(np.abs(x).max()), float(layer.epsilon_root(epsilon)))
    # |J v| <= |v| |J|; with a gain the derived bound takes it into account; where no bound over
    # all inputs exists (a non-symmetric J), the derived bound at x.
    norm = float(
        np.max(layer.bound(epsilon, *parameters[:1]) if hasattr(layer, "bound") else layer.norm_bound(x, epsilon))
    )
    for _ in range(3):
        v = rng.standard_normal(x.shape[-1])
        h = _FD_STEP * scale / np.linalg.norm(v)
        ahead, behind = layer.forward(x + h * v, epsilon, *parameters), layer.forward(x - h * v, epsilon, *parameters)
        differences = (ahead - behind) / (2 * h)
        atol = 1e-7 * float(np.linalg.norm(v)) * norm
        count += assert_agree(differences, jac @ v, rtol=1e-6, atol=atol, what="J v vs differences")
    return count


def eigenstructure(layer: NumericLayer, x: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    """Derived eigenvalues vs eigvalsh, the norm vs numpy, and J v = lambda v per derived direction.

    An explicit direction's vector is its lambdified entry; the complement is
    probed by a random w projected off every explicit direction.
    """
    jac = layer.jacobian(x, epsilon)
    tol = {"rtol": 1e-10, "atol": 1e-13 * layer.bound(epsilon)}
    if not layer.definition.statistics:
        return _diagonal_eigenstructure(layer, x, epsilon, jac, tol)
    eigenvalues = np.linalg.eigvalsh(jac)
    count = assert_agree(layer.eigenvalues(x, epsilon), eigenvalues, **tol, what="eigenvalues vs eigvalsh")
    count += assert_agree(
        layer.spectral_norm(x, epsilon), np.linalg.norm(jac, 2), **tol, what="spectral_norm vs numpy.linalg.norm"
    )
    stats = layer.statistics(x)
    point = {**stats, eps_symbol: epsilon}
    pairs = eigen.eigenpairs(layer.definition)
    explicit = {p.direction.name: layer.direction(p.direction, x) for p in pairs if not p.direction.complement}
    found = []
    for pair in pairs:
        value = exact(pair.value, point)
        found.append(([value], pair))
        if pair.direction.complement:
            basis, _ = np.linalg.qr(np.column_stack(list(explicit.values())))
            if basis.shape[1] >= x.shape[-1]:
                continue  # the complement is empty at this n
            v = rng.standard_normal((x.shape[-1],))
            v -= basis @ (basis.T @ v)
        else:
            v = explicit[pair.direction.name]
        count += assert_agree(jac @ v, value * v, **tol, what=f"J v along {pair.direction.name}")
    return count + _multiplicities(found, eigenvalues, tol)


def _multiplicities(found: list[tuple[list[float], eigen.Eigen]], eigenvalues: np.ndarray, tol: dict) -> int:
    """Each derived eigenvalue (``found``: its values, one per vector of its family, with its
    pair) occurs among numpy's ``eigenvalues`` at least as often as its derived multiplicity at
    this n, and the multiplicities, counted once per vector of a family, add up to n."""
    size = len(eigenvalues)
    total = 0
    for values, pair in found:
        times = int(pair.multiplicity.subs(n, size))
        total += times * len(values)
        for value in values if times > 0 else []:
            close = np.abs(eigenvalues - value) <= tol["atol"] + tol["rtol"] * abs(value)
            if int(close.sum()) < times:
                raise AgreementError(
                    f"multiplicity of {pair.direction.name}: {times} derived at n = {size}, "
                    f"{int(close.sum())} of numpy's eigenvalues within the tolerance of {value:.17g}"
                )
    if total != size:
        raise AgreementError(f"the derived multiplicities add up to {total}, not n = {size}")
    return len(found)


def _diagonal_eigenstructure(layer: Any, x: np.ndarray, alpha: float, jac: np.ndarray, tol: dict) -> int:
    """An elementwise layer (Dynamic Tanh): J e_k = J_kk e_k for every coordinate vector, J_kk
    the derived eigenvalue evaluated exactly; the eigenvalues and the norm vs numpy.linalg."""
    eigenvalues = np.linalg.eigvalsh(jac)
    count = assert_agree(layer.eigenvalues(x, alpha), eigenvalues, **tol, what="eigenvalues vs eigvalsh")
    count += assert_agree(
        layer.spectral_norm(x, alpha), np.linalg.norm(jac, 2), **tol, what="spectral_norm vs numpy.linalg.norm"
    )
    (pair,) = eigen.eigenpairs(layer.definition)
    value = _at_defaults(layer, pair.value)
    at_entries = [
        exact(value.xreplace({x_base[k]: x_base[m]}), {x_base[m]: float(x[m]), _second(layer): alpha})
        for m in range(x.shape[-1])
    ]
    for m, expected in enumerate(at_entries):
        e = np.eye(x.shape[-1])[m]
        count += assert_agree(jac @ e, expected * e, **tol, what=f"J e_{m}")
    return count + _multiplicities([(at_entries, pair)], eigenvalues, tol)


def run(seed: int = 0) -> dict[str, int]:
    """The pre-figure verification for every layer drawn: values compared, by check."""
    rng = np.random.default_rng(seed)
    ts = np.array([-3.0, -0.8, -0.1, 0.0, 0.2, 0.7, 3.0])
    epsilons = np.array([1e-6, 0.04, 0.25, 1.0, 100.0])
    counts = dict.fromkeys(CHECKS, 0)
    symmetric_ones = symmetric_layers()
    for layer in (*symmetric_ones, *subset_layers()):
        for name, of in functions_of_t(layer):
            counts[CHECKS[0]] += scalar_against_symbolic(layer, name, ts, epsilons)
            if of is not None:
                for e in epsilons:
                    counts[CHECKS[1]] += derivative_against_differences(
                        layer, name, of, np.linspace(-1, 1, 41), float(e)
                    )
        for size in (2, 3, 7, 64):
            for e in (1e-3, 0.25, 1.0):
                x = rng.standard_normal(size)
                counts[CHECKS[2]] += jacobian_against_differences(layer, x, e, rng)
                if layer in symmetric_ones:
                    counts[CHECKS[3]] += eigenstructure(layer, x, e, rng)
    return counts


PROG = "python -m numeric.checks.verify"


def main(argv: list[str] | None = None) -> int:
    cli.OneLineParser(
        prog=PROG, description="Run the agreement checks that must pass before any figure is drawn."
    ).parse_args(argv)
    try:
        count = sum(run().values())
    except AgreementError as error:
        print(f"verification failed: {error}", file=sys.stderr)
        return 1
    print(f"verification passed: {count} values agree")
    return 0


if __name__ == "__main__":
    cli.finish(main, PROG)
