r"""A layer defined in a TOML file: read, checked field by field, and built as a `Layer`.

The file holds what a definition module holds, as text in the claim
language (parsed by the claims' whitelist, never evaluated)::

    key = "l4norm"
    title = "Normalization by the fourth-power mean"
    output = "x[i] / (r + epsilon)**(1/4)"
    [statistics]
    r = "mean(x[j]**4)"
    [stated]
    slope_at_zero = "epsilon**(-1/4)"

What a definition module writes by hand besides is inferred the way the
built-in layers have it: the pattern (-t, 0, t) at its third coordinate; the
eigen directions of a centering layer (1, c and their complement) or else of
x (x and its complement); the display of x as c + mu and of sqrt(stat +
epsilon) as s; the spread (the last statistic) and, where the spread is not a
mean, the path to the degenerate input.  A file may give patterns and
directions of its own.  Every error is a `DefinitionError` (a `ValueError`)
whose message starts with the field it is about.

>>> layer = loads('key = "l2"\ntitle = "L2"\noutput = "x[i] / sqrt(r + epsilon)"\n'
...               '[statistics]\nr = "mean(x[j]**2)"\n').layer
>>> layer.output, layer.display
(x[i]/sqrt(epsilon + r), ((sqrt(epsilon + r), s),))
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import sympy as sp

from derivations import cache as derivation_cache
from derivations import quantities
from derivations.claims import bounded
from derivations.claims.language import TERM_FUNCTIONS, ClaimError, parse_condition, parse_term
from derivations.core.layer import Direction, Layer, Pattern, Statistic, closed
from derivations.core.proof import DerivationError
from derivations.derive import eigen, regimes, scaling
from derivations.derive.sums import mean, opaque, reduce_sums
from derivations.files import Unreadable, read_capped
from derivations.layers import layernorm, rmsnorm
from derivations.symbols import c, c_vec, epsilon, g, i, j, k, mu, n, ones, q, r, s, sigma, sigma_u, t, tau, v, w, x

MAX_BYTES = 64 << 10
MAX_STATISTICS = 8
MAX_PATTERNS = 4
MAX_DIRECTIONS = 6
MAX_CONSTRAINTS = 4
MAX_TEXT = 200
# Seconds within which the directions a file gives must be proved a decomposition of J.
CHECK_SECONDS = 120.0

# The field that defines y_i is named after the registry's row of the layer's output
# (the one row applied to x); no result is named here but through the registry.
OUTPUT = next(quantity.stem for quantity in quantities.QUANTITIES if quantity.evaluate == "applied")
FIELDS = ("key", "title", OUTPUT, "statistics", "stated", "notes", "spread", "patterns", "directions")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}\Z")
_KEY = re.compile(r"[a-z][a-z0-9_]{0,39}\Z")

# Statistics the built-in layers name, with their assumptions: a file that
# names its statistic r gets the very symbol rmsnorm uses, where the definition
# allows those assumptions.
_CANONICAL = {str(symbol): symbol for symbol in (mu, q, r, sigma, sigma_u)}
# Names that mean something else in the claim language and in the derivations.
_RESERVED = {
    *(str(symbol) for symbol in (t, epsilon, n, s, tau)),
    *("x", "i", "j", "k", "c", "g", "v", "u", "w", "d", "I", "J", "ones", "oo", "y", "gamma", "beta", "gamma_max"),
    *TERM_FUNCTIONS,
    "mean",
    "limit",
    "norm",
    "sum",
    "dot",
}


_T = TypeVar("_T")

# A largest or smallest entry, max(abs(x[j])) say: a statistic that is no mean over the entries.
_EXTREMUM = re.compile(r"\b(?:max|min)\s*\(")
_ENTRY_J = re.compile(r"x\s*\[\s*j\s*\]")
_NOT_A_MEAN = (
    "a max or min over the entries x[j] is not a mean, and is not derived: its derivative by x_k is "
    "the indicator of the entry where it is reached, which no sum over the entries fixes, so no row that "
    "differentiates it (jacobian, eigen, spectral_norm, spectral_bound, vjp, jvp, hvp) could be written "
    "for symbolic n; a statistic is mean(...) over x[j] or a function of earlier ones (mean(x[j]**8)**(1/8) "
    "tends to the largest |x[j]| as the power grows); a clamp max(statistic, epsilon) of the output is derived"
)


def shown(text: str) -> str:
    """``text`` on one line: each character that is not printable escaped."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


class DefinitionError(ValueError):
    """A layer definition that cannot be read or is not a layer the machinery handles; names the field."""

    def __init__(self, message: str) -> None:
        super().__init__(shown(message))


