"""The C99 backend: forward and backward for one row of n doubles.

Every statistic is a mean taken in its own pass over the row, in the order
the layer defines them: the mean first, then the mean square of the
centered entries x[j] - mu (the two-pass variance, with no cancellation
between a mean of squares and a squared mean).  The means of the upstream
gradient are likewise of dy and dy * (x - mu).  Expressions that do not
depend on the entry are computed once, outside the loops.  The row is read at
its scale (`derivations.codegen._program`): an entry x[j] is x[j] / m_x, and
a centered entry ((x[j] / m_x - mu) - center) / m_c.
"""

from __future__ import annotations

from typing import Any

import sympy as sp
from sympy.printing.c import C99CodePrinter

from derivations.catalog import LAYERS
from derivations.codegen._program import (
    CENTERED,
    DY,
    ROOT,
    SCALE,
    SIZE,
    Pair,
    Program,
    X,
    half_power,
    rescaled,
    shared,
)
from derivations.derive import scaling

INDEX = "j"
FIRST = f"{SCALE}_{X}"  # the scale of x
SECOND = f"{SCALE}_{CENTERED}"  # the further scale of the centered entries
CENTER = "center"  # the mean of the centered entries as first computed, a rounding error
UPSTREAM = f"{SCALE}_{DY}"  # the scale of dy: every gradient is linear in dy, computed for dy / m_dy
# Each scale is a power of two: dividing by it is multiplying by its inverse, exactly (both are
# the correctly rounded value of one real number), and a multiply is several times cheaper.
INVERSE = "inv_"
# The bits a magnitude is compared by, for each floating type: the type, its unsigned integer
# of the same width, and the mask that clears the sign.
_BITS = {
    "double": ("double", "uint64_t", "MAGNITUDE"),
    "float": ("float", "uint32_t", "0x7fffffffu"),
}
# A row at its own scale is computed as it is, as in NumPy's fused path (the same bounds as
# numeric.kernels.rescale.fast_range and OFFSET, which tests/test_native.py holds them to).
FAST_LIMIT = 128
OFFSET = 4.0
# The scales at which a Jacobian's row is taken as it is (numeric.kernels.assemble.SAFE, which
# tests/test_native.py holds them to): every power up to the sixth of the largest centered entry
# and of the root of epsilon is a normal double.
SAFE_LOW, SAFE_HIGH = "0x1p-100", "0x1p100"
# A mean or a largest magnitude is taken in this many lanes, entry j in lane j % LANES, and the
# lanes combined pairwise at the end: a fixed order of operations that the compiler vectorises
# without being allowed to reassociate (no -ffast-math).  A power of two.
LANES = 8
# Binades between the root of epsilon and a row's largest |x_i| beyond which the backward pass of a
# layer with parameters refuses the row (status 3): x / m is then below 2**-900, 122 binades from
# the subnormals, and a parameter's gradient, a product of dy and the scaled row, could lose digits.
APART_BINADES = 900

HELPER = f"""static const uint64_t MAGNITUDE = 0x7fffffffffffffffu; /* the bits of a double but its sign */
/* A row is computed as it is where its scales lie within LOW .. HIGH and a mean of x within
   OFFSET spreads of 0 (numeric.kernels.rescale.fits), else at a scale. */
#define LOW 0x1p-{FAST_LIMIT}
#define HIGH 0x1p{FAST_LIMIT}
#define OFFSET {OFFSET}

static double power_of_two_above(double size, double {ROOT}, double within)
{{
    /* A power of two above max(size, {ROOT}) and at least the smallest normal double (so that
       its inverse is finite), at most 2**1023 / within (a power of two): dividing by it (or
       multiplying by its inverse) is exact, and within times it is finite. */
    int exponent, used;
    frexp(fmax(fmax(size, {ROOT}), DBL_MIN), &exponent);
    frexp(within, &used);
    return ldexp(1.0, exponent < 1024 - used ? exponent : 1024 - used);
}}
"""


