"""A held-out corpus of adversarial claims with their truths: no verdict of the checker may contradict one.

``tests/data/adversarial_claims.toml`` holds ``[[claim]]`` tables (``id``, ``mechanism``, ``claim``,
``layer``, ``assumptions``, ``truth``, ``why``, and ``witness`` or ``undefined_at``), each truth worked
out by hand and checked numerically against an independent 200-digit model of the layer's definition.
A verdict is wrong when

- a ``true`` claim is refuted or called vacuous;
- a ``true-where-defined`` claim is called vacuous, refuted at a point where it is defined, or proved
  without an exclusion (``verdict.excluded``: conditions such as ``"t != 0"``) that is false at its
  ``undefined_at`` point;
- a ``false`` claim is proved or called vacuous;
- a ``vacuous`` claim (its assumptions admit no input) gets any verdict but vacuous.

"supported" and "error" are never wrong for a claim whose assumptions admit an input.  The
mechanisms the entries guard against, each in both directions (a true version and a false one):
one-sided limits taken for two-sided ones, a limit in epsilon that forgets t = 0 or q = 0, epsilon = 0
on the input pattern at t = 0, an upper bound on a nonnegative statistic that drops 0, gamma_max taken
as positive, negative powers that escape the division guard, contradictory assumptions, statistics
assumed on a pattern claim, exact rationals rounded, assumptions against a natural range (epsilon < 0,
n < 2), the zero gain never sampled, assumptions applied after a limit; and classic claims that must
keep being proved or supported.

The whole corpus is checked in the slow tier (``make test-slow``), each claim in a child with a 20 s
budget, several at once; the fast tier checks a few classics.  Every wrong verdict is reported
together, grouped by mechanism, and the verdict counts per truth are printed and written to
``build/adversarial-claims.json`` (``ADVERSARIAL_CLAIMS_RECORD`` names another file), so that progress
can be measured.  ``ADVERSARIAL_CLAIMS_WORKERS`` sets how many claims are checked at once.
"""

from __future__ import annotations

import ast
import json
import math
import multiprocessing
import operator
import os
import time
import tomllib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import mpmath
import pytest

from derivations import LAYERS
from derivations.claims import Claim, check

CORPUS = Path(__file__).resolve().parent / "data" / "adversarial_claims.toml"
RECORD = Path(__file__).resolve().parent.parent / "build" / "adversarial-claims.json"
TRUTHS = ("true", "true-where-defined", "false", "vacuous", "refused")
VERDICTS = ("proved", "refuted", "supported", "vacuous", "error")
TIMEOUT = 20  # seconds per claim
# Classics the fast tier checks: each must stay proved or supported.
SMOKE = ("cls-ln-slope0", "cls-ln-lipschitz", "cls-ln-J-ones", "cls-std-slope0")


def corpus() -> list[dict[str, Any]]:
    with CORPUS.open("rb") as handle:
        return tomllib.load(handle)["claim"]


# --- a tiny evaluator of conditions and points, over numbers ---------------------------------------

_DIGITS = 50
_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_COMPARE = {
    ast.Eq: lambda a, b: _close(a, b),
    ast.NotEq: lambda a, b: not _close(a, b),
    ast.Lt: lambda a, b: a < b and not _close(a, b),
    ast.LtE: lambda a, b: a < b or _close(a, b),
    ast.Gt: lambda a, b: a > b and not _close(a, b),
    ast.GtE: lambda a, b: a > b or _close(a, b),
}
_CALLS = {"sqrt": mpmath.sqrt, "abs": abs, "exp": mpmath.exp, "max": max, "min": min}


class Unknown(Exception):
    """The expression names something the point does not give, or is undefined there."""


def _close(a: Any, b: Any) -> bool:
    if mpmath.isinf(a) or mpmath.isinf(b):
        return a == b
    return abs(a - b) <= mpmath.mpf(10) ** (-_DIGITS + 10) * max(1, abs(a), abs(b))