@dataclass(frozen=True)
class Definition:
    """A layer read from a file, with the bytes it was read from (a cache key must include them)."""

    layer: Layer
    source: bytes
    path: Path | None = None


def load(path: str | os.PathLike[str]) -> Definition:
    """Read and check the layer defined in the regular TOML file ``path`` (`read_capped`)."""
    if not isinstance(path, (str, os.PathLike)):
        raise DefinitionError(f"path must be a file name; got {type(path).__name__}")
    where = Path(path)
    try:
        source = read_capped(where, MAX_BYTES)
    except Unreadable as error:
        if str(error).startswith("larger than"):
            raise DefinitionError(f"the file is larger than {MAX_BYTES >> 10} KiB") from None
        raise DefinitionError(f"cannot read the file: {error}") from None
    except OSError as error:  # a directory: opened, then refused by the file object
        raise DefinitionError(f"cannot read the file: {error.strerror or error}") from None
    return _parse(source, where)


def loads(text: str | bytes) -> Definition:
    """Check the layer defined by TOML ``text``."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if not isinstance(text, bytes):
        raise DefinitionError(f"text must be TOML text; got {type(text).__name__}")
    return _parse(text, None)


def _parse(source: bytes, where: Path | None) -> Definition:
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DefinitionError(f"the file is not UTF-8 text (byte {error.start})") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DefinitionError(f"the file is not valid TOML: {error}") from None
    found = Definition(_layer(table), source, where)
    # From now on this process's derivation cache entries are keyed by the file's bytes
    # too: a user layer's results are never served to another file under the same key.
    derivation_cache.include(source)
    return found


def derive_within(layer: Layer, seconds: float, work: Callable[[], _T] | None = None) -> _T | None:
    """``work()`` (by default: every formula of ``layer``, its stated forms proved) in a child
    process, within ``seconds`` and the claims' memory bound, after `_homogeneous`; its result,
    or a `DefinitionError`."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 < seconds <= 3600:
        raise DefinitionError(f"timeout must be a number of seconds in (0, 3600]; got {seconds!r}")

    def checked() -> _T | None:
        _homogeneous(layer)
        if work is not None:
            return work()
        quantities.formulas(layer)
        return None

    try:
        return bounded.run(checked, seconds)
    except bounded.Exceeded as error:
        reason = str(error)
        if reason.startswith("undecided within"):
            raise DefinitionError(
                f"{layer.key}: not derived within {reason.removeprefix('undecided within ')}"
            ) from None
        # The child's own refusal is named once, by the kind the caller gets.
        reason = reason.removeprefix("undecided: ").removeprefix(f"{DefinitionError.__name__}: ")
        raise DefinitionError(f"{layer.key}: cannot be derived: {reason}") from None


# --- reading fields ---------------------------------------------------------


def _text(table: Mapping[str, Any], field: str, required: bool = True, limit: int = MAX_TEXT) -> str | None:
    if field not in table:
        if required:
            raise DefinitionError(f"{field}: missing; it is required")
        return None
    value = table[field]
    if not isinstance(value, str):
        raise DefinitionError(f"{field}: must be a string; got {_toml_type(value)}")
    if not value.strip() or len(value) > limit or not value.isprintable():
        raise DefinitionError(f"{field}: must be one non-empty printable line of at most {limit} characters")
    return value


def _table(table: Mapping[str, Any], field: str) -> dict[str, Any]:
    value = table.get(field, {})
    if not isinstance(value, dict):
        raise DefinitionError(f"{field}: must be a table; got {_toml_type(value)}")
    return value


def _toml_type(value: object) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a float", list: "an array", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def _term(field: str, text: object, names: Mapping[str, sp.Expr], **options: Any) -> sp.Expr:
    if not isinstance(text, str):
        raise DefinitionError(f"{field}: must be a string; got {_toml_type(text)}")
    try:
        return parse_term(text, names, **options)
    except ClaimError as error:
        raise DefinitionError(f"{field}: {error}") from None


def _names_in(text: str) -> set[str]:
    """The bare names a text uses (after it failed to build: for a better message)."""
    try:
        return {node.id for node in ast.walk(ast.parse(text.strip(), mode="eval")) if isinstance(node, ast.Name)}
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return set()


# --- the layer ---------------------------------------------------------------