class Printer(C99CodePrinter):
    """C99 printer in which a vector's symbol is its entry ``name[j]``, x and c at their scale."""

    def __init__(
        self,
        vectors: frozenset[sp.Symbol],
        centered: sp.Expr | None = None,
        scaled: bool = True,
        real: str = "double",
        doubles: frozenset[sp.Symbol] = frozenset(),
    ) -> None:
        super().__init__()
        self.real = real  # the type of the vectors' entries in memory
        self.doubles = doubles  # vectors held as doubles whatever ``real`` is (the parameters)
        self._vectors = vectors
        self._centered = centered
        self._scaled = scaled  # False: x and c as they are (a row at its own scale)
        self.index = INDEX  # the entry a vector's symbol reads: x[j], or x[i] in a Jacobian's row
        # The names of the values computed once per row (h) and of shared parts (t): one
        # printer prints one function, and each name is declared once in it.
        self.hoisted = sp.numbered_symbols("h", real=True)
        self.shared = sp.numbered_symbols("t", real=True)

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        name = super()._print_Symbol(expr)
        # An entry read as a double: the product of two floats is a float in C (x**2 of a float
        # near 1e-20 is subnormal there), and every value is computed in double.
        entry = f"{name}[{self.index}]" if self.kind(expr) == "double" else f"((double){name}[{self.index}])"
        if not self._scaled:
            if expr == CENTERED and self._centered is not None:
                return f"({self._print(self._centered)})"
            if expr == DY:
                return f"({entry} * {INVERSE}{UPSTREAM})"
            return entry if expr in self._vectors else name
        if expr == DY:
            return f"({entry} * {INVERSE}{UPSTREAM})"
        if expr == X:
            return f"({entry} * {INVERSE}{FIRST})"
        if expr == CENTERED and self._centered is not None:
            # Subtracted in this order: a constant row's entries become exactly 0.
            return f"(({self._print(self._centered)} - {CENTER}) * {INVERSE}{SECOND})"
        return entry if expr in self._vectors else name

    def kind(self, symbol: sp.Basic) -> str:
        """The C type of ``symbol``'s entries in memory."""
        return "double" if symbol in self.doubles else self.real

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        return half_power(self, expr, "sqrt", "1.0") or super()._print_Pow(expr)

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        # A derivative of a clamped layer is given on the open regimes only:
        # on the boundary between them it does not exist, NAN as in NumPy's select.
        if expr.args[-1].cond != sp.true:
            expr = sp.Piecewise(*expr.args, (sp.nan, True))
        # One line: nested conditional expressions, the last branch the default.
        out = self._print(expr.args[-1].expr)
        for value, condition in reversed(expr.args[:-1]):
            out = f"(({self._print(condition)}) ? ({self._print(value)}) : ({out}))"
        return out


def _hoisted(
    exprs: list[sp.Expr], vectors: set[sp.Symbol], names: Any
) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """``exprs`` with each sum's or product's terms that hold no entry gathered into a scalar
    computed once per row (named by ``names``): c / sqrt(epsilon + q) becomes c * h0, not a
    square root and a division per entry."""
    found: list[tuple[sp.Symbol, sp.Expr]] = []

    def scalar(expr: sp.Basic) -> bool:
        return not (expr.free_symbols & vectors)

    def walk(expr: sp.Basic) -> sp.Basic:
        if expr.is_Atom or scalar(expr):
            return expr
        args = [walk(arg) for arg in expr.args]
        if isinstance(expr, (sp.Add, sp.Mul)):
            fixed = [arg for arg in args if scalar(arg)]
            if fixed and not (len(fixed) == 1 and (fixed[0].is_Atom or (-fixed[0]).is_Atom)):
                symbol = next(names)
                found.append((symbol, expr.func(*fixed)))
                return expr.func(symbol, *(arg for arg in args if not scalar(arg)), evaluate=False)
            return expr.func(*args, evaluate=False)
        return expr.func(*args)

    return found, [walk(expr) for expr in exprs]


def _ordered(definitions: list[tuple[sp.Symbol, sp.Expr]]) -> list[tuple[sp.Symbol, sp.Expr]]:
    """``definitions`` ordered so that each comes after those it uses."""
    pending = dict(definitions)
    out: list[tuple[sp.Symbol, sp.Expr]] = []

    def visit(symbol: sp.Symbol) -> None:
        value = pending.pop(symbol, None)
        if value is None:
            return
        for used in sorted(value.free_symbols & set(pending), key=str):
            visit(used)
        out.append((symbol, value))

    for symbol, _ in definitions:
        visit(symbol)
    return out