def evaluate(text: str, point: dict[str, Any]) -> Any:
    """The value of ``text`` (a number, or a condition of the claim language) at ``point``.

    Numbers are mpmath values at 50 digits; a condition is True or False; ``Unknown`` where the
    text names a symbol the point does not give, divides by zero, or uses what this evaluator lacks.
    """
    with mpmath.workdps(_DIGITS):
        try:
            return _value(ast.parse(str(text).strip(), mode="eval").body, point)
        except (ZeroDivisionError, ValueError, TypeError, OverflowError, SyntaxError, RecursionError) as error:
            raise Unknown(str(error)) from None


def _value(node: ast.AST, point: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return mpmath.mpf(node.value) if isinstance(node.value, int) else mpmath.mpf(repr(node.value))
    if isinstance(node, ast.Name):
        if node.id == "oo":
            return mpmath.inf
        if node.id not in point:
            raise Unknown(node.id)
        return point[node.id]
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        # an entry such as gamma[2], by its own key in the point (never by the bare name's value)
        index = _value(node.slice, point)
        name = f"{node.value.id}[{int(index)}]"
        if index != int(index) or name not in point:
            raise Unknown(name)
        return point[name]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        value = _value(node.operand, point)
        return -value if isinstance(node.op, ast.USub) else (not value if isinstance(node.op, ast.Not) else value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left, point), _value(node.right, point)
        if isinstance(node.op, ast.Pow) and left < 0 and right != int(right):
            raise Unknown("a negative number to a fractional power")
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, mpmath.mpc) or mpmath.isnan(result):
            raise Unknown("not a real number")
        return result
    if isinstance(node, ast.Compare):
        left = _value(node.left, point)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _value(comparator, point)
            if type(op) not in _COMPARE or not _COMPARE[type(op)](left, right):
                if type(op) not in _COMPARE:
                    raise Unknown(type(op).__name__)
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = [_value(v, point) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS and not node.keywords:
        arguments = [_value(a, point) for a in node.args]
        if node.func.id == "sqrt" and arguments[0] < 0:
            raise Unknown("the square root of a negative number")
        return _CALLS[node.func.id](*arguments)
    raise Unknown(ast.dump(node)[:60])


def point_of(values: dict[str, Any]) -> dict[str, Any]:
    """A table of the corpus (undefined_at, witness) as numbers; vectors stay lists."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, list):
            out[name] = [evaluate(str(e), {}) for e in value]
        else:
            out[name] = evaluate(str(value), {})
    if "epsilon" in out:
        out.setdefault("eps", out["epsilon"])
    return out


def excludes(excluded: Any, undefined_at: dict[str, Any]) -> bool:
    """Whether some condition of ``excluded`` is false at the point ``undefined_at``.

    A condition naming a symbol the point does not give, or that cannot be evaluated, excludes nothing.
    """
    point = {name: value for name, value in point_of(undefined_at).items() if not isinstance(value, list)}
    for condition in excluded or ():
        try:
            if evaluate(condition, point) is False:
                return True
        except Unknown:
            continue
    return False


def _statistics(layer: str, example: dict[str, Any]) -> dict[str, Any]:
    """The statistics of a counterexample's input x, by the layer's definitions."""
    out: dict[str, Any] = {}
    if "gain" in example:
        out["gamma_max"] = max(abs(mpmath.mpf(g)) for g in example["gain"])
    x = example.get("x")
    if not isinstance(x, list) or not x:
        return out
    with mpmath.workdps(_DIGITS):
        x = [mpmath.mpf(e) for e in x]
        n = len(x)
        mu = mpmath.fsum(x) / n
        q = mpmath.fsum((e - mu) ** 2 for e in x) / n
        r = mpmath.fsum(e**2 for e in x) / n
        k = max(1, math.ceil(n / 16))
        out.update(q=q, r=r, sigma=mpmath.sqrt(r), sigma_u=mpmath.sqrt(n * q / (n - 1)), sigma_b=mpmath.sqrt(q))
        out.update(norm_x=mpmath.sqrt(n * r), r_k=mpmath.fsum(e**2 for e in x[:k]) / k)
    if layer == "prmsnorm":
        out.pop("q", None)
    return out


def at_undefined(counterexample: Any, undefined_at: dict[str, Any], layer: str) -> bool:
    """Whether a refutation's counterexample is a point where the claim is undefined: it agrees with
    ``undefined_at`` on every symbol both give (its statistics computed from its x), and shares one."""
    if not isinstance(counterexample, dict):
        return False
    given: dict[str, Any] = {}
    for name, value in counterexample.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            given["epsilon" if name == "eps" else name] = mpmath.mpf(value)
    for name, value in _statistics(layer, counterexample).items():
        given.setdefault(name, value)
    target = {name: value for name, value in point_of(undefined_at).items() if not isinstance(value, list)}
    shared = [name for name in target if name in given and name != "eps"]
    return bool(shared) and all(abs(given[name] - target[name]) <= 1e-9 * max(1, abs(target[name])) for name in shared)


# --- judging a verdict -----------------------------------------------------------------------------


def judge(entry: dict[str, Any], verdict: str, excluded: Any = (), counterexample: Any = None) -> str | None:
    """Why ``verdict`` contradicts the entry's truth, or None where it does not."""
    truth = entry["truth"]
    if truth == "refused":  # outside what the derivations cover (n = 1): one line, no verdict
        return None if verdict == "error" else f"it should be refused, yet it is {verdict}"
    if truth == "vacuous":
        return None if verdict == "vacuous" else f"its assumptions admit no input, yet it is {verdict}"
    if verdict == "vacuous":
        return f"called vacuous, but its assumptions admit inputs ({truth})"
    if truth == "false":
        return "a false claim proved" if verdict == "proved" else None
    if verdict == "refuted":
        if truth == "true-where-defined" and at_undefined(counterexample, entry["undefined_at"], entry["layer"]):
            return None
        return "a true claim refuted" + (" where it is defined" if truth == "true-where-defined" else "")
    if truth == "true-where-defined" and verdict == "proved" and not excludes(excluded, entry["undefined_at"]):
        return f"proved without excluding {entry['undefined_at']} (excluded: {tuple(excluded or ())})"
    return None


# --- checking claims -------------------------------------------------------------------------------


def verdict_of(entry: dict[str, Any]) -> dict[str, Any]:
    """The checker's verdict on one entry, as plain data (it crosses a process boundary)."""
    start = time.monotonic()
    claim = Claim(entry["claim"], entry["layer"], tuple(entry["assumptions"]), id=entry["id"])
    verdict = check(claim, timeout=TIMEOUT)
    excluded = tuple(str(condition) for condition in getattr(verdict, "excluded", ()) or ())
    return {
        "id": entry["id"],
        "verdict": verdict.verdict,
        "excluded": excluded,
        "counterexample": verdict.counterexample,
        "detail": verdict.detail[:400],
        "seconds": round(time.monotonic() - start, 2),
    }


def verdicts_of(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verdicts on ``entries``, several checked at once (each claim forks its own bounded child)."""
    workers = int(os.environ.get("ADVERSARIAL_CLAIMS_WORKERS", min(4, os.cpu_count() or 1)))
    if workers <= 1 or len(entries) < 8 or not hasattr(os, "fork"):
        return [verdict_of(entry) for entry in entries]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return list(pool.imap(verdict_of, entries, chunksize=1))


def counts(entries: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter[str]] = {truth: Counter() for truth in TRUTHS}
    for entry, result in zip(entries, results, strict=True):
        table[entry["truth"]][result["verdict"]] += 1
    return {truth: {verdict: table[truth][verdict] for verdict in VERDICTS} for truth in TRUTHS}


def decided(entry: dict[str, Any], result: dict[str, Any]) -> bool:
    """Whether a verdict that is not wrong also decides the claim (proved, refuted or vacuous as its truth
    is), rather than leaving it supported or an error."""
    wanted = {
        "true": ("proved",),
        "true-where-defined": ("proved", "refuted"),
        "false": ("refuted",),
        "refused": ("error",),
    }
    return result["verdict"] in wanted.get(entry["truth"], ("vacuous",))


def by_mechanism(entries: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per mechanism: how many entries, wrong verdicts, decided ones and undecided ones."""
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for entry, result in zip(entries, results, strict=True):
        row = table[entry["mechanism"]]
        row["claims"] += 1
        row["wrong" if "wrong" in result else "decided" if decided(entry, result) else "undecided"] += 1
    return {
        name: {k: row[k] for k in ("claims", "wrong", "decided", "undecided")} for name, row in sorted(table.items())
    }


def render_mechanisms(table: dict[str, dict[str, int]]) -> str:
    columns = ("claims", "wrong", "decided", "undecided")
    lines = [f"{'mechanism':30s}" + "".join(f"{c:>11s}" for c in columns)]
    lines += [f"{name:30s}" + "".join(f"{row[c]:11d}" for c in columns) for name, row in table.items()]
    return "\n".join(lines)


def render_counts(table: dict[str, dict[str, int]]) -> str:
    lines = [f"{'truth':20s}" + "".join(f"{v:>11s}" for v in VERDICTS) + f"{'total':>8s}"]
    for truth, row in table.items():
        lines.append(f"{truth:20s}" + "".join(f"{row[v]:11d}" for v in VERDICTS) + f"{sum(row.values()):8d}")
    return "\n".join(lines)


def record(path: Path, payload: dict[str, Any]) -> None:
    """The counts as JSON, written whole or not at all (a temporary file renamed into place)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(payload, indent=1, default=str))
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)  # a read-only checkout: the counts are printed anyway


# --- the tests -------------------------------------------------------------------------------------


def test_the_corpus_is_well_formed():
    entries = corpus()
    assert len(entries) >= 250
    ids = [entry["id"] for entry in entries]
    assert len(ids) == len(set(ids)), sorted(i for i, m in Counter(ids).items() if m > 1)
    directions: dict[str, set[str]] = defaultdict(set)
    for entry in entries:
        where = entry.get("id", entry)
        assert {"id", "mechanism", "claim", "layer", "assumptions", "truth", "why"} <= entry.keys(), where
        assert entry["layer"] in LAYERS, where
        assert entry["truth"] in TRUTHS, where
        assert isinstance(entry["claim"], str), where
        assert entry["claim"].strip(), where
        assert isinstance(entry["assumptions"], list), where
        assert all(isinstance(a, str) and a.strip() for a in entry["assumptions"]), where
        assert isinstance(entry["why"], str), where
        assert len(entry["why"]) >= 3, where
        assert ("witness" in entry) == (entry["truth"] == "false"), where
        assert ("undefined_at" in entry) == (entry["truth"] == "true-where-defined"), where
        if entry["truth"] == "false":
            point_of(entry["witness"])  # every value a number or an exact expression
        if entry["truth"] == "true-where-defined":
            assert entry["undefined_at"], where
            assert all(not isinstance(v, list) for v in entry["undefined_at"].values()), where
            point_of(entry["undefined_at"])
        directions[entry["mechanism"]].add("holds" if entry["truth"].startswith("true") else "fails")
    # every mechanism in both directions: a version that must not be refuted, one that must not be proved
    assert all(found == {"holds", "fails"} for found in directions.values()), dict(directions)
    assert all(i in ids for i in SMOKE)


@pytest.mark.parametrize(
    ("condition", "point", "value"),
    [
        ("t != 0", {"t": 0}, False),
        ("t != 0", {"t": 1}, True),
        ("q > 0", {"q": 0, "t": 0}, False),
        ("gamma_max != 0", {"gamma_max": 0}, False),
        ("epsilon + t**2 > 0", {"t": 0, "epsilon": 0}, False),
        ("sqrt(2)*abs(t) != epsilon", {"t": "1/sqrt(2)", "epsilon": 1}, False),
        ("t != 0 and q != 0", {"t": 1, "q": 0}, False),
        ("0 < t <= 1", {"t": "1/2"}, True),
        ("gamma[2] != 0", {"gamma": 0, "gamma[2]": 0}, False),
    ],
)
def test_a_condition_is_evaluated_at_a_point(condition, point, value):
    assert evaluate(condition, point_of(point)) is value


def test_a_condition_that_names_what_the_point_lacks_excludes_nothing():
    undefined = {"t": 0, "q": 0}
    assert not excludes(("epsilon > 0", "r != 0", "1/t > 0", "n >= 3"), undefined)
    assert excludes(("epsilon > 0", "t**2 > 0"), undefined)
    assert not excludes((), undefined)
    assert not excludes(("gamma[0] != 0", "gamma[2] != 0"), {"gamma": 0})


@pytest.mark.parametrize(
    ("truth", "verdict", "excluded", "counterexample", "wrong"),
    [
        ("true", "proved", (), None, False),
        ("true", "supported", (), None, False),
        ("true", "error", (), None, False),
        ("true", "refuted", (), {"t": 0}, True),
        ("true", "vacuous", (), None, True),
        ("false", "refuted", (), None, False),
        ("false", "supported", (), None, False),
        ("false", "proved", (), None, True),
        ("false", "vacuous", (), None, True),
        ("vacuous", "vacuous", (), None, False),
        ("vacuous", "proved", (), None, True),
        ("vacuous", "error", (), None, True),
        ("refused", "error", (), None, False),
        ("refused", "vacuous", (), None, True),
        ("refused", "proved", (), None, True),
        ("true-where-defined", "proved", ("t != 0",), None, False),
        ("true-where-defined", "proved", (), None, True),
        ("true-where-defined", "proved", ("epsilon > 0",), None, True),
        ("true-where-defined", "refuted", (), {"t": 0.0, "epsilon": 1.0, "x": [-0.0, 0.0, 0.0]}, False),
        ("true-where-defined", "refuted", (), {"t": 1.0, "epsilon": 1.0}, True),
        ("true-where-defined", "refuted", (), {"epsilon": 1.0}, True),
    ],
)
def test_a_verdict_is_judged_against_the_truth(truth, verdict, excluded, counterexample, wrong):
    entry = {"truth": truth, "layer": "layernorm", "undefined_at": {"t": 0, "q": 0}}
    assert (judge(entry, verdict, excluded, counterexample) is not None) is wrong


def test_a_refutation_at_a_constant_input_is_at_q_zero():
    entry = {"truth": "true-where-defined", "layer": "layernorm", "undefined_at": {"q": 0}}
    assert judge(entry, "refuted", (), {"n": 2, "x": [3.0, 3.0], "epsilon": 1.0}) is None
    assert judge(entry, "refuted", (), {"n": 2, "x": [1.0, 3.0], "epsilon": 1.0}) is not None


@pytest.mark.parametrize("scope", ["smoke", pytest.param("all", marks=pytest.mark.slow)])
def test_no_verdict_contradicts_a_truth(scope, capsys):
    entries = corpus()
    if scope == "smoke":
        entries = [entry for entry in entries if entry["id"] in SMOKE]
    start = time.monotonic()
    results = verdicts_of(entries)
    seconds = time.monotonic() - start
    wrong: dict[str, list[str]] = defaultdict(list)
    for entry, result in zip(entries, results, strict=True):
        reason = judge(entry, result["verdict"], result["excluded"], result["counterexample"])
        if scope == "smoke" and result["verdict"] not in ("proved", "supported"):
            reason = reason or "a classic no longer proved or supported"
        if reason is not None:
            result["wrong"] = reason
            wrong[entry["mechanism"]].append(
                f"  {entry['id']} [{entry['layer']}] {entry['claim']!r} assuming {entry['assumptions']}: "
                f"{result['verdict']}: {reason}\n      {result['detail'][:240]}"
            )
    table, mechanisms = counts(entries, results), by_mechanism(entries, results)
    summary = (
        f"{len(entries)} claims checked in {seconds:.0f} s; {sum(map(len, wrong.values()))} wrong verdicts\n"
        f"{render_counts(table)}\n{render_mechanisms(mechanisms)}"
    )
    if scope == "all":
        path = Path(os.environ.get("ADVERSARIAL_CLAIMS_RECORD", RECORD))
        record(path, {"seconds": round(seconds, 1), "counts": table, "mechanisms": mechanisms, "verdicts": results})
    with capsys.disabled():
        print(f"\nadversarial claims ({scope}): {summary}")
    report = "\n".join(
        f"{mechanism} ({len(lines)}):\n" + "\n".join(lines) for mechanism, lines in sorted(wrong.items())
    )
    assert not wrong, f"{summary}\n{report}"
