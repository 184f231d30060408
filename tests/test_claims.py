"""The claims checker: safe parsing, verdicts with counterexamples, files and exit status."""

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from docs_text import docs_words

import numeric
from derivations.__main__ import main
from derivations.claims import Claim, ClaimError, check, load, parse, vocabulary
from derivations.claims.confirm import confirm

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "claims.toml"

HOSTILE = [
    "__import__('os').system('touch /tmp/claim-was-executed') == 1",
    "().__class__.__bases__",
    "().__class__.__bases__[0].__subclasses__() == 1",
    "x" * 10**6,
    "(" * 100_000 + "1" + ")" * 100_000 + " == 1",
    "[" * 1000 + "]" * 1000,
    "lambda: 0 == 1",
    "[c for c in 'abc'] == 1",
    "{k: 1 for k in 'ab'} == 1",
    "slope_at_zero.__class__ == 1",
    "slope_at_zero.func == 1",
    "open('/etc/passwd') == 1",
    "eval('1') == 1",
    "exec('import os') == 1",
    "getattr(slope_at_zero, 'x') == 1",
    "globals() == 1",
    "slope_at_zero[0] == 1",
    "'a' == 'a'",
    "f'{1}' == 1",
    "epsilon ^ 2 == 1",
    "9**9**9**9 == 1",
    "((((2**64)**64)**64)**64)**64 == 1",
    "exp(exp(exp(exp(exp(100))))) == 1",
    "1" * 60 + " == 1",
    "1e999 == 1",
    "sqrt(epsilon, epsilon) == 1",
    "sqrt(x=1) == 1",
    "sqrt(*[1]) == 1",
    "a := 1",
    "slope_at_zero == 1; import os",
    "1 if 1 else 2 == 1",
    "(yield) == 1",
    "await epsilon == 1",
    "+".join(["t"] * 400) + " == 1",
    "\x00 == 1",
    "slope_at_zero == 1 == 1",
    "",
]


class _Timeout(Exception):
    pass


def _bounded(seconds):
    def alarm(signum, frame):
        raise _Timeout

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)


@pytest.fixture
def words():
    return vocabulary("layernorm")


@pytest.mark.parametrize("text", HOSTILE, ids=[f"hostile-{i}" for i in range(len(HOSTILE))])
def test_hostile_claims_get_a_clean_error_and_run_nothing(text, words, monkeypatch):
    ran = []
    monkeypatch.setattr(os, "system", lambda command: ran.append(command))
    # A hang detector, not a speed target: parsing must not get stuck.
    _bounded(20)
    try:
        with pytest.raises(ClaimError) as error:
            parse(text, words.names(), {"t": words.symbols["t"]}, words.expand)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    assert str(error.value)
    assert ran == []
    assert not Path("/tmp/claim-was-executed").exists()


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("__import__('os').system('id') == 1", ".system"),
        ("().__class__.__bases__ == 1", ".__bases__"),
        ("open('f') == 1", "'open'"),
        ("lambda: 0 == 1", "lambda"),
        ("slope_at_zer == 1", "'slope_at_zer'"),
        ("epsilon ^ 2 == 1", "'^'"),
        ("[c for c in t] == 1", "comprehension"),
    ],
)
def test_error_names_the_offending_token(text, token, words):
    with pytest.raises(ClaimError) as error:
        parse(text, words.names(), {"t": words.symbols["t"]}, words.expand)
    assert token in str(error.value)


@pytest.mark.parametrize(
    ("text", "layer", "suggestion"),
    [
        ("slope_at_zero == 1/sqrt(eps)", "layernorm", "did you mean 'epsilon'?"),
        ("slope_at_zer == 1", "rmsnorm", "did you mean 'slope_at_zero'?"),
        ("spectral_nrom <= 1", "layernorm_affine", "did you mean 'spectral_norm'?"),
        ("gamma_mx > 0", "layernorm_affine", "did you mean 'gamma_max'?"),
        ("zzz == 1", "layernorm", "; known names: "),
    ],
)
def test_an_unknown_name_suggests_the_nearest_known_one(text, layer, suggestion):
    verdict = check(Claim(text, layer))
    assert verdict.verdict == "error"
    assert suggestion in verdict.detail
    assert ("did you mean" in verdict.detail) == (suggestion != "; known names: ")


@pytest.mark.parametrize("text", ["norm() <= 1", "sum() == 0", "dot(c) == 0", "norm(c, 3) <= 1"])
def test_a_vector_call_without_its_arguments_says_what_it_takes(text):
    verdict = check(Claim(text))
    assert verdict.verdict == "error"
    assert f"{text.split('(')[0]}() at" in verdict.detail
    assert "take vectors" in verdict.detail


def test_numbers_are_exact(words):
    relation = parse("sqrt(3/2) == 0.5 * sqrt(6)", words.names(), {}, words.expand)
    assert relation.lhs == relation.rhs
    assert check(Claim("limit(response, t, oo) == sqrt(3/2)")).verdict == "proved"


def test_the_example_file_meets_every_expectation(capsys):
    """Each claim's verdict is its `expect`, so the command exits 0 (every expectation met)."""
    claims = load(EXAMPLES)
    assert len(claims) >= 12
    layers = {c.layer for c in claims}
    assert {"layernorm", "rmsnorm"} <= layers
    assert main(["check", "--claims", str(EXAMPLES), "--format", "json"]) == 0
    verdicts = [row["verdict"] for row in json.loads(capsys.readouterr().out)]
    assert verdicts == [c.expect for c in claims]
    assert set(verdicts) == {"proved", "refuted", "supported", "error"}


def test_norm_one_over_s_for_all_n_is_refuted_at_n_two():
    verdict = check(Claim("spectral_norm == 1/sqrt(q + epsilon)"), confirm)
    assert verdict.verdict == "refuted"
    assert verdict.counterexample is not None
    assert verdict.counterexample["n"] == 2
    assert "confirmed numerically" in verdict.detail
    assert "NOT confirmed" not in verdict.detail


@pytest.mark.parametrize(
    ("text", "layer", "assume", "expected"),
    [
        ("spectral_norm == 1/s", "layernorm", ("n >= 3",), "proved"),
        ("spectral_norm <= 1/sqrt(epsilon)", "layernorm", (), "proved"),
        ("spectral_norm < 1/sqrt(epsilon)", "layernorm", (), "refuted"),  # equality at q = 0
        ("slope_at_zero == 1/epsilon", "layernorm_std_eps", (), "proved"),
        ("slope_at_zero_uniform == 1/sqrt(epsilon)", "rmsnorm", (), "proved"),
        ("eigen_x == 1/s", "rmsnorm", (), "refuted"),
        ("spectral_bound <= gamma_max/epsilon", "layernorm_affine", (), "refuted"),  # false for epsilon > 1
        # Assumptions are used in proofs: epsilon <= 1 is epsilon = 1/(1 + u).
        ("spectral_bound <= gamma_max/epsilon", "layernorm_affine", ("epsilon <= 1",), "proved"),
        ("spectral_norm == 1/s", "layernorm", ("n >= 3", "n <= 2"), "vacuous"),
        ("spectral_norm == 1", "layernorm", ("m > 2",), "error"),
        ("slope_at_zero == 1/sqrt(epsilon)", "instancenorm", (), "error"),
    ],
)
def test_verdicts(text, layer, assume, expected):
    assert check(Claim(text, layer, assume), confirm).verdict == expected


def test_supported_reports_the_sample_count_and_what_it_quantified_over():
    verdict = check(Claim("min(exp(slope_at_zero), 2) <= 2"))
    assert verdict.verdict == "supported"
    assert "sampled points" in verdict.detail
    assert verdict.quantifier == "for all t in R, epsilon > 0, at x = (-t, 0, t) (n = 3)"
    assert verdict.quantifier in verdict.detail


def _run(capsys, *argv):
    """``python -m derivations check ...`` in this process (tests/test_outputs.py runs real processes)."""
    try:
        code = main(["check", *argv])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out, err)


def test_cli_json_has_the_documented_keys(capsys):
    result = _run(capsys, "spectral_norm == 1/sqrt(q + epsilon)", "--format", "json")
    assert result.returncode == 1
    (row,) = json.loads(result.stdout)
    assert {"id", "claim", "layer", "verdict", "detail", "counterexample"} <= row.keys()
    assert row["verdict"] == "refuted"
    assert row["counterexample"]["n"] == 2