def _entry(program: Program, printer: Printer, exprs: list[sp.Expr]) -> tuple[list[str], list[str], list[str]]:
    """The lines before a loop over the entries (what is the same for every entry), the lines
    inside it, and each of ``exprs`` as printed there."""
    vectors = set(program.vectors)
    hoisted, exprs = _hoisted(exprs, vectors, printer.hoisted)
    replacements, reduced = shared([value for _, value in hoisted] + exprs, printer.shared)
    definitions = [(symbol, value) for (symbol, _), value in zip(hoisted, reduced, strict=False)]
    before, inside = [], []
    scalars = list(definitions)
    for symbol, value in replacements:
        if value.free_symbols & vectors:
            vectors.add(symbol)
            inside.append(f"const double {symbol} = {printer.doprint(value)};")
        else:
            scalars.append((symbol, value))
    before = [f"    const double {symbol} = {printer.doprint(value)};" for symbol, value in _ordered(scalars)]
    return before, inside, [printer.doprint(e) for e in reduced[len(hoisted) :]]


def _loop(
    program: Program,
    printer: Printer,
    targets: list[str],
    exprs: list[sp.Expr],
    assign: list[str],
    degrees: list[int] | None = None,
    factors: list[str] | None = None,
) -> list[str]:
    """Scalar shared parts before the loop, the entry's own inside it; each result times m**degree,
    or times its ``factors`` (a printed product, `_upstream_factors`)."""
    before, inside, values = _entry(program, printer, exprs)
    if factors is not None:
        values = [f"({v}){factor}" for v, factor in zip(values, factors, strict=True)]
    else:
        values = [
            rescaled(f"({v})", d, INVERSE) if d else v
            for v, d in zip(values, degrees or [0] * len(values), strict=True)
        ]
    body = [f"        {line}" for line in inside]
    body += [f"        {t} {op} {v};" for t, v, op in zip(targets, values, assign, strict=True)]
    loop = f"    for (int {INDEX} = 0; {INDEX} < {SIZE}_; ++{INDEX}) {{"
    return [*before, loop, *body, "    }"]


def _lanes(
    before: list[str],
    inside: list[str],
    sums: list[tuple[str, str]],
    largest: list[tuple[str, str]],
    kinds: dict[str, str] | None = None,
) -> list[str]:
    """One pass over the entries: each ``sums`` (name, value) the sum of its value, each
    ``largest`` (name, value) the largest magnitude of its value.  Each is taken in `LANES`
    lanes, entry j in lane j % LANES (the last n % LANES entries in lane 0), the lanes combined
    in a fixed order.  A magnitude is compared by its bits, sign cleared (as a float where
    ``kinds`` says a largest's value is one, else as a double): for IEEE doubles that
    order is the order of the values, and the comparison vectorises where a floating max (with
    its NaN rules) does not; a NaN is above infinity, so that the largest magnitude is not
    finite where an entry is not."""

    kinds = kinds or {}
    if len(sums) + len(largest) > 1:
        # A loop each: GCC 12 vectorises a body with one accumulator, not one with two (sums,
        # or a sum and a comparison of bits); the later loops read the row from L1.
        loops = [_lanes([], [], [], [one], kinds) for one in largest]
        loops += [_lanes([], inside, [one], []) for one in sums]
        return [*before, *(line for loop in loops for line in loop)]

    def lanes(name: str) -> list[str]:
        return [f"{name}_{k}" for k in range(LANES)]

    def step(k: int) -> list[str]:
        out = [f"{lanes(name)[k]} += {value};" for name, value in sums]
        for name, value in largest:
            lane = lanes(name)[k]
            real, bits, mask = _BITS[kinds.get(name, "double")]
            out += [
                "{",
                f"    const {real} v_ = {value};",
                f"    {bits} b_;",
                "    memcpy(&b_, &v_, sizeof b_);",
                f"    b_ &= {mask};",
                f"    {lane} = b_ > {lane} ? b_ : {lane};",
                "}",
            ]
        return out

    def entry(index: str, k: int) -> list[str]:
        return [f"            const int {INDEX} = {index};", *(f"            {line}" for line in [*inside, *step(k)])]

    unrolled = [line for k in range(LANES) for line in ["        {", *entry(f"j0_ + {k}", k), "        }"]]
    declared = [f"    double {', '.join(name for name, _ in [*sums, *largest])};"]
    zeros = [f"        double {', '.join(f'{lane} = 0.0' for lane in lanes(name))};" for name, _ in sums]
    zeros += [
        f"        {_BITS[kinds.get(name, 'double')][1]} {', '.join(f'{lane} = 0' for lane in lanes(name))};"
        for name, _ in largest
    ]
    combined = []
    for name, _ in sums:
        pairs = lanes(name)
        while len(pairs) > 1:
            pairs = [f"({pairs[k]} + {pairs[k + 1]})" for k in range(0, len(pairs), 2)]
        combined.append(f"        {name} = {pairs[0]};")
    for name, _ in largest:
        first, *rest = lanes(name)
        real, bits, _ = _BITS[kinds.get(name, "double")]
        combined += [
            "        {",
            f"            {bits} b_ = {first};",
            *(f"            b_ = {lane} > b_ ? {lane} : b_;" for lane in rest),
            f"            {real} v_;",
            "            memcpy(&v_, &b_, sizeof v_);",
            f"            {name} = v_;",
            "        }",
        ]
    return [
        *before,
        *declared,
        "    {",
        *zeros,
        "        int j0_ = 0;",
        f"        for (; j0_ + {LANES} <= {SIZE}_; j0_ += {LANES}) {{",
        *(f"    {line}" for line in unrolled),
        "        }",
        f"        for (int j_ = j0_; j_ < {SIZE}_; ++j_) {{",
        *(f"    {line}" for line in entry("j_", 0)),
        "        }",
        *combined,
        "    }",
    ]


