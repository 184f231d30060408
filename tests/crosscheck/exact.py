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