def _layer(table: dict[str, Any]) -> Layer:
    unknown = sorted(set(table) - set(FIELDS))
    if unknown:
        raise DefinitionError(f"{unknown[0]}: unknown field; the fields are {', '.join(FIELDS)}")
    key = _text(table, "key")
    assert key is not None
    if not _KEY.match(key):
        raise DefinitionError(f"key: must be lower case letters, digits and _, starting with a letter; got {key!r}")
    title = _text(table, "title")
    assert title is not None
    statistics = _statistics(_table(table, "statistics"))
    symbols = {str(stat.symbol): stat.symbol for stat in statistics}
    output = _output(_text(table, OUTPUT, limit=2000) or "", symbols)
    if output.atoms(sp.Max, sp.Min):
        layer: Layer = _clamped(table, key, title, statistics, output)
    else:
        layer = _smooth(table, key, title, statistics, output)
    results = quantities.names(layer)
    clash = next((str(stat.symbol) for stat in statistics if str(stat.symbol) in results), None)
    if clash is not None:
        raise DefinitionError(f"statistics.{clash}: the name of a result; choose another name")
    stated = _stated(_table(table, "stated"), layer, results)
    notes = _notes(_table(table, "notes"), results)
    layer = dataclasses.replace(layer, stated=stated, notes=notes)
    if table.get("directions") is not None:
        _decomposing(layer)
    return layer


def _smooth(
    table: Mapping[str, Any], key: str, title: str, statistics: tuple[Statistic, ...], output: sp.Expr
) -> Layer:
    """A layer with no clamp, with the statistics its derivations need (`_closed`) and, unless the file
    gives directions, the default ones, whose complement is orthogonal to what J's terms are (`_complement`)."""
    spread = _spread(table, statistics)
    center = _center(statistics)
    layer = Layer(
        key=key,
        title=title,
        statistics=statistics,
        output=output,
        patterns=_patterns(table.get("patterns")),
        directions=(),
        display=(),
        spread=spread,
    )
    centered = center is not None and scaling.translation_invariant(layer)
    display = _display(layer, center if centered else None)
    symbols = {str(stat.symbol): stat.symbol for stat in statistics}
    layer = dataclasses.replace(
        layer,
        display=display,
        directions=_directions(table.get("directions"), symbols, center if centered else None),
        approach=_approach(layer, center if centered else None),
    )
    layer = _closed(layer, center)
    if table.get("directions") is None:
        layer = dataclasses.replace(layer, directions=_complement(layer))
    return layer


def _clamped(
    table: Mapping[str, Any],
    key: str,
    title: str,
    statistics: tuple[Statistic, ...],
    output: sp.Expr,
) -> Layer:
    """A layer with one max(statistic, floor): its two regimes, by the machinery of the built-in
    clamped layers (`derivations.derive.regimes.clamped`); the clamped statistic is the spread."""
    clamps = output.atoms(sp.Max, sp.Min)
    form = "one max(statistic, floor), the floor epsilon or a multiple of it, as x[i] / max(norm, epsilon)"
    if len(clamps) != 1 or not isinstance(next(iter(clamps)), sp.Max) or len(next(iter(clamps)).args) != 2:
        raise DefinitionError(f"{OUTPUT}: a clamp is derived as {form}; got {output}")
    if _center(statistics) is not None:
        # Its eigenvectors would be 1, c and their complement, which the regimes machinery does not take.
        raise DefinitionError(f"{OUTPUT}: a clamp is derived for a layer with no mean statistic (as torch's normalize)")
    if table.get("directions") is not None:
        raise DefinitionError("directions: a clamp's are x and its complement, derived in each regime; give none")
    (clamp,) = clamps
    floors = [a for a in clamp.args if not a.free_symbols & {stat.symbol for stat in statistics}]
    ratio = floors[0] / epsilon if len(floors) == 1 else sp.nan
    if not (ratio.is_number and ratio.is_positive):
        # A floor in n would stay symbolic on a pattern of fixed size; one in a power of epsilon
        # would break the layer's scaling in epsilon.
        raise DefinitionError(
            f"{OUTPUT}: the floor of a clamp must be epsilon or a positive multiple of it; got {clamp}"
        )
    unclamped = Layer(key, title, statistics, output, (), (), (), statistics[-1].symbol)
    try:
        layer = regimes.clamped(
            key=key,
            title=title,
            statistics=_closed(unclamped, None).statistics,
            definition=output,
            patterns=_patterns(table.get("patterns")),
            directions=rmsnorm.RAW_DIRECTIONS,  # x and its complement, as `_directions` gives a layer not centred
        )
    except (ValueError, DerivationError) as error:
        raise DefinitionError(f"{OUTPUT}: a clamp is derived as {form} ({error})") from None
    given = _text(table, "spread", required=False)
    if given is not None and given != str(layer.spread):
        raise DefinitionError(
            f"spread: a clamped layer's spread is its clamped statistic {layer.spread}; got {given!r}"
        )
    return layer