def _means(
    program: Program,
    printer: Printer,
    steps: list[tuple[str, sp.Expr]],
    largest: tuple[tuple[str, str], ...] = (),
    kinds: dict[str, str] | None = None,
) -> list[str]:
    """One pass for the means ``steps`` (name, elementwise expression) and the largest magnitudes
    ``largest`` (name, printed entry, of the type ``kinds`` gives: `_lanes`)."""
    before, inside, values = _entry(program, printer, [expr for _, expr in steps])
    sums = [(name, value) for (name, _), value in zip(steps, values, strict=True)]
    return [*_lanes(before, inside, sums, list(largest), kinds), *(f"    {name} /= {SIZE};" for name, _ in steps)]


def _mean(program: Program, printer: Printer, name: str, expr: sp.Expr) -> list[str]:
    return _means(program, printer, [(name, expr)])


def _largest(name: str, entry: str, kind: str = "double") -> list[str]:
    return _lanes([], [], [], [(name, entry)], {name: kind})


def _statistics(program: Program, printer: Printer) -> list[str]:
    """The scale, epsilon at it, and the statistics of the scaled row."""
    out = [
        *_largest("top", f"{X}[{INDEX}]", printer.real),
        "    if (!isfinite(top)) return 1;",
        f"    const double {FIRST} = power_of_two_above(top, {ROOT}, 1.0);",
        f"    const double {INVERSE}{FIRST} = 1.0 / {FIRST};",
    ]
    scaled = [f"    epsilon = {printer.doprint(program.scaled_epsilon)};"]
    unused = [f"    (void){INVERSE}{SCALE};"]  # a result of degree 0 (the output) is not rescaled
    if not program.centered:
        out += [
            f"    const double {SCALE} = {FIRST};",
            f"    const double {INVERSE}{SCALE} = {INVERSE}{FIRST};",
            *unused,
            *scaled,
        ]
    for step in program.statistics:
        if step.vector:
            # Centered once more (the first mean's rounding is left in c: a constant row becomes
            # exactly 0), then divided by its own size: c is O(1) even where the offset dwarfs it.
            first = printer.doprint(step.expr)
            out += _mean(program, printer, CENTER, step.expr)
            out += _largest("top_c", f"{first} - {CENTER}")
            out += [
                # At least DBL_MIN / m_x: the scale m = m_x m_c is a normal double, 1 / m finite.
                f"    const double {SECOND} = "
                f"power_of_two_above(top_c, fmax({ROOT} / {FIRST}, DBL_MIN / {FIRST}), {FIRST});",
                f"    const double {INVERSE}{SECOND} = 1.0 / {SECOND};",
                # A constant row (top_c exactly 0) has epsilon's scale alone: ROOT / FIRST may underflow.
                f"    const double {SCALE} = top_c == 0.0 ? power_of_two_above({ROOT}, {ROOT}, 1.0)"
                f" : {FIRST} * {SECOND};",
                f"    const double {INVERSE}{SCALE} = 1.0 / {SCALE};",
                *unused,
                *scaled,
            ]
        elif step.mean:
            out += _mean(program, printer, str(step.symbol), step.expr)
        else:
            out += [f"    const double {step.symbol} = {printer.doprint(step.expr)};"]
    return out