def test_cli_exit_status(capsys, tmp_path):
    assert main(["check", "spectral_norm == 1/s", "--assume", "n >= 3"]) == 0
    assert main(["check", "slope_at_zero == 1/epsilon"]) == 1
    two = tmp_path / "claims.toml"
    two.write_text(
        '[[claim]]\nid = "a"\nclaim = "spectral_norm == 1/s"\nassumptions = ["n >= 3"]\nexpect = "proved"\n'
        '[[claim]]\nid = "b"\nclaim = "slope_at_zero == 1/epsilon"\nexpect = "refuted"\n'
    )
    assert main(["check", "--claims", str(two), "--format", "markdown"]) == 0  # both as expected
    out = capsys.readouterr().out
    assert "| id | claim | layer | verdict | detail |" in out
    assert "| a | " in out
    assert "| b | " in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("claim = 'not a table'\n", "one or more [[claim]] tables"),
        ("[[claim]\n", "not valid TOML"),
    ],
)
def test_bad_claim_files_are_usage_errors(tmp_path, content, message, capsys):
    """A file that is not a claims file at all is a usage error; a bad entry is an error verdict."""
    path = tmp_path / "claims.toml"
    path.write_text(content)
    with pytest.raises(ClaimError, match=re.escape(message)):
        load(path)
    assert main(["check", "--claims", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["a == 1", "--claims", "x.toml"],
        ["--claims", "x.toml", "--assume", "n >= 3"],
        ["--format", "yaml", "1 == 1"],
    ],
)
def test_cli_usage_errors_exit_2_in_one_line(argv, capsys):
    result = _run(capsys, *argv)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_a_files_entries_are_numbered_from_one_as_a_reader_counts_them(tmp_path):
    """An entry without an id is named by its place in the file, the first "claim-1", and a bad
    entry's problem names that place: the numbers a reader counting the tables would give."""
    path = tmp_path / "claims.toml"
    path.write_text(
        '[[claim]]\nclaim = "spectral_norm == 1/s"\n'
        '[[claim]]\nclaim = "slope_at_zero == 1/epsilon"\n'
        '[[claim]]\nclaim = "slope_at_zero == 1/epsilon"\nexpect = "maybe"\n'
    )
    first, second, third = load(path)
    assert (first.id, second.id, third.id) == ("claim-1", "claim-2", "claim-3")
    assert (first.problem, second.problem) == (None, None)
    assert str(third.problem).startswith("entry 3: 'expect' must be one of")


def test_missing_claims_file_is_a_usage_error(tmp_path, capsys):
    result = _run(capsys, "--claims", str(tmp_path / "absent.toml"))
    assert result.returncode == 2
    assert "absent.toml" in result.stderr


@pytest.mark.parametrize("layer", ["layernorm_affine", "rmsnorm_affine"])
@pytest.mark.parametrize("name", ["spectral_norm", "second_moment"])
def test_a_quantity_the_layer_lacks_is_an_error_verdict(layer, name):
    verdict = check(Claim(f"{name} <= 1/sqrt(epsilon)", layer))
    assert verdict.verdict == "error"
    assert f"{layer} has no {name}" in verdict.detail


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("id = 'a'\n", "needs a 'claim' field"),
        ("claim = '1 == 1'\ncolour = 'red'\n", "unknown fields"),
        ("claim = '1 == 1'\nexpect = 'true'\n", "'expect' must be one of"),
        ("claim = '1 == 1'\nassumptions = [1]\n", "'assumptions' must be a list of strings"),
        ("id = ''\nclaim = '1 == 1'\n", "'id' must be non-empty"),
        ("id = 'good'\nclaim = '1 == 1'\n", "duplicate id"),
        ("claim = 't + 1 == t'\nassumptions = ['1 > 2']\n", "the assumption 1 > 2 is false"),
        ("claim = 'slope_at_zero == 1/epsilon'\nassumptions = ['n >= t']\n", ""),
    ],
)
def test_one_bad_entry_is_an_error_verdict_and_the_others_are_checked(tmp_path, entry, message, capsys):
    path = tmp_path / "claims.toml"
    path.write_text(f"[[claim]]\nid = 'good'\nclaim = 'slope_at_zero == 1/sqrt(epsilon)'\n\n[[claim]]\n{entry}")
    claims = load(path)
    verdicts = [check(c) for c in claims]
    assert verdicts[0].verdict == "proved"
    assert verdicts[1].verdict in ("error", "refuted", "vacuous")
    assert message in verdicts[1].detail
    status = main(["check", "--claims", str(path), "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    assert [row["verdict"] for row in rows] == [v.verdict for v in verdicts]
    assert status == (1 if verdicts[1].verdict == "refuted" else 2)


def test_a_refutation_shows_a_cancelling_side_at_its_value():
    """1 - response at t = 1e30 is eps / (2 t**2) = 5e-63, not the 0 that 30 digits give."""
    verdict = check(Claim("1 - response_uniform >= 10**(-60)", layer="rmsnorm"))
    assert verdict.verdict == "refuted"
    t, eps = sp.Rational(verdict.counterexample["t"]), sp.Rational(verdict.counterexample["epsilon"])
    shown = float(re.search(r"lhs = ([^,]+), rhs", verdict.detail).group(1))
    assert shown == pytest.approx(float(sp.N(1 - t / sp.sqrt(t**2 + eps), 30)), rel=1e-7, abs=0)
    assert shown < 1e-60


@pytest.mark.parametrize(
    ("claim", "layer", "assumptions"),
    [
        ("eigen_complement == 1", "rmsnorm", ("epsilon == 1", "r == 1/4")),  # sampled in the statistics
        ("second_moment == 1/n", "l2norm_clamped", ("epsilon == 1", "r == 1/4")),
        ("spectral_norm <= 1", "layernorm", ("q == 1/100", "mu == 3")),
        ("dot(g, J @ g) <= dot(g, g) / 2", "rmsnorm", ("r == 1/4", "epsilon == 1")),  # at explicit inputs
        ("norm(y) <= 1", "rmsnorm", ("r == 1/4",)),
    ],
)
def test_a_counterexample_has_the_statistics_the_assumptions_fix(claim, layer, assumptions):
    """The x shown, and re-checked numerically, is one where the assumed statistics hold (it was x = 0)."""
    verdict = check(Claim(claim, layer=layer, assumptions=assumptions), confirm)
    assert verdict.verdict == "refuted", verdict.detail
    x = np.array(verdict.counterexample["x"], dtype=float)
    for assumption in assumptions:
        name, value = (part.strip() for part in assumption.split("=="))
        measured = {"r": np.mean(x**2), "q": np.var(x), "mu": np.mean(x)}.get(name)
        if measured is not None:
            assert measured == pytest.approx(float(sp.Rational(value)), rel=1e-12), (name, x)
    assert "confirmed numerically" in verdict.detail


def test_a_refutation_shows_its_two_sides_apart():
    """1 + 1e-40 - 5e-63 against 1: at 8 digits both read 1.0000000; more digits are shown until they differ."""
    verdict = check(Claim("response_uniform + 10**(-40) < 1", layer="rmsnorm"))
    assert verdict.verdict == "refuted"
    lhs, rhs = re.search(r"lhs = ([^,]+), rhs = ([^;)]+)", verdict.detail).groups()
    assert lhs != rhs
    assert sp.Float(lhs, 60) - sp.Float(rhs, 60) == pytest.approx(1e-40, rel=1e-6)
    # Sides apart at 8 digits stay at 8.
    assert "lhs = 2.0000000, rhs = 4.0000000" in check(Claim("slope_at_zero == 1/epsilon")).detail


@pytest.mark.parametrize("layer", ["layernorm_affine", "rmsnorm_affine", "dyt"])
def test_a_counterexample_holds_the_named_gain_at_its_place(layer):
    """`gamma` is the gain at the patterns' coordinate (gamma[2]): a claim on it over a general x is
    refuted with that entry in the gain shown, not a gain of all gamma_max (which was withdrawn)."""
    verdict = check(Claim("gamma >= 0", layer=layer))
    assert verdict.verdict == "refuted", verdict.detail
    example = verdict.counterexample
    assert example["gain"][2] == example["gamma"] < 0  # recomputed: the claim fails there
    assert max(map(abs, example["gain"])) == example.get("gamma_max", abs(example["gamma"]))


@pytest.mark.parametrize(("root", "low"), [("3", 3), ("10**6", 10**6)])
def test_a_symbol_whose_range_excludes_zero_is_not_given_a_sign(root, low):
    """t**2 > 1 leaves t nonzero, of either sign: z3 is told t != 0, never t < 0 (under which this
    product of two negative factors would be proved). The claim fails only between the two roots,
    10**-9 apart, where no sampled t falls: z3's point is the refutation, recomputed here exactly."""
    verdict = check(Claim(f"(t - {root})*(t - {root} - 10**(-9)) >= 0", assumptions=("t**2 > 1",)))
    assert verdict.verdict == "refuted", verdict.detail
    t = verdict.witness.t  # the point exactly, as z3 gave it
    assert float(t) == verdict.counterexample["t"]
    assert t**2 > 1
    assert (t - low) * (t - low - sp.Rational(1, 10**9)) < 0


@pytest.mark.parametrize(
    ("text", "layer", "shown"),
    [
        # DyT's bound is |alpha| max|gamma_i|: re-checked with the gain, not the bias (all 0 here).
        ("spectral_bound <= alpha", "dyt", "numeric.dyt.bound(alpha, gain)): lhs = 2, rhs = 1"),
        # A matrix's transpose is its transpose (a vector's, a row).
        ("J.T == J", "layernorm_affine", "numeric.layernorm_affine.jacobian): lhs = [[ 0.28284271  3.14662518]"),
    ],
)
def test_a_refutation_is_confirmed_numerically_with_the_values_the_counterexample_gives(text, layer, shown):
    verdict = check(Claim(text, layer), confirm)
    assert verdict.verdict == "refuted", verdict.detail
    assert f"confirmed numerically ({shown}" in verdict.detail


@pytest.mark.parametrize(
    ("text", "how"),
    [
        ("sum(layernorm(x)) == 1", "numeric.layernorm.forward"),  # a layer called by its key
        ("y(2 * x) == 2 * y(x)", "numeric.layernorm.forward"),  # the claim's own layer, as y
        ("sqrt(abs(response)) < 1", "numeric.layernorm.response(t, epsilon)"),  # functions, not layers
    ],
)
def test_a_refutation_naming_a_layer_or_a_function_is_confirmed_numerically(text, how):
    verdict = check(Claim(text), confirm)
    assert verdict.verdict == "refuted", verdict.detail
    assert f"confirmed numerically ({how})" in verdict.detail


def test_a_constant_response_counterexample_is_the_constant_input():
    verdict = check(Claim("constant_response == 0", layer="rmsnorm"))
    assert verdict.verdict == "refuted"
    example = verdict.counterexample
    assert example["x"] == [example["t"]] * len(example["x"])  # t 1, not the 0 it was
    assert "constant_response at x = t 1" in verdict.quantifier
    t, eps = example["t"], example["epsilon"]
    assert t / np.sqrt(t**2 + eps) != 0  # rmsnorm at t 1, recomputed: the claim fails there


def test_the_text_of_a_verdict_says_not_met_only_where_the_expectation_is_not_met():
    from derivations.claims.render import verdict_text

    met = verdict_text(check(Claim("slope_at_zero == 1/sqrt(epsilon)", expect="proved", id="a")))
    missed = verdict_text(check(Claim("slope_at_zero == 1/sqrt(epsilon)", expect="refuted", id="b")))
    assert met.startswith("[a] proved (expected proved): ")
    assert missed.startswith("[b] proved (expected refuted: NOT MET): ")


@pytest.mark.parametrize(
    ("layer", "text", "verdict"),
    [
        ("layernorm", "trace(J) == (n - 2)/sqrt(q + epsilon) + epsilon/(q + epsilon)**(3/2)", "proved"),
        ("layernorm", "trace(J) == (n - 1)/sqrt(q + epsilon)", "refuted"),
        ("rmsnorm", "trace(J) == (n - 1)/sqrt(r + epsilon) + epsilon/(r + epsilon)**(3/2)", "proved"),
        ("rmsnorm", "trace(J) <= (n - 1)/sqrt(epsilon)", "refuted"),
        ("layernorm", "trace(J.T @ J) <= n/epsilon", "proved"),
    ],
)
def test_the_trace_of_a_matrix_is_its_diagonal_summed_and_reduced(layer, text, verdict):
    """trace(M) is derived from M's entry at (i, i); a refutation's counterexample is re-checked
    here with NumPy's trace of the lambdified Jacobian, independently of the checker."""
    found = check(Claim(text, layer))
    assert found.verdict == verdict, found.detail
    if verdict == "refuted":
        example = found.counterexample
        x, eps = np.array(example["x"], dtype=float), float(example["epsilon"])
        trace = float(np.trace(getattr(numeric, layer).jacobian(x, eps)))
        size = len(x)
        second = float(np.mean((x - x.mean()) ** 2) if layer == "layernorm" else np.mean(x**2))
        bound = (size - 1) / np.sqrt(second + eps) if "==" in text else (size - 1) / np.sqrt(eps)
        assert trace != pytest.approx(bound) if "==" in text else trace > bound


@pytest.mark.parametrize(
    ("text", "verdict", "says"),
    [
        ("c.T == c", "proved", "entry by entry"),
        ("c.T == 2*c", "refuted", "lhs = [-0.50000000, 0.50000000]"),
        ("(J @ c).T == (J.T @ c).T", "proved", "entry by entry"),
        ("all(c.T <= abs(c))", "proved", "at every entry"),
        ("c.T == J", "error", "cannot compare a vector with a matrix"),
        # Transposed twice, a vector is itself again: a vector in a norm, a sum, a product.
        ("norm(y.T.T) == norm(y)", "proved", ""),
        ("sum(c.T.T) == 0", "proved", ""),
        ("x.T.T.T @ x == dot(x, x)", "proved", ""),
    ],
)
def test_a_transposed_vector_is_compared_as_the_vector_it_transposes(text, verdict, says):
    """A relation between vectors holds entry by entry, so c^T on either side is c (x^T @ y, a
    product, is a number)."""
    found = check(Claim(text, layer="layernorm"))
    assert found.verdict == verdict, found.detail
    assert says in found.detail


@pytest.mark.parametrize("text", ["limit(c, t, 0) == 0", "limit(J, epsilon, 0) == 0"])
def test_a_limit_of_a_vector_or_a_matrix_is_an_error_saying_it_takes_a_scalar(text):
    found = check(Claim(text, layer="layernorm"))
    assert found.verdict == "error"
    assert found.detail == "limit() at column 1 is of a scalar"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a point in a symbol (epsilon is real and finite: only "a number" refuses it)
        ("limit(slope, t, epsilon) == 1", "the point must be a number, oo or -oo"),
        ("limit(slope, t, 1/0) == 1", "the point must be a number, oo or -oo"),
        ("limit(slope, t, sqrt(-1)) == 1", "the point must be a number, oo or -oo"),
        ('limit(slope, t, oo, "+") == 0', "a limit at oo has one side only; give no direction"),
        ("limit(slope, x, 0) == 0", "the variable must be one of ['epsilon', 't']"),
    ],
)
def test_a_limit_is_taken_in_t_or_epsilon_at_a_number_or_an_infinity_only(text, message):
    found = check(Claim(text, layer="layernorm"))
    assert found.verdict == "error"
    assert found.detail == f"limit() at column 1: {message}"


