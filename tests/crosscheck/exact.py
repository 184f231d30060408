"""The derived gradients in 60-digit mpmath arithmetic: the referee where implementations disagree."""

from __future__ import annotations

import numpy as np


def exact_gradients(key: str, x: np.ndarray, eps: float, dy: np.ndarray, params: list[np.ndarray]) -> list[np.ndarray]:
    """The derived gradients (dx, then the parameters' summed over rows) in 60-digit mpmath arithmetic:
    the same Program the code is emitted from, evaluated step by step."""
    import mpmath
    import sympy as sp

    from derivations import LAYERS
    from derivations.codegen import program
    from derivations.codegen._program import DY, EPSILON, SIZE, X

    plan = program(LAYERS[key])
    mpmath.mp.dps = 60
    totals: list[list[object]] = []
    for row in range(x.shape[0]):
        n = x.shape[-1]
        scalars: dict[sp.Symbol, object] = {EPSILON: mpmath.mpf(eps), SIZE: mpmath.mpf(n)}
        entries = [
            {X: mpmath.mpf(x[row, k]), DY: mpmath.mpf(dy[row, k])}
            | {p: mpmath.mpf(v[k]) for p, v in zip(plan.parameters, params, strict=True)}
            for k in range(n)
        ]

        def at(expr: sp.Expr, entry: dict, scalars: dict = scalars) -> object:
            return sp.N(expr.xreplace({**entry, **scalars}), 50)

        for step in (*plan.statistics, *plan.means):
            if step.vector:
                for entry in entries:
                    entry[step.symbol] = at(step.expr, entry)
            elif step.mean:
                scalars[step.symbol] = sum(at(step.expr, entry) for entry in entries) / n
            else:
                scalars[step.symbol] = at(step.expr, {})
        values = [[at(expr, entry) for entry in entries] for _, expr in plan.gradients]
        totals.append(values)
    dx = np.array([[float(v) for v in row[0]] for row in totals])
    summed = [
        np.array([float(sum(row[m][k] for row in totals)) for k in range(x.shape[-1])])
        for m in range(1, len(plan.gradients))
    ]
    return [dx, *summed]


def exact_without_epsilon(
    key: str, x: np.ndarray, alpha: float, gain: np.ndarray, bias: np.ndarray, dy: np.ndarray, v: np.ndarray
) -> dict[str, np.ndarray]:
    """The derived forward, Jacobian, vjp (with dgain and dbias summed over rows), jvp and hvp of a
    layer without epsilon (Dynamic Tanh), entry by entry in 60-digit mpmath arithmetic."""
    import mpmath
    import sympy as sp

    from derivations import LAYERS, quantities
    from derivations.derive.elementwise import diagonal
    from derivations.symbols import beta, g, gamma, i, k
    from derivations.symbols import v as v_base
    from derivations.symbols import x as x_base

    layer = LAYERS[key]
    alpha_symbol = layer.parameter
    symbols = sp.symbols("x_e g_e v_e gamma_e beta_e", real=True)
    bases = (x_base, g, v_base, gamma, beta)

    def entrywise(expr: sp.Expr) -> object:
        plain = expr.replace(
            lambda e: isinstance(e, sp.Indexed) and e.base in bases,
            lambda e: symbols[bases.index(e.base)],
        )
        return sp.lambdify([*symbols, alpha_symbol], plain, modules="mpmath")

    forms = {
        "forward": layer.output,
        "jacobian": diagonal(layer),
        "vjp": quantities.value(layer, "vjp"),
        "dgain": quantities.value(layer, "dgain"),
        "dbias": quantities.value(layer, "dbias"),
        "jvp": quantities.value(layer, "jvp"),
        "hvp": quantities.value(layer, "hvp"),
    }
    compiled = {name: entrywise(expr.xreplace({i: k})) for name, expr in forms.items()}
    out: dict[str, np.ndarray] = {}
    with mpmath.workdps(60):
        a = mpmath.mpf(alpha)
        for name, function in compiled.items():
            values = np.empty(x.shape)
            for index in np.ndindex(x.shape):
                column = index[-1]
                point = [mpmath.mpf(float(array[index])) for array in (x, dy, v)]
                point += [mpmath.mpf(float(gain[column])), mpmath.mpf(float(bias[column]))]
                values[index] = float(function(*point, a))
            out[name] = values
    rows = x.reshape(-1, x.shape[-1])
    out["jacobian"] = np.stack([np.diag(row) for row in out["jacobian"].reshape(rows.shape)]).reshape(
        (*x.shape, x.shape[-1])
    )
    for name in ("dgain", "dbias"):
        out[name] = out[name].reshape(rows.shape).sum(axis=0)
    return out