def _witness(steps: list[Any], entry: sp.Symbol, finite: bool = False) -> Any:
    """A mean among ``steps`` that is not finite wherever an entry of ``entry`` is not (NaN and
    inf reach a polynomial of positive degree in it, and any sum of its values), or None.  With
    ``finite``, the polynomial may take other symbols too, each finite where the mean is taken:
    a sum or product with a finite value keeps a NaN or an inf (0 * inf is NaN)."""
    for step in steps:
        symbols = step.expr.free_symbols
        if not step.mean or entry not in symbols or not (finite or symbols <= {entry}):
            continue
        try:
            if sp.Poly(step.expr, *sorted(symbols, key=str)).degree(entry) >= 1:
                return step
        except sp.PolynomialError:
            continue
    return None


def _at_its_own_scale(
    program: Program, printer: Printer, prepare: list[str], body: list[str], upstream: bool
) -> list[str]:
    """The row computed as it is, unscaled, where that is safe, then ``prepare`` (the means of dy),
    ``body`` (the results) and a return: as
    NumPy's fused path decides (`numeric.kernels.rescale.fits`), every statistic finite, the root
    of epsilon and the spread's length scale within 2**-128 .. 2**128, and a mean of x within
    `OFFSET` spreads of 0.  A statistic that is not finite wherever an entry of x is not (a
    witness) stands for a pass checking x; where it is not finite (an entry, or an overflow),
    the row goes on to the scaled path, which checks x entry by entry.  With ``upstream``, dy's
    largest magnitude is checked finite (status 2) and within the range, and each parameter's
    below its top, as NumPy's path holds the vectors it takes."""
    layer = LAYERS[program.key]
    degree = scaling.statistic_degrees(layer)[layer.spread]
    spread = str(layer.spread)
    shifted = [s for s in program.statistics if s.mean and sp.expand(s.expr - X) == 0 and program.centered]
    out = []
    for step in program.statistics:
        if step.vector:
            continue
        if step.mean:
            out += _mean(program, printer, str(step.symbol), step.expr)
        else:
            out += [f"    const double {step.symbol} = {printer.doprint(step.expr)};"]
    length = {1: spread, 2: f"sqrt({spread})"}.get(degree, f"pow({spread}, 1.0 / {degree})")
    out += [f"    const double length_ = {length};"]
    checks = [
        *(f"isfinite({s.symbol})" for s in program.statistics if not s.vector),
        f"LOW <= {ROOT}",
        f"{ROOT} <= HIGH",
        "LOW <= length_",
        "length_ <= HIGH",
        *(f"fabs({s.symbol}) <= OFFSET * length_" for s in shifted),
    ]
    then = [*prepare, *body, "    return 0;"]
    if upstream:
        # dy is taken at its own power-of-two scale (`_upstream`); a parameter enters products
        # with its unscaled entries, within HIGH (NumPy's fits holds each vector it takes so).
        # A float's dy needs no scale: every product of it with the row's values at their own
        # scale is a normal double, so the results are the scaled path's bits; a mean of dy alone
        # then stands for dy's check, as a statistic does for x's (`_witness`), before any write.
        witness = _witness(list(program.means), DY, finite=True) if printer.real == "float" else None
        if witness is not None:
            then = [*prepare, f"    if (!isfinite({witness.symbol})) return 2;", *body, "    return 0;"]
        used = set().union(
            *(expr.free_symbols for _, expr in program.evaluated), *(s.expr.free_symbols for s in program.means)
        )
        scales = [(f"top_{p}", p) for p in program.parameters if p in used]
        tops = [line for name, symbol in scales for line in _largest(name, f"{symbol}[{INDEX}]", printer.kind(symbol))]
        ranges = " && ".join(f"{name} <= HIGH" for name, _ in scales) or "1"
        inside = [f"    if ({ranges}) {{", *(f"    {line}" for line in then), "    }"]
        then = [*_upstream(printer, scaled=witness is None), *tops, *inside]
    out += [f"    if ({' && '.join(checks)}) {{", *(f"    {line}" for line in then), "    }"]
    if _witness(list(program.statistics), X) is None:
        # No statistic stands for x's check: a pass of its own, first.
        check = [*_largest("top", f"{X}[{INDEX}]", printer.real), "    if (!isfinite(top)) return 1;"]
        out = [*check, "    if (LOW <= top && top <= HIGH) {", *(f"    {line}" for line in out), "    }"]
    return ["    {", *(f"    {line}" for line in out), "    }"]