def test_z3_decides_a_claim_with_a_square_root_of_a_radicand_the_domain_keeps_nonnegative():
    """sqrt(mu - 1) requires mu >= 1 of the domain; z3 takes the root as r >= 0 with r**2 = mu - 1."""
    found = check(Claim("sqrt(mu - 1) <= mu", layer="layernorm"))
    assert found.verdict == "proved", found.detail
    assert "where mu - 1 >= 0" in found.quantifier
    assert "decided by z3's nonlinear real arithmetic" in found.detail


def test_the_trace_of_a_vector_is_an_error_saying_what_trace_takes():
    verdict = check(Claim("trace(c) == 0"))
    assert verdict.verdict == "error"
    assert "trace(M) and det(J) take vectors" in verdict.detail


@pytest.mark.parametrize(
    ("layer", "text", "verdict"),
    [
        ("layernorm", "J == (I - outer(ones, ones)/n - outer(y, y)/n)/sqrt(q + epsilon)", "proved"),
        ("layernorm", "J == (I - outer(ones, ones)/n - outer(y, y)/n)/sqrt(q)", "refuted"),
        ("rmsnorm", "J == (I - outer(y, y)/n)/sqrt(r + epsilon)", "proved"),
        ("rmsnorm", "J == I/sqrt(r + epsilon) - outer(x, x)/(n*(r + epsilon))", "refuted"),
        ("layernorm", "trace(I) == n", "proved"),
        # outer(u, v) is u v^T, not u u^T: its columns are u times v's entries.
        ("layernorm", "all(outer(x, ones) @ ones == n*x)", "proved"),
        ("layernorm", "all(outer(ones, x) @ ones == n*mu*ones)", "proved"),
    ],
)
def test_the_identity_and_outer_products_build_matrices_papers_write(layer, text, verdict):
    """I and outer(u, v) (entry u_i v_k); a refutation is re-checked here against the lambdified
    Jacobian and forward pass with NumPy's outer products."""
    found = check(Claim(text, layer))
    assert found.verdict == verdict, found.detail
    if verdict == "refuted":
        example = found.counterexample
        x, eps = np.array(example["x"], dtype=float), float(example["epsilon"])
        module, size = getattr(numeric, layer), len(x)
        y, jacobian = module.forward(x, eps), module.jacobian(x, eps)
        if layer == "layernorm":
            stated = (np.eye(size) - np.ones((size, size)) / size - np.outer(y, y) / size) / np.sqrt(np.var(x))
        else:
            r = np.mean(x**2)
            stated = np.eye(size) / np.sqrt(r + eps) - np.outer(x, x) / (size * (r + eps))
        assert not np.allclose(jacobian, stated)


@pytest.mark.parametrize(
    ("layer", "text", "verdict"),
    [
        ("layernorm", "det(J) == 0", "proved"),
        ("rmsnorm", "det(J) == epsilon/(r + epsilon)**(3/2) * (1/sqrt(r + epsilon))**(n - 1)", "proved"),
        ("rmsnorm", "det(J) == 0", "refuted"),
        ("rmsnorm", "det(J) <= epsilon**(-n/2) / 2", "refuted"),
        ("layernorm_affine", "det(J) == 0", "error"),  # the gains break the eigenvectors
        ("l2norm_clamped", "det(J) >= 0", "error"),  # not smooth: J jumps at the clamp
    ],
)
def test_the_determinant_is_the_product_of_the_proved_eigenvalues(layer, text, verdict):
    """det(J) from the proved eigen-decomposition, each eigenvalue to its multiplicity; a
    refutation is re-checked here with NumPy's determinant of the lambdified Jacobian."""
    found = check(Claim(text, layer))
    assert found.verdict == verdict, found.detail
    why = {
        "layernorm_affine": "det() at column 1: layernorm_affine's eigen-decomposition is not proved (not an",
        "l2norm_clamped": "det() at column 1: det(J) is derived from the eigenstructure of a smooth layer's J",
    }
    if verdict == "error":
        assert found.detail.startswith(why[layer]), found.detail
    if verdict == "refuted":
        example = found.counterexample
        x, eps = np.array(example["x"], dtype=float), float(example["epsilon"])
        det = float(np.linalg.det(numeric.rmsnorm.jacobian(x, eps)))
        assert det != pytest.approx(0) if "== 0" in text else det > eps ** (-len(x) / 2) / 2