def _statistics(table: dict[str, Any]) -> tuple[Statistic, ...]:
    if not table:
        raise DefinitionError('statistics: missing; give at least one, such as r = "mean(x[j]**2)"')
    if len(table) > MAX_STATISTICS:
        raise DefinitionError(f"statistics: at most {MAX_STATISTICS} are accepted; got {len(table)}")
    names = list(table)
    out: list[Statistic] = []
    for position, name in enumerate(names):
        field = f"statistics.{name}"
        if not _NAME.match(name) or name in _RESERVED:
            raise DefinitionError(
                f"{field}: not a usable statistic name (a letter, then letters, digits, _; "
                f"not a symbol, function or result of the language)"
            )
        text = table[name]
        if not isinstance(text, str):
            raise DefinitionError(f"{field}: must be a string; got {_toml_type(text)}")
        earlier = {str(stat.symbol): stat.symbol for stat in out}
        try:
            out.append(_statistic(field, name, text, earlier))
        except DefinitionError:
            used = _names_in(text)
            if name in used:
                raise DefinitionError(
                    f"{field}: refers to itself; a statistic is a mean over j or a function of earlier statistics"
                ) from None
            later = [other for other in names[position + 1 :] if other in used]
            if later:
                raise DefinitionError(
                    f"{field}: refers to {later[0]!r}, defined after it; statistics are read in order"
                ) from None
            raise
    return tuple(out)


def _statistic(field: str, name: str, text: str, earlier: dict[str, sp.Symbol]) -> Statistic:
    means = {stat for stat in earlier.values()}
    body = _mean_argument(text)
    if body is not None:
        summand = _term(field, body, {**earlier, "n": n}, entries={"x": {"j": x[j]}})
        if x[j] not in summand.atoms(sp.Indexed):
            raise DefinitionError(f"{field}: the mean's summand must use x[j]")
        return Statistic(_symbol(name, summand), summand, f"mean of {summand} over the entries")
    if _extremum_over_entries(text):
        raise DefinitionError(f"{field}: {_NOT_A_MEAN}")
    if "x" in _names_in(text):  # x or x[j] outside a mean
        raise DefinitionError(
            f"{field}: x enters a statistic through a mean over its entries: write x[j] inside mean(...), "
            'as in mean(x[j]**2); a statistic that is not a mean is a function of earlier ones, as in "sqrt(q)"'
        )
    value = _term(field, text, {**earlier, "n": n})
    bases = value.free_symbols & means
    if not bases:
        raise DefinitionError(f"{field}: must be mean(...) over x[j], or a function of earlier statistics")
    if len(bases) > 1:
        raise DefinitionError(
            f"{field}: a statistic that is not a mean must be a function of one earlier "
            f"statistic; it uses {', '.join(sorted(map(str, bases)))}"
        )
    return Statistic(_symbol(name, value), value, f"{value}", mean=False)


def _extremum_over_entries(text: str) -> bool:
    """Whether ``text`` (not a mean) takes a max or min of an expression in x[j]: over the entries."""
    for found in _EXTREMUM.finditer(text):
        depth, end = 1, found.end()
        while end < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        if _ENTRY_J.search(text[found.end() : end]):
            return True
    return False


def _mean_argument(text: str) -> str | None:
    """The text inside ``mean( ... )`` when the whole statistic is one mean, else None."""
    stripped = text.strip()
    if not (stripped.startswith("mean(") and stripped.endswith(")")):
        return None
    inner = stripped[len("mean(") : -1]
    # mean(a) * mean(b) also starts and ends so: the parentheses must match as one call.
    depth = 0
    for char in inner:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return None
    return inner if depth == 0 else None


def _symbol(name: str, definition: sp.Expr) -> sp.Symbol:
    """The statistic's symbol; nonnegative where its definition is, for every n >= 2."""
    at_least_two = sp.Dummy("m", integer=True, nonnegative=True) + 2
    nonnegative = bool(definition.xreplace({n: at_least_two}).is_nonnegative)
    canonical = _CANONICAL.get(name)
    if canonical is not None and (nonnegative or not canonical.is_nonnegative):
        return canonical
    return sp.Symbol(name, nonnegative=True) if nonnegative else sp.Symbol(name, real=True)