def _upstream(printer: Printer, scaled: bool = True) -> list[str]:
    """Status 2 where an entry of dy is not finite (its largest magnitude, by the bits, is not),
    else dy's scale: a power of two m_dy at least that magnitude, and its inverse; without
    ``scaled``, a scale of 1 and no pass (the caller checks dy)."""
    if not scaled:
        return [f"    const double {UPSTREAM} = 1.0, {INVERSE}{UPSTREAM} = 1.0;"]
    return [
        *_largest(f"top_{DY}", f"{DY}[{INDEX}]", printer.real),
        f"    if (!isfinite(top_{DY})) return 2;",
        f"    const double {UPSTREAM} = power_of_two_above(top_{DY}, 0.0, 1.0);",
        f"    const double {INVERSE}{UPSTREAM} = 1.0 / {UPSTREAM};",
    ]


def _upstream_factors(program: Program, printer: Printer, names: list[str]) -> tuple[list[str], list[str]]:
    """Each gradient's factor back from the scales: m_dy times m**degree on the scaled path (two
    powers of two of half the exponent each, moving the same way: no intermediate leaves the
    range that the result does not), m_dy alone at the row's own scale.  The lines before the
    loop, and the printed factors."""
    if not printer._scaled:
        return [], [f" * {UPSTREAM}" for _ in names]
    lines, factors = [], []
    for name in names:
        degree = program.degrees[name]
        lines += [
            f"    const int k_{name} = ilogb({UPSTREAM}) + {degree} * ilogb({SCALE});",
            f"    const double f_{name} = ldexp(1.0, k_{name} / 2), g_{name} = ldexp(1.0, k_{name} - k_{name} / 2);",
        ]
        factors.append(f" * f_{name} * g_{name}")
    return lines, factors


def _unused(program: Program, names: list[str], exprs: list[sp.Expr]) -> list[str]:
    used = set().union(*(e.free_symbols for e in exprs))
    return [f"    (void){name};" for name in names if sp.Symbol(name, real=True) not in used]


def _functions(program: Program, real: str = "double", suffix: str = "", storage: str = "") -> list[str]:
    """The forward and backward functions of one row, x, dy and the outputs of type ``real``
    (computed in double); the parameters (the same in every row: converted once per batch) and
    their gradients (a batch's sums) are doubles in every variant."""
    centered = next((step.expr for step in program.statistics if step.vector), None)
    params = "".join(f", const double *{p}" for p in program.parameters)
    doubles = frozenset(program.parameters)
    names = [name for name, _ in program.evaluated]
    outputs = f", {real} *{names[0]}" + "".join(f", double *{name}" for name in names[1:])
    statistics = [s.expr for s in program.statistics]
    gradients = [expr for _, expr in program.evaluated]
    means = [(str(step.symbol), step.expr) for step in program.means]
    start = [
        f"    const double {SIZE} = (double){SIZE}_;",
        f"    const double {ROOT} = {Printer(frozenset()).doprint(program.root)};",
    ]

    def prepare(printer: Printer, backward: bool) -> list[str]:
        if not backward:
            return []
        return [
            *(f"    const double {s.symbol} = {printer.doprint(s.expr)};" for s in program.guards),
            *(_means(program, printer, means) if means else []),
        ]

    def results(printer: Printer, backward: bool) -> list[str]:
        degrees = printer._scaled
        if not backward:
            return _loop(
                program, printer, ["y[j]"], [program.output], ["="], [program.degrees["y"]] if degrees else None
            )
        lines, factors = _upstream_factors(program, printer, names)
        return [
            *lines,
            *_loop(
                program,
                printer,
                [f"{name}[j]" for name in names],
                gradients,
                ["=", *("+=" for _ in names[1:])],
                None,
                factors,
            ),
        ]

    def body(backward: bool) -> list[str]:
        plain = Printer(program.vectors, centered, scaled=False, real=real, doubles=doubles)
        printer = Printer(program.vectors, centered, real=real, doubles=doubles)
        # A parameter's gradient is a product of dy with the scaled row: where the root of epsilon
        # dwarfs the row (x / m nearly subnormal), refused (status 3) rather than short of digits.
        apart = (
            [f"    if (top != 0.0 && ilogb({ROOT}) - ilogb(top) > {APART_BINADES}) return 3;"]
            if backward and names[1:]
            else []
        )
        return [
            *start,
            *_at_its_own_scale(program, plain, prepare(plain, backward), results(plain, backward), upstream=backward),
            *_statistics(program, printer),
            *apart,
            *(_upstream(printer) if backward else []),
            *prepare(printer, backward),
            *results(printer, backward),
            "    return 0;",
        ]

    forward = [
        f"{storage}int {program.key}_{program.forward}{suffix}(int {SIZE}_, const {real} *{X}, "
        f"double epsilon{params}, {real} *y)",
        "{",
        *_unused(program, [str(p) for p in program.parameters], [*statistics, program.output]),
        *body(backward=False),
        "}",
    ]
    backward = [
        f"{storage}int {program.key}_backward{suffix}(int {SIZE}_, const {real} *{X}, double epsilon, "
        f"const {real} *{DY}{params}{outputs})",
        "{",
        *_unused(
            program, [str(p) for p in program.parameters], [*statistics, *(s.expr for s in program.means), *gradients]
        ),
        *body(backward=True),
        "}",
    ]
    return [*forward, "", *backward, ""]