def test_a_limit_taken_by_the_signs_of_two_symbols_holds_at_every_combination_of_them():
    """lim_{t -> 0} sqrt(t^2 + a^2) + 2 sqrt(t^2 + b^2) = |a| + 2 |b|: taken case by case in the
    signs of a and b, each case labelled by its own signs (a > 0 with b < 0 is not a <= 0)."""
    from derivations.claims import limits
    from derivations.claims.language import TWO_SIDED, Lim

    t, a, b = (sp.Symbol(name, real=True) for name in "tab")
    body = sp.sqrt(t**2 + a**2) + 2 * sp.sqrt(t**2 + b**2)
    value, missing = limits.take(Lim(body, t, sp.Integer(0), TWO_SIDED))
    assert missing == []
    for p, q in [(2, -3), (-2, 3), (2, 3), (-2, -3), (0, 3), (2, 0), (0, 0)]:
        assert value.subs({a: p, b: q}) == abs(p) + 2 * abs(q)


def test_a_case_of_another_symbol_is_no_boundary_of_the_limit():
    """Only a case boundary that moves with the variable is a point where the limit may change
    form: a case in a alone (sin(a) > 0, with infinitely many boundaries) stays in the result,
    decided at each a, and the limit is taken (splitting at its boundaries, it was refused)."""
    from derivations.claims import limits
    from derivations.claims.language import TWO_SIDED, Lim

    t, a = sp.Symbol("t", real=True), sp.Symbol("a", real=True)
    body = sp.Piecewise((t / (a**2 + 1) + sp.sqrt(t**2 + a**2), sp.sin(a) > 0), (2 * t, True))
    value, missing = limits.take(Lim(body, t, sp.Integer(0), TWO_SIDED))
    assert missing == []
    for at, expected in [(2, 2), (-2, 0), (4, 0), (-4, 4), (0, 0)]:  # |a| where sin(a) > 0, else 0
        assert value.subs(a, at) == expected


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("limit(slope_at_zero * sqrt(epsilon), epsilon, oo) == 1", "proved"),
        ("limit(spectral_norm * sqrt(epsilon), epsilon, oo) == 1", "proved"),
        ("limit(response * sqrt(epsilon), epsilon, oo) == t", "proved"),
        ("limit(response * sqrt(epsilon), epsilon, oo) == 2*t", "refuted"),
        ("limit(spectral_norm, epsilon, -oo) == 0", "error"),  # epsilon > 0: no limit below
    ],
)
def test_a_limit_as_epsilon_grows_without_bound(text, verdict):
    """As epsilon -> oo the layer is linear with slope 1/sqrt(epsilon); a refutation is
    re-checked here with the lambdified response at a large epsilon."""
    found = check(Claim(text))
    assert found.verdict == verdict, found.detail
    if verdict == "refuted":
        at = float(found.counterexample["t"])
        scaled = float(numeric.layernorm.response(at, 1e16)) * 1e8
        assert scaled == pytest.approx(at, rel=1e-9)
        assert scaled != pytest.approx(2 * at)


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("diag(ones) == I", "proved"),
        ("diag(x) @ ones == x", "proved"),
        ("trace(diag(x)) == n * mu", "proved"),
        ("diag(x) @ x == x", "refuted"),
        ("J @ diag(c) == diag(c) @ J", "refuted"),
    ],
)
def test_a_diagonal_matrix_from_a_vector(text, verdict):
    """diag(v), entry v_i where i = k; a refutation is re-checked here with NumPy's diag."""
    found = check(Claim(text))
    assert found.verdict == verdict, found.detail
    if verdict == "refuted":
        x = np.array(found.counterexample["x"], dtype=float)
        if text.startswith("J"):
            jacobian = numeric.layernorm.jacobian(x, float(found.counterexample["epsilon"]))
            c = np.diag(x - x.mean())
            assert not np.allclose(jacobian @ c, c @ jacobian)
        else:
            assert not np.allclose(np.diag(x) @ x, x)


@pytest.mark.parametrize(
    ("layer", "text", "assume", "verdict"),
    [
        # The scaling law LN_eps(a x) = LN_{eps/a^2}(x) for a > 0, and its epsilon-free form.
        ("layernorm", "layernorm(a*x, epsilon) == layernorm(x, epsilon/a**2)", ["a > 0"], "proved"),
        ("rmsnorm", "y(a*x, a**2*epsilon) == y", ["a > 0"], "proved"),
        ("layernorm_std_eps", "y(a*x, a*epsilon) == y", ["a > 0"], "proved"),  # epsilon beside the root
        ("layernorm_std_eps", "y(a*x, a**2*epsilon) == y", ["a > 0"], "refuted"),
        ("layernorm", "y(a*x, a**2*epsilon) == y", [], "refuted"),  # a < 0 flips the sign
        # Invariance under x -> a x + b 1 (Ba et al.) holds only at epsilon = 0 ...
        ("layernorm", "layernorm(a*x + b*ones) == y", ["a > 0", "epsilon == 0"], "proved"),
        ("layernorm", "layernorm(a*x + b*ones) == y", ["a > 0"], "refuted"),
        ("layernorm", "layernorm(a*x + b*ones) == -y", ["a < 0", "epsilon == 0"], "proved"),
        # ... and RMSNorm does not re-center (Zhang & Sennrich).
        ("rmsnorm", "rmsnorm(x + b*ones) == y", [], "refuted"),
        ("layernorm", "y(x + b*ones) == y", [], "proved"),
        ("layernorm_affine", "y(a*x, a**2*epsilon) == y", ["a > 0"], "proved"),
        ("prmsnorm", "y(x + b*ones) == y", [], "refuted"),
        ("l2norm_clamped", "y(-x) == -y", [], "proved"),
        ("layernorm", "mean(y(a*x + b*ones)) == 0", [], "proved"),
        ("layernorm", "norm(layernorm(x + b*ones)) <= sqrt(n)", [], "proved"),
    ],
)
def test_a_layer_applied_at_another_input_or_epsilon(layer, text, assume, verdict):
    """``layernorm(z, e)`` and ``y(z, e)``: the layer at an input built from x and at another
    epsilon, for symbolic n.  A refutation is re-checked here with the layer's lambdified forward
    pass at a x + b 1, at the counterexample's a and b."""
    found = check(Claim(text, layer, tuple(assume)))
    assert found.verdict == verdict, found.detail
    if verdict == "refuted":
        example = found.counterexample
        x, eps = np.array(example["x"], dtype=float), float(example["epsilon"])
        a, b = float(example.get("a", 1.0)), float(example.get("b", 0.0))
        module = getattr(numeric, layer)
        other = getattr(numeric, "layernorm" if "layernorm(" in text else layer)
        moved = eps / a**2 if "epsilon/a**2" in text else a**2 * eps if "a**2*epsilon" in text else eps
        lhs = other.forward(a * x + b * np.ones_like(x), moved)
        rhs = module.forward(x, eps) * (-1 if "-y" in text else 1)
        assert not np.allclose(lhs, rhs)


@pytest.mark.parametrize(
    ("layer", "text", "message"),
    [
        ("layernorm", "layernorm(2) == y", "the input is a vector"),
        ("layernorm", "layernorm(x, x) == y", "epsilon is a scalar"),
        ("layernorm", "layernorm(x, epsilon, 1) == y", "takes (input) or (input, epsilon)"),
        ("dyt", "y(x, 2) == y", "dyt has no epsilon"),
        ("groupnorm", "y(2*x) == y", "not a block's"),
    ],
)
def test_a_layer_called_wrongly_says_what_it_takes(layer, text, message):
    found = check(Claim(text, layer))
    assert found.verdict == "error"
    assert message in found.detail


@pytest.mark.parametrize(
    ("layer", "text", "verdict"),
    [
        # |y_i| <= sqrt(n - 1) for every i (Samuelson's inequality on the centered entries).
        ("layernorm", "all(abs(y) <= sqrt(n - 1))", "proved"),
        ("layernorm", "max(abs(y)) <= sqrt(n - 1)", "proved"),
        ("layernorm", "norm(y, oo) <= sqrt(n - 1)", "proved"),
        ("layernorm", "all(abs(y) <= sqrt(n - 2))", "refuted"),
        ("layernorm", "norm(y, oo) <= 1", "refuted"),
        ("rmsnorm", "all(abs(y) <= sqrt(n))", "proved"),
        ("rmsnorm", "norm(y, oo) <= sqrt(n - 1)", "refuted"),
        ("layernorm", "all(y <= 1)", "refuted"),
        ("layernorm", "norm(y, 1) <= norm(y)", "refuted"),
        # |w|_2 <= |w|_1 <= sqrt(n) |w|_2, with the sum of |y_i| a variable of its own.
        ("layernorm", "norm(y, 1) <= sqrt(n) * norm(y)", "proved"),
        ("layernorm", "norm(v, 1) >= norm(v)", "proved"),
        ("layernorm", "norm(v, 1) <= sqrt(n - 1) * norm(v)", "refuted"),
    ],
)
def test_entrywise_statements_and_the_one_and_infinity_norms(layer, text, verdict):
    """all(...) relates the entries one by one; max(v), norm(v, oo) and norm(v, 1) are the largest
    entry, the largest |entry| and the sum of |entries|.  A refutation is re-checked here with
    NumPy on the lambdified forward pass."""
    found = check(Claim(text, layer))
    assert found.verdict == verdict, found.detail
    if verdict == "refuted":
        example = found.counterexample
        x, eps, size = np.array(example["x"], dtype=float), float(example.get("epsilon", 1)), len(example["x"])
        y = getattr(numeric, layer).forward(x, eps)  # epsilon is absent only where the claim is of v alone
        holds = {
            "all(abs(y) <= sqrt(n - 2))": np.all(np.abs(y) <= np.sqrt(size - 2)),
            "norm(y, oo) <= 1": np.max(np.abs(y)) <= 1,
            "norm(y, oo) <= sqrt(n - 1)": np.max(np.abs(y)) <= np.sqrt(size - 1),
            "all(y <= 1)": np.all(y <= 1),
            "norm(y, 1) <= norm(y)": np.sum(np.abs(y)) <= np.linalg.norm(y),
        }.get(text)
        if text.startswith("norm(v"):
            v = np.array(example["v"], dtype=float)
            holds = np.sum(np.abs(v)) <= np.sqrt(size - 1) * np.linalg.norm(v)
        assert not holds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("all(J <= 1)", "one side at least is a vector"),
        ("all(1 <= 2)", "one side at least is a vector"),
        ("all(y <= 1, y >= -1)", "all() takes one relation"),
        ("all(y)", "all() takes one relation"),
    ],
)
def test_an_entrywise_claim_written_wrongly_says_what_all_takes(text, message):
    found = check(Claim(text))
    assert found.verdict == "error"
    assert message in found.detail