def _output(text: str, statistics: Mapping[str, sp.Symbol]) -> sp.Expr:
    if _extremum_over_entries(text):
        raise DefinitionError(f"{OUTPUT}: {_NOT_A_MEAN}")
    output = _term(OUTPUT, text, {**statistics, "epsilon": epsilon, "n": n}, entries={"x": {"i": x[i]}})
    if x[i] not in output.atoms(sp.Indexed):
        raise DefinitionError(f"{OUTPUT}: must use x[i], the entry it normalizes")
    if epsilon not in output.free_symbols:
        raise DefinitionError(f"{OUTPUT}: must use epsilon")
    return output


def _closed(layer: Layer, center: sp.Symbol | None) -> Layer:
    """``layer`` with the statistics its derivations need besides its own (`derivations.core.layer.closed`):
    central moments about ``center`` where it centers, power means where it does not."""
    try:
        return closed(layer, center, taken=_RESERVED | _CANONICAL.keys())
    except DerivationError as error:
        raise DefinitionError(f"statistics: {error}") from None


def _complement(layer: Layer) -> tuple[Direction, ...]:
    """The default directions of ``layer``, their complement orthogonal to J's right factors.

    J_ik = a delta_ik + sum over the means s the output depends on of dy_i/ds * ds/dx_k, that is
    a I + sum_u u v_u^T, each v_u gathering the gradients ds/dx_k whose dy_i/ds is along u; so J w = a w
    for every w orthogonal to each v_u.  Those are the default's (orthogonal to x, or to 1 and c) for
    a built-in layer; a fourth-power mean's is x**3.  A constant part of a v_u is dropped where w is
    orthogonal to 1 already.  The default is kept where the v_u are not as many as the other directions.
    """
    *explicit, complement = layer.directions
    try:
        vectors, parts = _right_factors(layer)
    except DerivationError:
        return layer.directions
    at_k = (x[k], c[k])
    constant = any(not vector.has(*at_k) for vector in vectors)
    entries: list[sp.Expr] = [sp.Integer(1)] if constant else []
    for vector in vectors:
        varying = sp.Add(*(term for term in sp.Add.make_args(vector) if term.has(*at_k))) if constant else vector
        if varying != 0:
            entry = sp.factor(varying).as_independent(*at_k, as_Add=False)[1].xreplace(parts)
            if not any(_proportional(entry, other) for other in entries):
                entries.append(entry)
    defaults = [sp.cancel(layer.to_display(constraint) / w[k]) for constraint in complement.constraints]
    if not complement.complement or len(entries) != len(defaults) or len(entries) != len(explicit):
        return layer.directions
    if all(any(_proportional(entry, default) for default in defaults) for entry in entries):
        return layer.directions
    shown = " and to ".join(
        "1" if entry == 1 else f"the vector of entries {entry.xreplace({k: sp.Symbol('k')})}" for entry in entries
    )
    constraints = tuple(sp.factor(_undisplayed(layer, entry)) * w[k] for entry in entries)
    orthogonal = Direction(complement.name, w[k], f"every w orthogonal to {shown}", constraints, True)
    return (*explicit, orthogonal)


def _right_factors(layer: Layer) -> tuple[list[sp.Expr], dict[sp.Dummy, sp.Expr]]:
    """The v_u of J = a I + sum_u u v_u^T (`_complement`), each at k in display notation (c[k] for a
    centered layer), none zero; each factor free of x_i named by a dummy (`opaque`), and those names."""
    output = layer.output
    for stat in reversed(layer.statistics):  # a function of means written in them
        if not stat.mean:
            output = output.xreplace({stat.symbol: stat.summand})
    groups: dict[sp.Expr, sp.Expr] = {}
    parts: dict[sp.Dummy, sp.Expr] = {}
    for stat in sorted(_output_means(layer), key=str):
        gradient = layer.express(reduce_sums(sp.diff(layer.as_sums(stat), x[k])))
        shape, named = opaque(layer.to_display(sp.diff(output, stat)), x[i], c[i])
        parts.update(named)
        for term in sp.Add.make_args(sp.expand(shape)):
            scalar, at_i = term.as_independent(x[i], c[i], as_Add=False)
            groups[at_i] = groups.get(at_i, sp.Integer(0)) + scalar * gradient
    vectors = (sp.expand(layer.to_display(vector)) for vector in groups.values())
    return [vector for vector in vectors if vector != 0], parts


def _undisplayed(layer: Layer, expr: sp.Expr) -> sp.Expr:
    """``expr``, written in the display notation (`Layer.to_display`), in x and the statistics again."""
    for old, new in reversed(layer.display):
        if isinstance(new, sp.Symbol):  # s for sqrt(q + epsilon)
            expr = expr.xreplace({new: old})
        else:  # c[k] + mu for x[k]
            (centered,) = (atom for atom in new.atoms(sp.Indexed) if atom.base == c)
            expr = expr.xreplace({centered: old - (new - centered)})
    return expr


