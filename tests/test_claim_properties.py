"""A refutation's counterexample really violates the claim, by an independent evaluation.

The checker decides from the derived formulas.  Here each counterexample is
evaluated again from the layer's definition alone, with mpmath on the explicit
input it names: the response by writing the definition out at x = (-t, 0, t),
the slope by mpmath's numerical derivative of that, the spectral norm as the
largest singular value of the explicit Jacobian (SymPy's Matrix.jacobian of the
written-out definition), the second moment as the mean square of the written-out
output.
"""

from functools import cache

import mpmath
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from derivations import LAYERS, symmetric
from derivations.claims import Claim, check
from derivations.symbols import epsilon, t, x

QUANTITIES = ("response", "slope", "spectral_norm", "second_moment")
BOUNDS = tuple(map(sp.Rational, ("1/2", "1", "3/2", "2", "10", "1/1000")))


@cache
def _explicit_outputs(key: str, size: int) -> tuple[sp.Expr, ...]:
    return tuple(LAYERS[key].explicit_entry(size, m) for m in range(size))


def _independent(key: str, name: str, example: dict) -> mpmath.mpf:
    eps = sp.Rational(example["epsilon"])
    with mpmath.workdps(50):
        if name in ("response", "slope"):
            pattern = LAYERS[key].patterns[0]
            response = sp.lambdify((t, epsilon), LAYERS[key].on_pattern(pattern), modules="mpmath")
            value = mpmath.mpf(sp.Rational(example["t"]))
            if name == "response":
                return response(value, mpmath.mpf(eps))
            return mpmath.diff(lambda a: response(a, mpmath.mpf(eps)), value)
        point = [sp.Rational(v) for v in example["x"]]
        size = len(point)
        entries = {x[m]: point[m] for m in range(size)}
        outputs = _explicit_outputs(key, size)
        if name == "second_moment":
            return (
                mpmath.fsum(mpmath.mpf(sp.N(o.xreplace(entries).subs(epsilon, eps), 60)) ** 2 for o in outputs) / size
            )
        # Central differences at 50 digits of the written-out definition: right at the
        # kink of a clamped or epsilon-outside layer too, where it is differentiable.
        functions = [sp.lambdify([x[m] for m in range(size)] + [epsilon], o, modules="mpmath") for o in outputs]
        at = [mpmath.mpf(v) for v in point]

        def partial(row: int, column: int) -> mpmath.mpf:
            def along(a: mpmath.mpf) -> mpmath.mpf:
                moved = list(at)
                moved[column] = a
                return functions[row](*moved, mpmath.mpf(eps))

            return mpmath.diff(along, at[column])

        matrix = mpmath.matrix([[partial(r, c) for c in range(size)] for r in range(size)])
        return max(mpmath.svd_r(matrix, compute_uv=False))


@settings(max_examples=16)
@given(
    # The independent evaluation here is in t and epsilon: a layer without epsilon is in test_dyt.py.
    key=st.sampled_from([key for key in symmetric() if LAYERS[key].has_epsilon]),
    name=st.sampled_from(QUANTITIES),
    op=st.sampled_from(("<=", ">=")),
    bound=st.sampled_from(BOUNDS),
)
def test_a_refutation_violates_the_claim_at_its_counterexample(key, name, op, bound):
    verdict = check(Claim(f"{name} {op} {bound}", key))
    if verdict.verdict != "refuted":
        return
    value = _independent(key, name, verdict.counterexample)
    with mpmath.workdps(50):
        holds = value <= mpmath.mpf(bound.p) / bound.q if op == "<=" else value >= mpmath.mpf(bound.p) / bound.q
    assert not holds, (verdict.detail, value)


def test_the_property_can_fail():
    """The independent evaluation does disagree with a wrong counterexample."""
    value = _independent("layernorm", "response", {"t": 1, "epsilon": 0.25})
    with mpmath.workdps(50):
        assert abs(value - 1 / mpmath.sqrt(mpmath.mpf(2) / 3 + mpmath.mpf(1) / 4)) < mpmath.mpf(10) ** -40
    assert not value <= 1  # so "response <= 1" is violated at t = 1, epsilon = 1/4