@pytest.mark.parametrize(
    ("layer", "text", "verdict"),
    [
        # J is positive semidefinite: its proved eigenvalues are >= 0 and J is symmetric.
        ("layernorm", "dot(v, J @ v) >= 0", "proved"),
        ("layernorm", "v.T @ J @ v >= 0", "proved"),
        ("rmsnorm", "dot(v, J @ v) >= epsilon*norm(v)**2/s**3", "proved"),
        ("layernorm", "dot(v, J @ v) <= norm(v)**2/s", "proved"),
        ("layernorm", "dot(v, J @ v) >= norm(v)**2/s", "refuted"),
        ("rmsnorm", "dot(v, J @ v) >= norm(v)**2/s", "refuted"),
        # |J v| <= ||J||_2 |v|, and ||diag(gamma) J||_2 <= gamma_max ||J||_2.
        ("layernorm", "norm(J @ v) <= norm(v)/s", "proved"),
        ("layernorm", "norm(J @ v) <= norm(v)/(2*s)", "refuted"),
        ("layernorm_affine", "norm(J, 2) <= gamma_max/s", "proved"),
        ("rmsnorm_affine", "norm(J, 2) <= gamma_max/sqrt(epsilon)", "proved"),
        ("layernorm_affine", "norm(J, 2) <= gamma_max/(2*s)", "refuted"),
        # u v^T: a column times a row.
        ("layernorm", "outer(x, x) == x @ x.T", "proved"),
        ("layernorm", "x @ ones.T == outer(ones, x)", "refuted"),
    ],
)
def test_bounds_from_the_derived_eigenvalues_and_spectral_norm(layer, text, verdict):
    """A quadratic form, |J v| and the norm of a gain times J, proved by z3 from what the
    derivations give (the eigenvalues of a symmetric J, its spectral norm, submultiplicativity)
    with each sum a variable of its own.  A refutation is re-checked here with NumPy on the
    lambdified Jacobian."""
    found = check(Claim(text, layer))
    assert found.verdict == verdict, found.detail
    if verdict != "refuted":
        return
    example = found.counterexample
    x = np.array(example["x"], dtype=float)
    module, size = getattr(numeric, layer), len(x)
    if text.startswith("x @"):
        assert not np.allclose(np.outer(x, np.ones(size)), np.outer(np.ones(size), x))
        return
    eps = float(example["epsilon"])
    if layer.endswith("affine"):
        gain, bias = np.array(example["gain"]), np.array(example["bias"])
        scale = np.sqrt(np.var(x) + eps)
        assert np.linalg.norm(module.jacobian(x, eps, gain, bias), 2) > np.max(np.abs(gain)) / (2 * scale)
        return
    v, jacobian = np.array(example["v"], dtype=float), module.jacobian(x, eps)
    scale = np.sqrt((np.var(x) if layer == "layernorm" else np.mean(x**2)) + eps)
    if text.startswith("norm"):
        assert np.linalg.norm(jacobian @ v) > np.linalg.norm(v) / (2 * scale)
    else:
        assert v @ jacobian @ v < v @ v / scale


@pytest.mark.parametrize(
    ("layer", "text", "part"),
    [
        ("layernorm", "exp(-slope_at_zero) < 1", "exp"),
        ("layernorm", "dot(v, x) <= norm(v) * norm(x)", "sums over the entries"),
        ("prmsnorm", "norm(J, 2) <= norm_bound", "norm(M, 2) of a matrix with no closed form"),
    ],
)
def test_a_supported_verdict_names_the_part_outside_the_fragment_z3_decides(layer, text, part):
    found = check(Claim(text, layer))
    assert found.verdict == "supported", found.detail
    assert f"outside the algebraic fragment z3 decides: {part}" in found.detail


@pytest.mark.parametrize(
    ("layer", "assumption", "shown"),
    [
        ("layernorm", "n == 1", "layernorm is y_0 = 0"),
        ("layernorm", "d <= 1", "layernorm is y_0 = 0"),
        ("rmsnorm", "n == 1", "rmsnorm is y_0 = x_0/sqrt(epsilon + x_0**2)"),
    ],
)
def test_one_feature_is_refused_in_one_line_that_names_n_equal_one(layer, assumption, shown):
    found = check(Claim("norm(y) <= sqrt(n)", layer, (assumption,)))
    assert found.verdict == "error"
    assert "n = 1 is outside what the derivations cover, which is n >= 2" in found.detail
    assert shown in found.detail
    assert "\n" not in found.detail


@pytest.mark.parametrize(
    ("layer", "text", "assume", "verdict"),
    [
        ("layernorm", "rank(J) == n - 1", (), "proved"),
        ("layernorm", "rank(J) == n", (), "refuted"),
        ("rmsnorm", "rank(J) == n", (), "proved"),
        # At epsilon = 0 the epsilon/s**3 direction is a kernel: rank n - 1.
        ("rmsnorm", "rank(J) == n - 1", ("epsilon == 0",), "proved"),
        # "The eigenvalue 1/s has multiplicity n - 2": only where x is not constant, since at a
        # constant input epsilon/s**3 = 1/s as well.
        ("layernorm", "multiplicity(1/s, J) == n - 2", ("q > 0",), "proved"),
        ("layernorm", "multiplicity(1/s, J) == n - 2", (), "refuted"),
        ("layernorm", "multiplicity(0, J) == 1", (), "proved"),
        ("layernorm", "max(eigenvalues(J)) == 1/s", ("n >= 3",), "proved"),
        ("layernorm", "max(eigenvalues(J)) == 1/s", (), "refuted"),  # n = 2: epsilon/s**3
        ("layernorm", "min(eigenvalues(J)) == 0", (), "proved"),
    ],
)
def test_rank_multiplicity_and_eigenvalues_from_the_proved_eigenstructure(layer, text, assume, verdict):
    """rank(J), multiplicity(lambda, J) and eigenvalues(J) from the proved decomposition; a
    refutation is re-checked here with NumPy's rank and eigenvalues of the lambdified Jacobian."""
    found = check(Claim(text, layer, assume))
    assert found.verdict == verdict, found.detail
    if verdict != "refuted":
        return
    example = found.counterexample
    x, eps = np.array(example["x"], dtype=float), float(example["epsilon"])
    jacobian, size = getattr(numeric, layer).jacobian(x, eps), len(x)
    scale = np.sqrt(np.var(x) + eps)
    if text.startswith("rank"):
        assert np.linalg.matrix_rank(jacobian) != size
    elif text.startswith("multiplicity"):
        assert size - np.linalg.matrix_rank(jacobian - np.eye(size) / scale) != size - 2
    else:
        assert np.max(np.linalg.eigvalsh(jacobian)) != pytest.approx(1 / scale)


def test_rank_and_multiplicity_count_an_eigenvalue_as_soon_as_it_is_a_number():
    """The indicator behind rank() and multiplicity() is 1 or 0 once both sides are numbers,
    however written, and stays symbolic (for the domain to settle) while a symbol is in it."""
    from derivations.claims.semantics import Equal

    assert Equal(sp.sqrt(2) ** 2, 2) == 1
    assert Equal(0, 0) == 1
    assert Equal(sp.Rational(1, 3), sp.Float(0.3)) == 0
    assert Equal(sp.pi, 3) == 0
    eps = sp.Symbol("epsilon")
    assert isinstance(Equal(eps, 0), Equal)