def emit(program: Program) -> str:
    """A self-contained C99 source for ``program``."""
    names = [name for name, _ in program.evaluated]
    accumulate = (
        [f" * {', '.join(names[1:])} are added to (zero them before the first row): a batch's sum."]
        if names[1:]
        else []
    )
    notes = [
        "/*",
        f" * {program.key}_{program.forward}: y = the layer of one row x[0 .. n-1].",
        f" * {program.key}_backward: {names[0]} for the upstream gradient {DY} of one row.",
        f" * Each returns 0, or 1 where an entry of x is not finite, 2 where one of {DY} is not",
        " * (and then writes nothing).",
        *accumulate,
        *(
            [
                " * The backward pass returns 3 (and writes nothing) where the root of epsilon is more",
                f" * than 2**{APART_BINADES} times the row's largest |x_i|: the scaled row is then near the",
                f" * subnormals, and {', '.join(names[1:])} (products of dy and it) would lose digits.",
            ]
            if names[1:]
            else []
        ),
        " */",
    ]
    body = [
        "#include <float.h>",
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        "",
        HELPER,
        "",
        *_functions(program),
    ]
    return "\n".join([program.header("// ", "c"), *notes, "", *body])


def _jacobian(program: Program, pairs: tuple[Pair, ...], real: str, suffix: str) -> list[str]:
    """J of one row, at the row's own scale, from the derived eigenstructure: J = rest I +
    sum_d (lambda_d - rest) v v^T / (v.v), as `numeric.kernels.assemble.direct` assembles it, in
    the same order of operations.  Returns 0, or 3 where the row is not one `direct` takes (its
    `SAFE` scales, a mean within `OFFSET` spreads of 0, no vanishing direction): the caller's
    general path takes it.  The batch driver marks each row taken (1) or not (0) and returns how
    many it left."""
    centered = next((step.expr for step in program.statistics if step.vector), None)
    printer = Printer(program.vectors, centered, scaled=False, real=real)
    at_row = Printer(program.vectors, centered, scaled=False, real=real)
    at_row.index = "i"
    shifted = [s for s in program.statistics if s.mean and sp.expand(s.expr - X) == 0 and program.centered]
    lines = [
        f"    const double {SIZE} = (double){SIZE}_;",
        f"    const double {ROOT} = {printer.doprint(program.root)};",
    ]
    for step in program.statistics:
        if step.mean and not step.vector:
            lines += _mean(program, printer, str(step.symbol), step.expr)
        elif not step.vector:
            lines += [f"    const double {step.symbol} = {printer.doprint(step.expr)};"]
    lines += _largest("top", printer.doprint(CENTERED if centered is not None else X))
    checks = [
        *(f"isfinite({s.symbol})" for s in program.statistics if not s.vector),
        *(f"{SAFE_LOW} <= {v} && {v} <= {SAFE_HIGH}" for v in ("top", str(ROOT))),
        *(f"fabs({s.symbol}) <= OFFSET * top" for s in shifted),
    ]
    lines += [f"    if (!({' && '.join(checks)})) return 3;", "    double rest = 0.0;"]
    explicit = [(d, pair) for d, pair in enumerate(pairs) if pair.entry is not None]
    for d, pair in enumerate(pairs):
        lines.append(f"    const double lambda_{d} = {printer.doprint(pair.value)};")
        if pair.entry is None:
            a, b = pair.multiplicity
            lines.append(f"    if ({a} * {SIZE}_ + {b} > 0) rest = lambda_{d};")
    for d, pair in explicit:
        entry = printer.doprint(pair.entry)
        lines += _lanes([], [], [(f"length_{d}", f"({entry})*({entry})")], [])
        lines += [
            f"    if (!(length_{d} > 0.0)) return 3;",  # a vanishing direction joins the rest: the general path
            f"    const double w_{d} = (lambda_{d} - rest) / length_{d};",
        ]

    def outer(column: Printer) -> str:
        return " + ".join(f"a_{d} * ({column.doprint(pair.entry)})" for d, pair in explicit) or "0.0"

    lines += [
        f"    for (int i = 0; i < {SIZE}_; ++i) {{",
        *(f"        const double a_{d} = w_{d} * ({at_row.doprint(pair.entry)});" for d, pair in explicit),
        f"        {real} *row = J + (long)i * {SIZE}_;",
        f"        for (int {INDEX} = 0; {INDEX} < {SIZE}_; ++{INDEX}) row[{INDEX}] = ({real})({outer(printer)});",
        f"        row[i] = ({real})(({outer(at_row)}) + rest);",
        "    }",
        "    return 0;",
    ]
    name = f"{program.key}_jacobian{suffix}"
    return [f"static int {name}(int {SIZE}_, const {real} *{X}, double epsilon, {real} *J)", "{", *lines, "}", ""]


