r"""The audit's numbers: exact rationals while they last, balls that enclose the value after.

A value is a python-flint ``fmpq`` (an exact rational) as long as only
+ - * / and integer powers of rationals made it, so that ``epsilon == 1/100``
and a mean of exactly 0 are decided exactly; a root, tanh or exp of one that
is not exact turns it into an ``arb`` ball, which encloses the exact value.
Every decision is one the numbers prove: ``compare`` answers None where a ball
leaves it open.  Derivatives go through `Jet`, forward-mode, with the same
numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy as sp
from flint import arb, fmpq
from flint.utils.flint_exceptions import FlintError

Num = Any  # fmpq | arb


class Undefined(Exception):
    """A value is undefined (a division by an exact zero, a root of a negative number, a limit
    whose sides differ); the message says which."""


class Unknown(Exception):
    """The value cannot be told here: a ball too wide, or a term the audit does not evaluate."""


# What arithmetic raises where the balls cannot go on (a ball that holds 0 divided by, an overflow,
# flint's DomainError, a zip of unequal lengths): the audit's "not evaluable here". Anything else
# (a TypeError, KeyError, IndexError, AttributeError) is a defect of the audit, raised, never read
# as a value the claim cannot be evaluated at.
NOT_EVALUABLE: tuple[type[Exception], ...] = (Unknown, ArithmeticError, ValueError, FlintError)
# Undefined there, or not evaluable: no value either way.
NO_VALUE: tuple[type[Exception], ...] = (Undefined, *NOT_EVALUABLE)


@dataclass(frozen=True)
class Inf:
    """+oo (sign 1) or -oo (sign -1)."""

    sign: int


@dataclass(frozen=True)
class AtLeast:
    """A number known only from below: a bound over all inputs, sampled at some of them."""

    value: Num


ZERO, ONE = fmpq(0), fmpq(1)
# Steps toward a limit point, as powers of two: 2^-20, 2^-40, ... (or 2^20, ... toward oo); far
# enough that a point's own scales (an x of 1e-30 has q = 1e-60) are passed long before the last.
STEPS = (20, 40, 80, 160, 320, 640, 1280, 2560)
# Beside a switch enclosed to 2^-200 of its amplitude: each step far above that width.
BESIDE_STEPS = (20, 40, 80, 160)


def exact(value: Any) -> Num:
    """An exact number given as int, float (the decimal it prints as) or SymPy rational."""
    if isinstance(value, (fmpq, arb)):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, sp.Basic)):
        raise Unknown(f"{type(value).__name__} is not a number")
    if isinstance(value, int):
        return fmpq(value)
    rational = sp.Rational(str(value)) if isinstance(value, float) else value
    if rational.is_Rational:
        return fmpq(int(rational.p), int(rational.q))
    raise Unknown(f"{value} is not a rational")


def ball(value: Num) -> arb:
    return value if isinstance(value, arb) else arb(value)


def is_zero(value: Num) -> bool:
    """Exactly zero."""
    return value == 0 if isinstance(value, fmpq) else value.is_zero()


def holds_zero(value: Num) -> bool:
    """Zero is possible: exactly zero, or a ball around it."""
    return value == 0 if isinstance(value, fmpq) else 0 in value


def positive(value: Num) -> bool:
    return bool(value > 0)


def negative(value: Num) -> bool:
    return bool(value < 0)


def upper(value: Num) -> arb:
    """An upper end of the value (for ordering candidates, not for deciding)."""
    if isinstance(value, fmpq):
        return arb(value)
    return value.mid() + value.rad()


def short(value: Any) -> str:
    if isinstance(value, fmpq):
        return str(value)
    if isinstance(value, arb):
        return value.mid().str(10, radius=False)
    if isinstance(value, Inf):
        return "oo" if value.sign > 0 else "-oo"
    return str(value)


def divide(a: Num, b: Num) -> Num:
    if is_zero(b):
        raise Undefined("a division by zero")
    if holds_zero(b):
        raise Unknown("a division by a ball that holds zero")
    return a / b


def root(value: Num) -> Num:
    """The square root: exact where the value is the square of a rational."""
    if is_zero(value):
        return ZERO
    if negative(value):
        raise Undefined("a square root of a negative number")
    if not positive(value):
        raise Unknown("a square root of a ball that holds zero")
    if isinstance(value, fmpq):
        try:
            return value.sqrt()
        except FlintError:  # DomainError: not the square of a rational
            return arb(value).sqrt()
    return value.sqrt()


def hull(a: Num, b: Num) -> Num:
    """A number known to be one of two: either, where they are equal, else their hull."""
    if isinstance(a, fmpq) and isinstance(b, fmpq) and a == b:
        return a
    return ball(a).union(ball(b))


def total(values: Sequence[Num]) -> Num:
    out: Num = ZERO
    for value in values:
        out = out + value
    return out


def compare(a: Any, op: str, b: Any) -> bool | None:
    """``a op b``: True or False where the numbers decide it, None where a ball leaves it open."""
    if isinstance(a, Inf) or isinstance(b, Inf):
        return _compare_infinite(a, op, b)
    gap = a - b
    if op in ("==", "!="):
        if is_zero(gap):
            return op == "=="
        if not holds_zero(gap):
            return op == "!="
        return None
    if is_zero(gap):
        return op in ("<=", ">=")
    if gap > 0:
        return op in (">", ">=")
    if gap < 0:
        return op in ("<", "<=")
    return None


def _compare_infinite(a: Any, op: str, b: Any) -> bool | None:
    left = a.sign * 2 if isinstance(a, Inf) else 0
    right = b.sign * 2 if isinstance(b, Inf) else 0
    if left == right:
        return op in ("==", "<=", ">=")  # the same infinity
    less = left < right
    return {"==": False, "!=": True, "<": less, "<=": less, ">": not less, ">=": not less}[op]


def agree(a: Any, b: Any) -> bool:
    """Both sides in balls that overlap and are narrow: equal to the precision carried."""
    if not (isinstance(a, (fmpq, arb)) and isinstance(b, (fmpq, arb))):
        return False
    gap = ball(a) - ball(b)
    scale = max(abs(ball(a)).mid(), abs(ball(b)).mid(), arb(1))
    return bool(0 in gap and gap.rad() < scale * arb(2) ** -180)


def extrapolated(values: Sequence[Any]) -> Any:
    """The value a sequence at points tending to a limit tends to: its last term where the last
    steps shrink to nothing, an infinity where its size grows as a power of the distance to the
    point (the logarithm in step with the steps); `Unknown` otherwise.  Not rigorous."""
    if all(isinstance(v, (fmpq, arb)) for v in values):
        balls = [ball(v) for v in values]
        last, before, earlier = balls[-1], balls[-2], balls[-3]
        step = abs(last - before)
        scale = max(abs(last).mid(), arb(1))
        # Settled: the last step tiny, and shrinking or within the rounding of the balls (a
        # constant sequence, such as a slope of 0, evaluated as balls around it).
        shrinking = upper(step) <= upper(abs(before - earlier)) or 0 in last - before
        if upper(step) <= scale * arb(2) ** -60 and shrinking:
            return values[-1] if is_zero(step) else arb(last.mid(), upper(step) * 4 + last.rad())
        if all(positive(abs(v)) for v in balls[-3:]):
            # |v| ~ C d^-p as the distance d = 2^-s shrinks: log2 |v| grows by p (s' - s); the
            # steps double, so each growth is twice the one before.
            logs = [abs(v).log() / arb(2).log() for v in balls[-3:]]
            first, second = logs[1] - logs[0], logs[2] - logs[1]
            if first > 8 and upper(abs(second - 2 * first)) < upper(first) / 8:
                signs = {1 if v > 0 else -1 for v in balls[-3:]}
                if len(signs) == 1:
                    return Inf(signs.pop())
    if all(isinstance(v, Inf) for v in values[-3:]) and len({v.sign for v in values[-3:]}) == 1:
        return values[-1]
    raise Unknown("a limit that does not settle at the points tried")


def derivative_by_quotients(value_at: Any, at: Num) -> Num:
    """The derivative of a function of one variable at ``at``, where jets could not give it:
    the limits of its difference quotients from the right and from the left, which must agree
    (`Undefined` where they do not: a kink).  Not rigorous."""
    here = value_at(at)
    sides = []
    for sign in (1, -1):
        quotients = [divide(value_at(at + sign * arb(2) ** -step) - here, sign * arb(2) ** -step) for step in STEPS[:6]]
        sides.append(extrapolated(quotients))
    if compare(sides[0], "==", sides[1]) is False:
        raise Undefined(f"no derivative: from the right {short(sides[0])}, from the left {short(sides[1])}")
    return sides[0] if isinstance(sides[0], Inf) else hull(sides[0], sides[1])


def known(value: Num) -> bool:
    """Not NaN: a derivative the jets could give."""
    return not (isinstance(value, arb) and value.is_nan())


# --- jets ------------------------------------------------------------------------------


class Jet:
    """A value with its partial derivatives along some tangents (none for a plain number)."""

    __slots__ = ("d", "value")

    def __init__(self, value: Num, d: Sequence[Num] = ()) -> None:
        self.value = value
        self.d = tuple(d)

    def _pair(self, other: Jet) -> tuple[tuple[Num, ...], tuple[Num, ...]]:
        size = max(len(self.d), len(other.d))
        return (self.d + (ZERO,) * (size - len(self.d)), other.d + (ZERO,) * (size - len(other.d)))

    def __add__(self, other: Jet) -> Jet:
        a, b = self._pair(other)
        return Jet(self.value + other.value, [x + y for x, y in zip(a, b, strict=True)])

    def __neg__(self) -> Jet:
        return Jet(-self.value, [-x for x in self.d])

    def __sub__(self, other: Jet) -> Jet:
        return self + (-other)

    def __mul__(self, other: Jet) -> Jet:
        a, b = self._pair(other)
        return Jet(self.value * other.value, [x * other.value + self.value * y for x, y in zip(a, b, strict=True)])

    def mapped(self, value: Num, slope: Num) -> Jet:
        """f(self), from f's value and its derivative at self.value (the chain rule)."""
        return Jet(value, [slope * x for x in self.d])

    def reciprocal(self) -> Jet:
        inverse = divide(ONE, self.value)
        return self.mapped(inverse, -inverse * inverse)

    def __truediv__(self, other: Jet) -> Jet:
        return self * other.reciprocal()

    @property
    def flat(self) -> bool:
        """Whether every derivative is exactly zero."""
        return all(is_zero(x) for x in self.d)