@pytest.mark.parametrize(
    ("layer", "text", "verdict"),
    [
        # Xu et al. 2019 differentiate LayerNorm through its mean and variance.
        ("layernorm", "diff(y, mu) == -ones/s", "proved"),
        ("layernorm", "diff(y, mu) == -ones/sqrt(q)", "refuted"),
        ("layernorm", "diff(y, q) == -y/(2*s**2)", "proved"),
        ("layernorm", "diff(y, q) == -y/s**2", "refuted"),
        ("layernorm", "diff(norm(y)**2, epsilon) <= 0", "proved"),
        ("layernorm_std_eps", "diff(y, sigma_u) == -y/(sigma_u + epsilon)", "proved"),
        # sigma_u is a function of q: diff in q goes through it.
        ("layernorm_std_eps", "diff(y, q) == -y/(sigma_u + epsilon)", "refuted"),
        ("rmsnorm", "diff(y, r) == -y/(2*(r + epsilon))", "proved"),
    ],
)
def test_a_derivative_with_respect_to_a_statistic_holds_the_others(layer, text, verdict):
    """diff(e, v) for a statistic v (the others and x_i held), epsilon or t.  A refutation is
    re-checked here by a central difference of the layer's output written with the statistic
    moved: for LayerNorm y = (x - mu)/sqrt(q + epsilon)."""
    found = check(Claim(text, layer))
    assert found.verdict == verdict, found.detail
    if verdict != "refuted":
        return
    example = found.counterexample
    x, eps = np.array(example["x"], dtype=float), float(example["epsilon"])
    mu, q, h = x.mean(), np.var(x), 1e-6
    if layer == "layernorm" and "mu" in text:
        moved = ((x - (mu + h)) - (x - (mu - h))) / (2 * h) / np.sqrt(q + eps)
        assert not np.allclose(moved, -1 / np.sqrt(q))
    elif layer == "layernorm":
        moved = ((x - mu) / np.sqrt(q + h + eps) - (x - mu) / np.sqrt(q - h + eps)) / (2 * h)
        assert not np.allclose(moved, -(x - mu) / np.sqrt(q + eps) ** 3)
    else:
        size = len(x)

        def y(variance):
            return (x - mu) / (np.sqrt(size * variance / (size - 1)) + eps)

        sigma = np.sqrt(size * q / (size - 1))
        assert not np.allclose((y(q + h) - y(q - h)) / (2 * h), -y(q) / (sigma + eps))


@pytest.mark.parametrize(
    ("layer", "text", "assume", "verdict"),
    [
        # "The Hessian vanishes along 1": LayerNorm is translation invariant.
        ("layernorm", "hvp(g, ones) == 0", (), "proved"),
        ("rmsnorm", "hvp(g, ones) == 0", (), "refuted"),
        ("layernorm", "sum(hvp(g, v)) == 0", (), "proved"),
        ("layernorm", "hvp(g, v) == 0", (), "refuted"),
        # Scale invariance at epsilon = 0 (y(t x) = y(x)): H x = -J^T g.
        ("rmsnorm", "hvp(g, x) == -J.T @ g", ("epsilon == 0",), "proved"),
        ("rmsnorm", "hvp(g, x) == -J.T @ g", (), "refuted"),
        ("layernorm", "hvp(g, c) == -J.T @ g", ("epsilon == 0",), "proved"),
    ],
)
def test_the_hessian_product_of_the_output(layer, text, assume, verdict):
    """hvp(u, w) = the Hessian of <u, y> applied to w; a refutation is re-checked here by a central
    difference of J(x + h w)^T u, the definition of the product."""
    found = check(Claim(text, layer, assume))
    assert found.verdict == verdict, found.detail
    if verdict != "refuted":
        return
    example = found.counterexample
    x, eps, g = (np.array(example[name], dtype=float) for name in ("x", "epsilon", "g"))
    w = np.array(example["v"], dtype=float) if "v" in example else np.ones_like(x) if "ones" in text else x
    module, h = getattr(numeric, layer), 1e-6
    product = (module.jacobian(x + h * w, eps).T @ g - module.jacobian(x - h * w, eps).T @ g) / (2 * h)
    expected = -module.jacobian(x, eps).T @ g if "-J.T" in text else np.zeros_like(x)
    assert not np.allclose(product, expected, atol=1e-6)


@pytest.mark.parametrize("layer", ["layernorm_std_eps", "layernorm_std_eps_biased"])
def test_rank_where_the_audits_exact_jacobian_is_a_limit_is_not_refuted(layer):
    """epsilon beside the root: at a constant input J = P/epsilon exists as a limit, and the audit's
    exact Jacobian (SymPy's derivative of sqrt(sum c_j**2) at c = 0) is NaN there.  A NaN matrix has
    full rank, so the audit refuted the true rank(J) == n - 1 (found by an outside check)."""
    found = check(Claim("rank(J) == n - 1", layer))
    assert found.verdict == "proved", found.detail
    x = np.array([0.5, 0.5])
    assert np.linalg.matrix_rank(getattr(numeric, layer).jacobian(x, 0.25)) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("eigenvalues(J) == 0", "eigenvalues(J) at column 1 goes into max() or min()"),
        # as max()'s only argument: beside another, the other was once dropped
        ("max(eigenvalues(J), 1000) == max(eigenvalues(J))", "eigenvalues(J) at column 5 goes into max() or min()"),
        ("J * J == J @ J", "'*' of two matrices at column 1; use @ for their product"),
        ("laynorm(x, epsilon) == y", "unknown function 'laynorm' at column 1; did you mean 'layernorm'?"),
        ("rnk(J) == n - 1", "did you mean 'rank'?"),
        ("tr(J) == n - 1", "did you mean 'trace'?"),
        ("all(abs(y) <= 1) == 1", "all() at column 1 is a whole claim"),
        ("rank(J, J) == 2", "rank() at column 1 takes (J)"),
        ("max(eigenvalues(J, 1)) <= 1", "eigenvalues() at column 5 takes (J)"),
        ("multiplicity(J) == 1", "multiplicity() at column 1 takes (lambda, J)"),
        ("multiplicity(0, J, J) == 1", "multiplicity() at column 1 takes (lambda, J)"),
        ("norm(y + 1) <= 2", "cannot add a vector and a scalar at column 6"),
        ("norm(J - 1, 2) <= 2", "cannot add a matrix and a scalar at column 6"),
    ],
)
def test_the_new_constructs_written_wrongly_say_what_to_write(text, message):
    found = check(Claim(text))
    assert found.verdict == "error"
    assert message in found.detail


def test_a_supported_identity_of_matrices_names_what_z3_does_not_take():
    found = check(Claim("J == 0", "layernorm", ("n == 2", "epsilon == 0")))
    assert found.verdict == "supported", found.detail
    assert "an identity of vectors or matrices that SymPy does not reduce to 0" in found.detail


def test_latex_reads_the_new_functions():
    from derivations.claims import latex

    assert latex.to_claim(r"\operatorname{rank}(J) = n - 1") == "rank(J) == n - 1"


@pytest.mark.parametrize(
    ("text", "engines"),
    [
        ("spectral_norm <= 1/sqrt(epsilon)", "z3 agrees: engines SymPy and z3"),
        ("abs(t - 1/2) >= 0", "z3 agrees: engines SymPy and z3"),  # |u| of u of either sign, to z3
        ("exp(-slope_at_zero) > 0", "z3 not asked (outside its fragment: exp"),
        ("J @ ones == 0", "z3 not asked (it takes scalars in the statistics)"),
    ],
)
def test_a_proof_says_which_engines_agreed(text, engines):
    found = check(Claim(text))
    assert found.verdict == "proved", found.detail
    assert engines in found.detail


@pytest.mark.parametrize("text", ["sqrt(q) < sqrt(q + epsilon)", "1/sqrt(q + epsilon) < 1/sqrt(q)"])
def test_a_strict_bound_between_roots_is_proved_by_sympy_comparing_squares(text):
    """Two nonnegative sides whose difference SymPy cannot sign: their squares' difference
    (epsilon over a positive denominator) is positive, so SymPy proves it, and z3 agrees."""
    found = check(Claim(text, assumptions=("q > 0",)))
    assert found.verdict == "proved", found.detail
    assert "squares compared: the difference of the squares is positive; z3 agrees" in found.detail


def test_a_proof_by_cases_in_n_takes_only_the_n_the_assumptions_admit():
    """The spectral norm is a case apart at n = 2; under n >= 3 that case is no part of the proof:
    SymPy proves the one case left (it failed when n = 2 was kept, and z3 alone decided)."""
    found = check(Claim("spectral_norm == 1/s", assumptions=("n >= 3",)))
    assert found.verdict == "proved", found.detail
    assert "n >= 3: both sides are the same expression; z3 agrees" in found.detail
    assert "n = 2" not in found.detail


@pytest.mark.parametrize(
    ("status", "engines"),
    [
        ("unknown", "z3 undecided within 0.5 s"),
        ("sat", "z3 does not confirm it (its over-approximation of the domain admits a candidate)"),
    ],
)
def test_a_proof_z3_does_not_confirm_says_so_with_the_half_second_it_had(monkeypatch, status, engines):
    """SymPy's proof stands where z3, the second engine, is undecided in its half second or finds
    a candidate; the detail says which, and how long z3 had."""
    from derivations.claims import solver

    monkeypatch.setattr(solver, "holds_everywhere", lambda *args, **kwargs: solver.Answer(status))
    found = check(Claim("spectral_norm <= 1/sqrt(epsilon)"))
    assert found.verdict == "proved", found.detail
    assert engines in found.detail


@pytest.mark.parametrize("order", ["epsilon", "t", "3", "0"])
def test_a_vector_norm_of_another_order_says_which_orders_there_are(order):
    """norm(v, p) for p = 1, 2 and oo only; any other order (a symbol too) is one line naming them."""
    found = check(Claim(f"norm(y, {order}) <= 1"))
    assert found.verdict == "error"
    assert "norm(v), norm(v, 1), norm(v, oo), norm(M, 2), norm(M, oo)" in found.detail