# The types of the library's two variants, by the suffix of their functions' names.
TYPES = {"f64": "double", "f32": "float"}


def library(program: Program, pairs: tuple[Pair, ...] = ()) -> str:
    """`emit`'s source with functions over a batch of rows, for `numeric.kernels.native` to compile.

    For each of float64 and float32 (the rows read and written in their own type, every value
    computed in double), ``{key}_forward_rows_{f64,f32}(rows, n, x, epsilons, epsilon, *parameters, y)``
    and ``{key}_backward_rows_...(rows, n, x, epsilons, epsilon, dy, *parameters, dx, *sums)``:
    row r at x + r n, its epsilon epsilons[r] (double), or epsilon where epsilons is NULL, the parameters
    doubles, the same for every row (a float32 batch's rounded to float32 first, as NumPy's path takes
    them, then widened once per batch rather than per entry).  Each returns -1, or 2 r (2 r + 1) for
    the first row r whose x (dy) holds an entry that is not finite, the rows before it done; a
    backward pass -2 where a row is one it refuses (status 3 of the row's function).
    """
    names = [name for name, _ in program.evaluated]
    parameters = [str(p) for p in program.parameters]
    out = [emit(program), *_functions(program, "float", "_f32", "static ")]
    for suffix, real in TYPES.items():
        if pairs:
            row = "" if suffix == "f64" else f"_{suffix}"
            out += [
                *_jacobian(program, pairs, real, row),
                f"long {program.key}_jacobian_rows_{suffix}(long rows, int {SIZE}_, const {real} *{X}, "
                f"const double *epsilons, double epsilon, {real} *J, unsigned char *taken)",
                "{",
                "    long left = 0;",
                "    for (long r = 0; r < rows; ++r) {",
                f"        taken[r] = {program.key}_jacobian{row}({SIZE}_, {X} + (long)r * {SIZE}_, "
                f"epsilons ? epsilons[r] : epsilon, J + (long)r * {SIZE}_ * {SIZE}_) == 0;",
                "        left += !taken[r];",
                "    }",
                "    return left;",
                "}",
                "",
            ]
        row = "" if suffix == "f64" else f"_{suffix}"
        params = "".join(f", const double *{p}" for p in parameters)
        outputs = f", {real} *{names[0]}" + "".join(f", double *{name}" for name in names[1:])
        head = f"(long rows, int {SIZE}_, const {real} *{X}, const double *epsilons, double epsilon"
        at = f"(long)r * {SIZE}_"
        given = "".join(f", {p}" for p in parameters)
        calls = {
            f"{program.forward}": (f"{head}{params}, {real} *y)", f"{given}, y + {at}"),
            "backward": (
                f"{head}, const {real} *{DY}{params}{outputs})",
                f", {DY} + {at}{given}, {names[0]} + {at}" + "".join(f", {name}" for name in names[1:]),
            ),
        }
        for function, (signature, arguments) in calls.items():
            out += [
                f"long {program.key}_{function}_rows_{suffix}{signature}",
                "{",
                "    for (long r = 0; r < rows; ++r) {",
                f"        const int status = {program.key}_{function}{row}({SIZE}_, {X} + {at}, "
                f"epsilons ? epsilons[r] : epsilon{arguments});",
                "        if (status == 3) return -2;",
                "        if (status) return 2 * r + status - 1;",
                "    }",
                "    return -1;",
                "}",
                "",
            ]
    return "\n".join(out)