def constant(value: Num, tangents: int = 0) -> Jet:
    return Jet(value, [ZERO] * tangents)


def jet_sqrt(x: Jet) -> Jet:
    if is_zero(x.value):
        # sqrt(u) at u = 0 has no derivative where u grows linearly, and may have one where u grows
        # as a square (sqrt(x^4) = x^2): first derivatives cannot tell.  Unknown (NaN), which
        # stays harmless unless a derivative is used (a clamp's other branch may not use it).
        return Jet(ZERO, [arb("nan")] * len(x.d))
    value = root(x.value)
    return x.mapped(value, divide(ONE, 2 * value))


def jet_power(x: Jet, exponent: sp.Rational) -> Jet:
    if exponent.is_Integer:
        power = int(exponent)
        if power == 0:
            return constant(ONE, len(x.d))
        base = x if power > 0 else x.reciprocal()
        out = base
        for _ in range(abs(power) - 1):
            out = out * base
        return out
    if exponent.q == 2:
        return jet_power(jet_sqrt(x), sp.Integer(exponent.p))
    if not positive(x.value):
        raise Unknown(f"a power {exponent} of a number not known to be positive")
    factor = arb(int(exponent.p)) / int(exponent.q)
    value = ball(x.value) ** factor
    return x.mapped(value, factor * divide(value, x.value))