def test_a_power_of_a_sum_is_expanded_up_to_a_thousand_terms_and_refused_past_them():
    """docs/claims.md's bound: (five terms)**9 expands to C(13, 4) = 715 terms and is decided;
    **10 to C(14, 4) = 1001, past it, and is an error naming the power, decided in no time."""
    docs = Path(__file__).resolve().parents[1] / "docs" / "claims.md"
    assert "a power of a sum may expand to at most 1000 terms" in " ".join(docs.read_text(encoding="utf-8").split())
    base = "(t + epsilon + 1 + t**2 + epsilon**2)"
    assert check(Claim(f"{base}**9 >= 0", layer="layernorm")).verdict == "proved"
    refused = check(Claim(f"{base}**10 >= 0", layer="layernorm"))
    assert refused.verdict == "error"
    assert refused.detail == "the power at column 1 would expand to more than 1000 terms; state the claim without it"
    # At the largest exponent a claim may write, 64: three terms give C(66, 2) = 2145, refused too.
    assert check(Claim("(t + epsilon + 1)**64 >= 0", layer="layernorm")).detail == refused.detail


@pytest.mark.parametrize(
    ("text", "assumptions"),
    [("n == 7", ("n == 7",)), ("n <= 6", ("n >= 5", "n <= 6")), ("n >= 9", ("n >= 9",))],
)
def test_a_claim_only_about_five_or_more_features_is_audited_at_sizes_it_admits(text, assumptions):
    """Where n = 2, 3 and 4 are all assumed away, the audit takes the smallest n admitted and the
    next one if admitted too: n == 7 is checked at 7 alone, never at 8, where it is false."""
    verdict = check(Claim(text, layer="layernorm", assumptions=assumptions))
    assert verdict.verdict == "proved", verdict.detail
    assert re.search(r"audited at \d+ points of the domain in ball arithmetic: \d+ decided", verdict.detail)
    assert "0 decided" not in verdict.detail


@pytest.mark.parametrize(
    ("text", "verdict"),
    [("min(x) == -max(-x)", "proved"), ("min(x) <= mean(x)", "supported"), ("min(y) >= -sqrt(n - 1)", "supported")],
)
def test_the_smallest_entry_of_a_vector_is_its_own_min(text, verdict):
    """min(v) is minus the largest entry of -v: a claim comparing it with max, the mean or a
    bound holds, never a refutation the audit must withdraw."""
    assert check(Claim(text, layer="layernorm")).verdict == verdict


@pytest.mark.parametrize(("layer", "has_c"), [("layernorm", True), ("layernorm_std_eps", True), ("rmsnorm", False)])
def test_an_unknown_name_lists_the_centered_input_c_only_for_a_layer_that_centers(layer, has_c):
    """c = x - mean(x) is a name of a translation-invariant layer's claims, and the error for an
    unknown name lists it there; a layer that does not center x has no c to offer."""
    detail = check(Claim("zeta == 0", layer=layer)).detail
    known = detail.split("known names: ")[1].split(", ")
    assert "y" in known
    assert ("c" in known) == has_c, known


@pytest.mark.parametrize("text", ["0 * slope_at_zero == 0", "slope_at_zero * 0 == 0", "0**2 * t == 0", "t**0 == 1"])
def test_a_zero_is_a_scalar_like_any_other_in_a_product_or_a_power(text):
    """A literal 0 (falsy as a SymPy number) multiplies and is raised like any scalar: the
    claim is proved, not refused as a product or a power of something else."""
    found = check(Claim(text))
    assert found.verdict == "proved", found.detail


@pytest.mark.parametrize(("text", "message"), [("y**2 == y", "'**' of a vector"), ("y * y == y", "'*' of two vectors")])
def test_a_product_or_a_power_of_vectors_is_refused_naming_what_it_was_given(text, message):
    found = check(Claim(text))
    assert found.verdict == "error"
    assert message in found.detail


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("(2**63)**64 > 0", "proved"),  # 2**4032: 4033 bits
        ("1/(2**63)**64 > 0", "proved"),
        ("(2**64)**64 > 0", "error"),  # 2**4096: 4097 bits
        ("1/(2**64)**64 > 0", "error"),
        ("t**64 >= 0", "proved"),
        ("t**65 >= 0", "error"),
    ],
)
def test_numbers_and_exponents_are_bounded_where_docs_say(text, verdict):
    """docs/claims.md: an exponent at most 64 in magnitude, a number the literals make at most 4096
    bits in its numerator and its denominator; past either, an error naming what is too large."""
    docs = docs_words("claims.md")
    assert "an exponent is at most 64 in magnitude, a number the literals make at most 4096 bits" in docs
    found = check(Claim(text, layer="layernorm"))
    assert found.verdict == verdict, found.detail
    if verdict == "error":
        assert "too large" in found.detail


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("exp(20000) > 0", "exp() of a number beyond 10**4 in magnitude at column 1"),
        ("exp(-20000) > 0", "exp() of a number beyond 10**4 in magnitude at column 1"),
        ("exp(1, 20000) > 0", "exp() at column 1 takes 1 to 1 arguments, got 2"),
    ],
)
def test_exp_of_a_number_past_ten_thousand_is_refused_and_so_is_a_second_argument(text, message):
    """exp's argument, not whatever follows it, is what is too large; exp takes one argument."""
    found = check(Claim(text, layer="layernorm"))
    assert (found.verdict, found.detail) == ("error", message)
    assert check(Claim("exp(10000) > 0", layer="layernorm")).verdict == "proved"


def test_an_unexpected_error_while_checking_is_an_error_verdict_naming_it_in_at_most_500_characters(monkeypatch):
    """A failure nothing anticipated is no verdict: "error", saying which exception and what it
    said, cut to 500 characters (a message can quote a whole expression)."""
    from derivations.claims import checker

    def broken(*arguments, **named):
        raise ZeroDivisionError("the message " + "x" * 1000)

    monkeypatch.setattr(checker, "_check", broken)
    found = check(Claim("spectral_norm <= 1/sqrt(epsilon)", "layernorm"))
    assert found.verdict == "error"
    assert found.detail.startswith("undecided: ZeroDivisionError: the message xxx")
    assert len(found.detail) == 500


@pytest.mark.parametrize(("k", "power"), [(-666, -104), (-740, 232), (37, 1), (0, 0)])
def test_a_counterexample_s_pattern_input_is_the_nearest_float_to_each_exact_entry(k, power):
    """x = (-t, 0, t) at a sampled t = k/100 * 10**power: each entry the float nearest its exact
    value (rounding a 17-digit decimal to a float rounds twice, an ulp off at the first two)."""
    from derivations.claims.checker import pattern_input

    amplitude = sp.Rational(k, 100) * sp.Rational(10) ** power
    values = (-sp.Symbol("t", real=True), sp.Integer(0), sp.Symbol("t", real=True))
    exact = [-amplitude, 0, amplitude]
    found = pattern_input(values, amplitude)
    assert found == [float(sp.Rational(v)) for v in exact]
    # float(Rational) is the nearest float: no float between the value and its neighbours is nearer.
    for value, entry in zip(exact, found, strict=True):
        for neighbour in (np.nextafter(entry, np.inf), np.nextafter(entry, -np.inf)):
            assert abs(sp.Rational(entry) - value) <= abs(sp.Rational(float(neighbour)) - value)


def test_a_statistic_the_assumptions_fix_is_given_by_the_counterexample_s_x_not_beside_it():
    """Under q == 1 the counterexample is x with q = 1: q is x's, not a coordinate of its own
    (beside x it would read as a second, independent value)."""
    found = check(Claim("spectral_norm == 1", "layernorm", ("q == 1",)))
    assert found.verdict == "refuted", found.detail
    example = found.counterexample
    assert "q" not in example
    assert np.var(np.array(example["x"])) == 1.0


@pytest.mark.parametrize("bounds", [("epsilon >= 1/4", "epsilon <= 2"), ("epsilon >= 3", "epsilon <= 7")])
def test_a_claim_on_a_bounded_interval_of_epsilon_is_decided_at_its_ends_and_inside(bounds):
    """An interval with rational ends: its ends, 1 above the lower and 1/2 below the upper."""
    found = check(Claim("spectral_norm <= 1/sqrt(epsilon)", "layernorm", bounds))
    assert found.verdict == "proved", found.detail
    assert "z3 agrees" in found.detail


@pytest.mark.parametrize(
    ("term", "asked"),
    [("q**12", True), ("q**13", False), ("q**(1/3)", True), ("q**(1/4)", True), ("q**(1/5)", False)],
)
def test_z3_is_given_powers_up_to_the_twelfth_and_roots_up_to_the_fourth_and_says_so_past_them(term, asked):
    """docs/claims.md: a power beyond the 12th (a product of that many factors) and a root beyond
    the 4th (a variable r with r**degree equal to the radicand, even of a nonnegative radicand) are
    outside the fragment z3 is given, and the verdict says so; SymPy's proof stands either way."""
    assert "a power beyond the 12th, a root beyond the 4th" in docs_words("claims.md")
    found = check(Claim(f"{term} + q >= 0", "layernorm"))
    assert found.verdict == "proved", found.detail
    if asked:
        assert "z3 agrees" in found.detail
    else:
        kind = "root" if "/" in term else "power"
        assert f"z3 not asked (outside its fragment: the {kind} {term})" in found.detail


@pytest.mark.parametrize("size", [2, 3, 5])
@pytest.mark.parametrize("kind", [0, 1])
def test_an_exact_input_has_the_mean_and_the_variance_or_mean_square_asked(size, kind):
    """The x a pinned claim is decided at, and a counterexample's: mu, and q or r, exactly."""
    from derivations.claims.checker import exact_input

    half = sp.Rational(1, 2)
    for values, variance in [
        ({"mu": 3, "q": half}, half),
        ({"mu": 3, "r": 10}, 1),  # r = q + mu**2
        ({"r": half}, half),
        ({"mu": -2}, 0),
    ]:
        x = exact_input({name: sp.sympify(value) for name, value in values.items()}, size, kind)
        mean = sum(x) / size
        assert len(x) == size
        assert mean == values.get("mu", 0)
        assert sp.simplify(sum((entry - mean) ** 2 for entry in x) / size - variance) == 0
        if "r" in values:
            assert sp.simplify(sum(entry**2 for entry in x) / size - values["r"]) == 0