def _output_means(layer: Layer) -> set[sp.Symbol]:
    """The mean statistics the output depends on, directly or through a function of them."""
    used = set(layer.output.free_symbols)
    for stat in reversed(layer.statistics):
        if not stat.mean and stat.symbol in used:
            used |= stat.summand.free_symbols
    return {stat.symbol for stat in layer.statistics if stat.mean and stat.symbol in used}


def _proportional(one: sp.Expr, other: sp.Expr) -> bool:
    ratio = sp.cancel(one / other)
    return not ratio.has(x[k], c[k])


def _spread(table: Mapping[str, Any], statistics: tuple[Statistic, ...]) -> sp.Symbol:
    name = _text(table, "spread", required=False)
    if name is None:
        return statistics[-1].symbol
    for stat in statistics:
        if str(stat.symbol) == name:
            return stat.symbol
    raise DefinitionError(
        f"spread: must name a statistic ({', '.join(str(s.symbol) for s in statistics)}); got {name!r}"
    )


def _center(statistics: tuple[Statistic, ...]) -> sp.Symbol | None:
    """The statistic that is the mean of the entries, if there is one."""
    return next((stat.symbol for stat in statistics if stat.mean and stat.summand == x[j]), None)


def _display(layer: Layer, center: sp.Symbol | None) -> tuple[tuple[sp.Expr, sp.Expr], ...]:
    shown: list[tuple[sp.Expr, sp.Expr]] = []
    if center is not None:
        shown += [(x[i], c[i] + center), (x[k], c[k] + center)]
    powers = layer.output.atoms(sp.Pow)
    for stat in layer.statistics:
        root = sp.sqrt(stat.symbol + epsilon)
        # sqrt(stat + epsilon), or its reciprocal, is the scale s the statements write.
        if stat.mean and any(p.base == root.base and abs(p.exp) == sp.S.Half for p in powers):
            shown.append((root, s))
            break
    return tuple(shown)


def _approach(layer: Layer, center: sp.Symbol | None) -> dict[sp.Expr, sp.Expr]:
    """Inputs that tend to the degenerate one, where the spread is not a smooth mean."""
    spread = next(stat for stat in layer.statistics if stat.symbol == layer.spread)
    if spread.mean:
        return {}
    try:
        degree = scaling.statistic_degrees(layer)[layer.spread]
    except Exception as error:
        raise DefinitionError(f"spread: {layer.spread} does not scale with the input as a power ({error})") from None
    if center is not None:
        path: dict[sp.Expr, sp.Expr] = {x[i]: center + tau * c[i], x[k]: center + tau * c[k]}
    else:
        path = {x[i]: tau * x[i], x[k]: tau * x[k]}
    return {**path, layer.spread: tau**degree * layer.spread}


def _homogeneous(layer: Layer) -> None:
    """Refuse an output that no scaling of epsilon like x**e makes homogeneous of an integer degree
    (`derivations.derive.scaling.epsilon_degree`, what the numerics rescale by), saying what it is instead.
    Run first by `derive_within`, within its budget: the ratios of a large output are slow to cancel."""
    if type(layer) is not Layer:  # a clamp's regimes scale by their own rules
        return
    try:
        scaling.epsilon_degree(layer)
        return
    except DerivationError:
        pass
    try:
        statistics = {stat: scaling.m**d * stat for stat, d in scaling.statistic_degrees(layer).items()}
    except DerivationError as error:
        raise DefinitionError(f"statistics: {error}") from None
    for e in (-1, *range(1, 9)):
        scaled = layer.output.xreplace({x[i]: scaling.m * x[i], epsilon: scaling.m**e * epsilon, **statistics})
        ratio = sp.powsimp(sp.cancel(sp.together(scaled / layer.output)), force=True)
        if isinstance(ratio, sp.Pow) and ratio.base == scaling.m and ratio.exp.is_Rational:
            raise DefinitionError(
                f"{OUTPUT}: homogeneous of degree {ratio.exp} when epsilon scales like x**{e}; "
                "the numerics rescale by an integer degree"
            )
    raise DefinitionError(
        f"{OUTPUT}: homogeneous for no scaling of epsilon like x**e, e = -1 or 1 .. 8; "
        "epsilon must set the length scale of x, as in x[i] / sqrt(r + epsilon)"
    )