def jet_abs(x: Jet) -> Jet:
    if positive(x.value):
        return x
    if negative(x.value):
        return -x
    if is_zero(x.value) and x.flat:
        return x
    raise Unknown("|x| at a ball that holds zero, where its derivative is needed")


def jet_tanh(x: Jet) -> Jet:
    if is_zero(x.value):
        return x.mapped(ZERO, ONE)
    value = ball(x.value).tanh()
    return x.mapped(value, 1 - value * value)


def jet_exp(x: Jet) -> Jet:
    if is_zero(x.value):
        return x.mapped(ONE, ONE)
    value = ball(x.value).exp()
    return x.mapped(value, value)


def jet_sech(x: Jet) -> Jet:
    if is_zero(x.value):
        return x.mapped(ONE, ZERO)
    value = divide(ONE, ball(x.value).cosh())
    return x.mapped(value, -value * ball(x.value).tanh())


def jet_sign(x: Jet) -> Jet:
    if positive(x.value):
        return constant(ONE, len(x.d))
    if negative(x.value):
        return constant(-ONE, len(x.d))
    if is_zero(x.value):
        return constant(ZERO, len(x.d))
    raise Unknown("the sign of a ball that holds zero")


def jet_extreme(values: list[Jet], largest: bool) -> Jet:
    best = values[0]
    for value in values[1:]:
        ahead = compare(value.value, ">" if largest else "<", best.value)
        if ahead:
            best = value
        elif ahead is None or compare(value.value, "==", best.value):
            if not (best.flat and value.flat):
                raise Unknown("max or min at a tie, where its derivative is needed")
            best = constant(hull(best.value, value.value), len(best.d))
    return best