@pytest.mark.parametrize(("count", "read"), [(1, False), (2, True), (8, True), (9, False)])
def test_max_and_min_of_scalars_take_two_to_eight(count, read):
    """docs/claims.md: max(e, ...) and min(e, ...) take 2 to 8 scalars; others are refused by count."""
    assert "`max(e, ...)` and `min(e, ...)` take 2 to 8 scalars." in docs_words("claims.md")
    for name in ("max", "min"):
        terms = ", ".join(f"epsilon + {m}" for m in range(count))
        found = check(Claim(f"{name}({terms}) >= 0", "layernorm"))
        if read:
            assert found.verdict == "proved", found.detail
        else:
            assert found.verdict == "error"
            assert f"{name}() at column 1 takes 2 to 8 arguments, got {count}" in found.detail


@pytest.mark.parametrize("assumptions", [(), ("n >= 6",)])
def test_a_supported_verdict_counts_the_explicit_points_it_states(assumptions):
    """The "up to N points" said is what the explicit inputs take: with only n >= 6 admitted, the sizes are one
    group with one budget, and no larger size adds a point (it said 85 and sampled 84)."""
    verdict = check(Claim("norm(J, oo) == norm(J.T, oo)", assumptions=assumptions))
    assert verdict.verdict == "supported", verdict.detail
    checked = int(re.search(r"no violation at (\d+) sampled points", verdict.detail).group(1))
    stated = int(re.search(r"up to (\d+) points", verdict.detail).group(1))
    assert checked == stated == 84  # 14 inputs of 6 points each: the first whole inputs past 80


def test_the_numeric_confirmation_tells_apart_sides_1_5e_9_apart():
    """The lambdified functions agree with each other to 1e-9 relative: a refutation whose two
    sides differ by 1.5e-9 of their size is confirmed numerically, not left undecided."""
    claim = Claim("slope_at_zero == slope_at_zero * (1 + 15/10**10)")
    found = check(claim)
    assert found.verdict == "refuted", found.detail
    said = confirm(claim, found.counterexample)
    assert said.startswith("confirmed numerically"), said


def test_the_numeric_confirmation_does_not_tell_apart_sides_float64_cannot():
    """epsilon**8 == 0 is false, but at epsilon = 1e-40 its left side is 1e-320, a subnormal no
    more than rounding away from 0: NumPy cannot confirm the refutation there, and says so; at
    epsilon = 1/4 it can."""
    claim = Claim("epsilon**8 == 0", "layernorm")
    assert confirm(claim, {"epsilon": 1e-40}).startswith("NOT confirmed numerically")
    assert confirm(claim, {"epsilon": 0.25}).startswith("confirmed numerically")


def test_with_every_scalar_fixed_each_explicit_input_is_one_point_up_to_the_budget():
    """epsilon = 1/4 leaves x alone to sample: one point per explicit input, as many inputs as the
    budget of points (sampling.MAX_EXPLICIT), within the "up to" stated."""
    from derivations.claims import sampling

    verdict = check(Claim("norm(J, oo) == norm(J.T, oo)", assumptions=("epsilon == 1/4",)))
    assert verdict.verdict == "supported", verdict.detail
    checked = int(re.search(r"no violation at (\d+) sampled points", verdict.detail).group(1))
    stated = int(re.search(r"up to (\d+) points", verdict.detail).group(1))
    assert checked == sampling.MAX_EXPLICIT <= stated


@pytest.mark.parametrize(
    ("assumption", "claim"),
    [("epsilon == 0", "norm(J, oo) * sqrt(q) <= 3"), ("epsilon >= 0", "norm(J, oo) * sqrt(q + epsilon) <= 3")],
)
def test_a_held_matrix_is_in_the_domains_symbols_where_an_assumption_changes_them(assumption, claim):
    """|J|_oo sqrt(q + epsilon) is at most 3 (the row sums of a projector): where epsilon is fixed at 0
    (q is then positive) or may be 0, J's entries are taken in the domain's q and epsilon, not in
    symbols of the same names sampled apart (J at a random q gave 120 at x = (-1, 0))."""
    verdict = check(Claim(claim, assumptions=(assumption,)))
    assert verdict.verdict == "supported", verdict.detail


def test_a_held_matrix_at_epsilon_zero_and_n_2_is_zero():
    """At n = 2, I - 11^T/2 - y y^T/2 = 0: the refutation shows |J|_oo sqrt(q) = 0 exactly."""
    verdict = check(Claim("norm(J, oo) * sqrt(q) >= 1/2", assumptions=("epsilon == 0",)))
    assert verdict.verdict == "refuted", verdict.detail
    assert verdict.counterexample["n"] == 2
    assert "lhs = 0, rhs = 0.50000000" in verdict.detail


@pytest.mark.parametrize("size", [2, 3, 4, 7])
@pytest.mark.parametrize("kind", [0, 1])
@pytest.mark.parametrize(
    "values",
    [{"mu": sp.Rational(3, 2), "q": sp.Integer(2)}, {"r": sp.Integer(5), "mu": sp.Integer(-1)}, {"r": sp.Integer(3)}],
)
def test_a_counterexamples_input_has_exactly_the_mean_and_variance_it_was_given(size, kind, values):
    """checker.exact_input: x with mean mu and variance q (or mean square r), in exact arithmetic;
    an odd kind reverses it."""
    from derivations.claims.checker import exact_input

    x = exact_input(values, size, kind)
    mean = sp.simplify(sum(x) / size)
    variance = sp.simplify(sum((e - mean) ** 2 for e in x) / size)
    assert mean == values.get("mu", 0)
    assert variance == values.get("q", values.get("r", 0) - values.get("mu", 0) ** 2)
    assert x == (sorted(x) if kind == 0 else sorted(x, reverse=True))


@pytest.mark.parametrize("text", ["0 + epsilon > 0", "epsilon - 0 > 0", "1 + 0 * n > 0"])
def test_scalars_of_any_kind_add_a_zero_among_them(text):
    """A sum of scalars is a scalar whatever SymPy type each side has (the integer 0, a symbol)."""
    assert check(Claim(text)).verdict == "proved"


@pytest.mark.parametrize(
    ("text", "layer"),
    [("q >= 0", "layernorm"), ("s >= sqrt(epsilon)", "layernorm"), ("sigma_u >= 0", "layernorm_std_eps")],
)
def test_a_claim_on_statistics_alone_is_quantified_over_the_inputs_they_are_of(text, layer):
    """q is a statistic of x: a claim naming it (or s) is over every x in R^n and n >= 2, never over
    q as a free symbol (which would allow values no input has)."""
    found = check(Claim(text, layer))
    assert found.verdict == "proved"
    assert found.detail.startswith("proved for all x in R^n, n >= 2, epsilon > 0."), found.detail


@pytest.mark.parametrize("name", ["A", "H", "B", "Ja", "I2"])
def test_a_capital_name_that_is_not_j_or_i_is_unknown_not_read_as_either(name):
    """Only J is the Jacobian and I the identity: another matrix-like name (H, A) is an error
    naming it, never a claim about J."""
    verdict = check(Claim(f"norm({name}, 2) <= 1/sqrt(epsilon)", "layernorm"))
    assert verdict.verdict == "error"
    assert f"unknown name '{name}' at column 6" in verdict.detail


@pytest.mark.parametrize(
    ("removed", "left"),
    [
        (sp.FiniteSet(2), sp.Range(3, 6)),
        (sp.Interval(2, 3), sp.Range(4, 6)),
        (sp.Interval(0, 10), sp.EmptySet),
    ],
)
def test_the_sizes_left_of_a_bounded_range_of_n_are_the_ones_not_taken_out(removed, left):
    """n in 2..5 (an assumption n <= 5) with its smallest sizes taken out by a case before: the
    rest is the sizes not taken out, no more (its end kept), and none where all are."""
    from derivations.claims.proof import _normalize

    assert _normalize(sp.Complement(sp.Range(2, 6), removed, evaluate=False)) == left
    assert _normalize(sp.Complement(sp.Range(2, sp.oo), sp.FiniteSet(2, 3))) == sp.Range(4, sp.oo)


def test_a_dyt_refutation_on_the_pattern_is_confirmed_with_the_gain_and_bias_it_gives():
    """DyT has no epsilon: its response at t takes the counterexample's gamma and beta as the gain
    and bias at the pattern's coordinate (`confirm.Example.scalars`), and re-checks the claim."""
    verdict = check(Claim("response <= 0.5 * t", "dyt", assumptions=("t > 0",)), confirm)
    assert verdict.verdict == "refuted", verdict.detail
    assert "confirmed numerically" in verdict.detail


def test_a_free_scalar_the_counterexample_does_not_give_is_named_not_confirmed():
    """The numeric re-check takes a free scalar (a, b) from the counterexample only: one it does
    not give is named (not a KeyError's bare name), and the refutation is not confirmed."""
    found = confirm(Claim("q <= a", "layernorm"), {"x": [1.0, 2.0, 4.0], "epsilon": 0.25})
    assert found == "not confirmed numerically: no numeric value for a"