def _patterns(value: object) -> tuple[Pattern, ...]:
    if value is None:
        return (Pattern((-t, sp.Integer(0), t), coordinate=2),)
    if not isinstance(value, list) or not value or len(value) > MAX_PATTERNS:
        raise DefinitionError(f"patterns: must be an array of 1 to {MAX_PATTERNS} tables ([[patterns]])")
    out: list[Pattern] = []
    for number, entry in enumerate(value):
        out.append(_pattern(f"patterns[{number}]", number, entry, {p.suffix for p in out}))
    if out[0].suffix:
        raise DefinitionError("patterns[0].suffix: the first pattern has no suffix")
    return tuple(out)


def _pattern(field: str, number: int, entry: object, suffixes: set[str]) -> Pattern:
    """The pattern of one [[patterns]] table, the ``number``-th, whose suffix is not in ``suffixes``."""
    if not isinstance(entry, dict):
        raise DefinitionError(f"{field}: must be a table with values, coordinate and suffix")
    extra = sorted(set(entry) - {"values", "coordinate", "suffix"})
    if extra:
        raise DefinitionError(f"{field}.{extra[0]}: unknown field; a pattern has values, coordinate, suffix")
    values = entry.get("values")
    if not isinstance(values, list) or not 2 <= len(values) <= 8:
        raise DefinitionError(f"{field}.values: must be an array of 2 to 8 expressions in t")
    parsed = tuple(_term(f"{field}.values[{m}]", text, {"t": t}) for m, text in enumerate(values))
    coordinate = entry.get("coordinate", 2 if len(values) > 2 else len(values) - 1)
    if isinstance(coordinate, bool) or not isinstance(coordinate, int) or not 0 <= coordinate < len(values):
        raise DefinitionError(f"{field}.coordinate: must be an integer from 0 to {len(values) - 1} (0 is the first)")
    suffix = entry.get("suffix", "" if number == 0 else f"_pattern{number}")
    if not isinstance(suffix, str) or not re.fullmatch(r"(_[a-z0-9]+)*", suffix) or len(suffix) > 20:
        raise DefinitionError(f'{field}.suffix: must be empty or like "_uniform", of at most 20 characters')
    if suffix in suffixes:
        raise DefinitionError(f"{field}.suffix: {suffix!r} is used by an earlier pattern")
    if not any(value.has(t) for value in parsed):
        raise DefinitionError(f"{field}.values: must use t")
    return Pattern(parsed, coordinate=coordinate, suffix=suffix)


def _directions(value: object, statistics: Mapping[str, sp.Symbol], center: sp.Symbol | None) -> tuple[Direction, ...]:
    if value is None:
        return _default_directions(center)
    if not isinstance(value, list) or not value or len(value) > MAX_DIRECTIONS:
        raise DefinitionError(f"directions: must be an array of 1 to {MAX_DIRECTIONS} tables ([[directions]])")
    names = {**statistics, "n": n}
    out: list[Direction] = []
    for number, entry in enumerate(value):
        out.append(_direction(f"directions[{number}]", entry, names, {d.name for d in out}))
    return tuple(out)


def _default_directions(center: sp.Symbol | None) -> tuple[Direction, ...]:
    """RMSNorm's directions for an uncentered layer, LayerNorm's about ``center`` for a centered one."""
    if center is None:
        return rmsnorm.RAW_DIRECTIONS
    if center == mu:
        return layernorm.CENTERED_DIRECTIONS
    return tuple(
        Direction(
            d.name,
            d.entry.xreplace({mu: center}),
            d.meaning,
            tuple(e.xreplace({mu: center}) for e in d.constraints),
            d.complement,
        )
        for d in layernorm.CENTERED_DIRECTIONS
    )


def _direction(field: str, entry: object, names: Mapping[str, sp.Expr], taken: set[str]) -> Direction:
    """The direction of one [[directions]] table, whose name is not in ``taken``."""
    if not isinstance(entry, dict):
        raise DefinitionError(f"{field}: must be a table with name, entry, meaning, constraints, complement")
    extra = sorted(set(entry) - {"name", "entry", "meaning", "constraints", "complement"})
    if extra:
        raise DefinitionError(f"{field}.{extra[0]}: unknown field")
    name = _text(entry, "name")
    assert name is not None
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,19}", name) or name in taken:
        raise DefinitionError(f'{field}.name: must be a new lower-case name such as "x"; got {name!r}')
    complement = entry.get("complement", False)
    if not isinstance(complement, bool):
        raise DefinitionError(f"{field}.complement: must be true or false")
    vectors = {"x": {"k": x[k]}, **({"w": {"k": w[k]}} if complement else {})}
    text = entry.get("entry", "w[k]" if complement else None)
    if text is None:
        raise DefinitionError(f'{field}.entry: missing; the direction\'s entry at k, such as "x[k]"')
    at_k = _term(f"{field}.entry", text, names, entries=vectors)
    constraints = entry.get("constraints", [])
    if not isinstance(constraints, list) or len(constraints) > MAX_CONSTRAINTS:
        raise DefinitionError(f"{field}.constraints: must be an array of at most {MAX_CONSTRAINTS} expressions")
    parsed = tuple(
        _term(f"{field}.constraints[{m}]", text, names, entries={"x": {"k": x[k]}, "w": {"k": w[k]}})
        for m, text in enumerate(constraints)
    )
    if complement and (at_k != w[k] or not parsed):
        raise DefinitionError(f'{field}: a complement has entry w[k] and constraints such as "x[k] * w[k]"')
    meaning = _text(entry, "meaning", required=False) or f"the vector with entries {at_k.xreplace({k: sp.Symbol('k')})}"
    return Direction(name, at_k, meaning, parsed, complement)


def _decomposing(layer: Layer) -> None:
    """Refuse directions that are not a whole eigen-decomposition of J (`derivations.derive.eigen.complete`),
    naming the one at fault; proved in a child process within `CHECK_SECONDS`."""

    def fault() -> tuple[int | None, str] | None:
        try:
            eigen.complete(layer)
        except eigen.Incomplete as error:
            at = next((m for m, d in enumerate(layer.directions) if d is error.direction), None)
            return at, str(error)
        return None

    try:
        found = bounded.run(fault, CHECK_SECONDS)
    except bounded.Exceeded as error:
        raise DefinitionError(f"directions: not proved eigenvectors of J: {error}") from None
    if found is not None:
        at, reason = found
        field = "directions" if at is None else f'directions[{at}] "{layer.directions[at].name}"'
        raise DefinitionError(f"{field}: {reason}")


def _stated(table: dict[str, Any], layer: Layer, results: Mapping[str, Any]) -> dict[str, sp.Basic]:
    names: dict[str, sp.Expr] = {str(stat.symbol): stat.symbol for stat in layer.statistics}
    names.update(
        {"t": t, "epsilon": epsilon, "n": n, "I": sp.Identity(n), "ones": ones, "x": sp.MatrixSymbol("x", n, 1)}
    )
    if any(new == s for _, new in layer.display):
        names["s"] = s
    if any(new.has(c) for _, new in layer.display):
        names["c"] = c_vec
    vectors = {base: {"j": base_[j], "k": base_[k]} for base, base_ in (("x", x), ("g", g), ("v", v), ("c", c))}
    functions: dict[str, Callable[..., sp.Expr]] = {**TERM_FUNCTIONS, "mean": lambda e: mean(e, j)}
    out: dict[str, sp.Basic] = {}
    for name, value in table.items():
        field = f"stated.{name}"
        if name not in results:
            raise DefinitionError(f"{field}: not a result of this layer; the results are {', '.join(results)}")
        if isinstance(value, list):
            out[name] = _cases(field, value, names, vectors, functions)
        else:
            out[name] = _term(field, value, names, entries=vectors, functions=functions)
    return out


def _cases(field: str, value: list[Any], names: Mapping[str, sp.Expr], vectors: Any, functions: Any) -> sp.Piecewise:
    """A form stated by cases in n: [["value", "condition"], ...]."""
    if not 1 <= len(value) <= 4:
        raise DefinitionError(f'{field}: cases must be an array of 1 to 4 ["value", "condition"] pairs')
    pieces = []
    for number, case in enumerate(value):
        if not (isinstance(case, list) and len(case) == 2 and all(isinstance(part, str) for part in case)):
            raise DefinitionError(f'{field}[{number}]: must be a pair ["value", "condition such as n >= 3"]')
        expr = _term(f"{field}[{number}]", case[0], names, entries=vectors, functions=functions)
        try:
            condition = parse_condition(case[1], {"n": n}).as_sympy()
        except ClaimError as error:
            raise DefinitionError(f"{field}[{number}]: {error}") from None
        pieces.append((expr, condition))
    return sp.Piecewise(*pieces)


def _notes(table: dict[str, Any], results: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for name in table:
        if name not in results:
            raise DefinitionError(f"notes.{name}: not a result of this layer; the results are {', '.join(results)}")
        out[name] = _text(table, name, limit=MAX_TEXT) or ""
    return out
