"""What Python and Jupyter show: a short one-line repr for a verdict, a claim, a layer, a formula and a
layer's formulas; Markdown and HTML for Jupyter; ``dir()`` and docstrings of the numeric functions;
and an import of `derivations` that leaves the environment as it was."""

import doctest
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

import numeric
from derivations import LAYERS, Formula, Formulas, formula, formulas
from derivations.claims import Claim, Verdict, check, checker
from derivations.core.formula import REPR

ROOT = Path(__file__).resolve().parent.parent

# A refutation as the checker gives it, built here so that its fields are known.
REFUTED = Verdict(
    Claim("spectral_norm == 1/sqrt(q + epsilon)"),
    "refuted",
    "fails at {epsilon: 0.25, n: 2, q: 1, x: [-1.0, 1.0]} (claimed for all x in R^n, n >= 2, epsilon > 0): "
    "lhs = 0.17888544, rhs = 0.89442719",
    counterexample={"epsilon": 0.25, "n": 2, "q": 1, "x": [-1.0, 1.0]},
    quantities=("layernorm.spectral_norm",),
    quantifier="for all x in R^n, n >= 2, epsilon > 0",
    audit="the independent audit confirms it there in ball arithmetic (false there)",
)


def one_line(text: str, limit: int = 130) -> bool:
    return "\n" not in text and len(text) <= limit and text.startswith("<") and text.endswith(">")


# --- verdicts and claims -----------------------------------------------------------------------


def test_a_verdicts_repr_is_one_short_line():
    assert repr(REFUTED) == "<Verdict refuted: spectral_norm == 1/sqrt(q + epsilon) [layernorm]>"
    assert repr(REFUTED.claim) == "<Claim spectral_norm == 1/sqrt(q + epsilon) [layernorm]>"
    claim = Claim("slope_at_zero <= 1", "rmsnorm", ("epsilon >= 1",), id="c7")
    assert repr(claim) == "<Claim slope_at_zero <= 1 [rmsnorm] assuming epsilon >= 1 (c7)>"
    # Every id but the default one is shown, whichever side of "claim" it sorts on.
    for name in ("a", "claims", "slope", "z9"):
        assert repr(Claim("slope_at_zero <= 1", "rmsnorm", id=name)) == f"<Claim slope_at_zero <= 1 [rmsnorm] ({name})>"


def test_a_verdicts_repr_escapes_control_characters_and_is_cut_to_one_line():
    verdict = Verdict(Claim("norm(y) <= 1\n\x1b[31m" + " + 1" * 200), "error", "boom\nagain")
    shown = repr(verdict)
    assert one_line(shown), shown
    assert "\\n\\x1b[31m" in shown
    assert shown.endswith("...>")
    assert len(shown) == REPR + len(": >")  # the head and the claim share its 100 characters
    assert one_line(repr(verdict.claim)), repr(verdict.claim)


def test_a_verdicts_html_writes_every_control_character_of_what_it_was_given_as_an_escape():
    """A claim's text and layer come from the user (a layer that is not one is an error verdict
    that names it): a newline or an ANSI escape in either shows as its escape, in HTML too."""
    verdict = check(Claim("slope_at_zero\n== 1", layer="bad\nlayer\x1b[31m"))
    assert verdict.verdict == "error"
    shown = verdict._repr_html_()
    assert "\n" not in shown, shown
    assert "\x1b" not in shown, shown
    assert "<code>slope_at_zero\\n== 1</code> on <code>bad\\nlayer\\x1b[31m</code>" in shown


@pytest.mark.parametrize(("size", "entries", "more"), [(5, 5, False), (6, 6, False), (7, 6, True), (9, 6, True)])
def test_a_refuted_vectors_sides_show_their_first_six_entries_and_an_ellipsis_only_for_more(size, entries, more):
    """A refutation shows both sides at the counterexample: a vector's first six entries, then
    "..." where it has more (`checker._apart`, to as many digits as tell the sides apart)."""
    left = [sp.Integer(m + 1) for m in range(size)]
    for side in checker._apart(left, [-e for e in left]):
        items = side.removeprefix("[").removesuffix("]").split(", ")
        assert (items[-1] == "...") == more, side
        assert len(items) - more == entries, side


def test_a_verdict_shows_its_quantifier_and_counterexample_as_markdown():
    shown = REFUTED._repr_markdown_()
    lines = shown.splitlines()
    assert lines[0] == "**refuted**: `spectral_norm == 1/sqrt(q + epsilon)` on `layernorm`"
    assert "*quantifier*: for all x in R^n, n \\>= 2, epsilon \\> 0" in lines
    table = [line for line in lines if line.startswith("|")]
    assert table == [
        "| counterexample | value |",
        "|---|---|",
        "| `epsilon` | `0.25` |",
        "| `n` | `2` |",
        "| `q` | `1` |",
        "| `x` | `[-1.0, 1.0]` |",
    ]
    assert "lhs = 0.17888544" in lines[-1]
    assert "\\[-1.0, 1.0\\]" in lines[-1]


def test_a_verdict_shows_as_html_escaped():
    shown = REFUTED._repr_html_()
    assert shown.startswith("<p><b>refuted</b>: <code>spectral_norm == 1/sqrt(q + epsilon)</code>")
    assert "<th>counterexample</th>" in shown
    assert "<td><code>[-1.0, 1.0]</code></td>" in shown
    assert "n &gt;= 2" in shown
    assert "n >= 2" not in shown


def test_markdown_shows_what_a_claim_says_literally():
    """A claim's markup characters (``*``, ``_``, ``|``, ``$``, backticks) are text, not markup."""
    verdict = Verdict(
        Claim("x**2 | `y` $z$", assumptions=("t_1 > 0",), expect="proved"), "error", "not *bold* _nor_ $math$"
    )
    shown = verdict._repr_markdown_()
    head, *rest = shown.splitlines()
    assert head == "**error** (expected proved: NOT MET): ``x**2 | `y` $z$`` on `layernorm`"
    assert "*assuming*: t\\_1 \\> 0" in rest  # no quantifier: the assumptions said
    assert rest[-1] == "not \\*bold\\* \\_nor\\_ \\$math\\$"
    assert "| counterexample" not in shown


def test_a_checked_claim_shows_as_the_checker_decided_it():
    verdict = check(Claim("slope_at_zero == 1/sqrt(epsilon)"))
    assert repr(verdict) == "<Verdict proved: slope_at_zero == 1/sqrt(epsilon) [layernorm]>"
    assert verdict.quantifier in verdict._repr_markdown_().replace("\\", "")
    assert "counterexample" not in verdict._repr_html_()


# --- layers --------------------------------------------------------------------------------------


def test_a_layers_repr_is_its_kind_key_and_title():
    """Every kind of layer (a wrapper's dataclass would write a dump of every field) is one line."""
    kinds = set()
    for key, layer in LAYERS.items():
        shown = repr(layer)
        assert one_line(shown), shown
        assert shown.startswith(f"<{type(layer).__name__} {key}: {layer.title[:20]}")
        assert "statistics=" not in shown
        kinds.add(type(layer).__name__)
    assert {"Layer", "Affine", "Grouped", "Regimes", "ElementwiseAffine", "Reparametrized"} <= kinds


def test_a_layer_shows_its_title_definition_and_conventions():
    layer = LAYERS["layernorm_std_eps_biased"]
    shown = layer._repr_markdown_()
    lines = shown.splitlines()
    assert lines[0] == f"**{layer.title}** (`layernorm_std_eps_biased`)"
    assert "- $y_i = \\frac{- \\mu + {x}_{i}}{\\sigma_b + \\varepsilon}$: the output entry" in lines
    assert "- $\\mu = \\frac{1}{n} \\sum_{j=1}^{n} {x}_{j}$: mean of the entries" in lines
    assert "- $\\sigma_b = \\sqrt{q}$: biased standard deviation" in lines
    assert "Computed exactly by:" in lines
    assert "- graph and vision codebases: `(x - mean) / (x.std(-1, unbiased=False) + eps)`" in lines
    assert any(line.startswith("- `slope_at_zero`: sigma\\_b = ") for line in lines)
    html = layer._repr_html_()
    assert "<li>\\(\\sigma_b = \\sqrt{q}\\): biased standard deviation</li>" in html
    assert "<code>(x - mean) / (x.std(-1, unbiased=False) + eps)</code>" in html


def test_a_layer_with_inputs_besides_x_says_them():
    assert "`gain` (per feature); `bias` (per feature); `alpha` (a scalar)" in LAYERS["dyt"]._repr_markdown_()
    assert "`p` (the first k = ceil(p n) entries; default 1/16)" in LAYERS["prmsnorm"]._repr_markdown_()


# --- formulas ------------------------------------------------------------------------------------


def test_formulas_is_a_tuple_that_shows_as_a_table():
    found = formulas("layernorm")
    assert type(found) is Formulas
    assert isinstance(found, tuple)
    assert found == tuple(found)
    assert hash(found) == hash(tuple(found))
    assert type(found[1:3]) is Formulas
    assert found[1:3] == tuple(found)[1:3]
    assert isinstance(found[0], Formula)
    shown = repr(found)
    assert one_line(shown), shown
    assert shown.startswith(f"<Formulas layernorm ({len(found)}): definition, response, slope")
    table = found._repr_markdown_().splitlines()
    assert table[:2] == ["| name | formula | established |", "|---|---|---|"]
    assert len(table) == len(found) + 2
    for row, f in zip(table[2:], found, strict=True):
        # No | inside the math: a Markdown table cell would end there.
        name, math, established = row[2:-2].split(" | ")
        assert (name, established) == (f"`{f.qualified}`", f.established.value)
        assert math.startswith("$")
        assert math.endswith("$")
    assert "\\vert" in table[2 + [f.name for f in found].index("slope_at_zero")]
    html = found._repr_html_()
    assert html.count("<tr>") == len(found) + 1
    assert "\\(\\|J\\|_{2}" in html


def test_a_formulas_repr_is_one_line():
    assert repr(formula("rmsnorm.slope_at_zero")) == "<Formula rmsnorm.slope_at_zero = 1/sqrt(epsilon)>"
    assert repr(formula("layernorm.spectral_bound")) == "<Formula layernorm.spectral_bound <= 1/sqrt(epsilon)>"
    for f in formulas("layernorm"):
        assert one_line(repr(f)), repr(f)
    assert repr(Formulas()) == "<Formulas of no layer (0)>"


@pytest.mark.parametrize("relation", [sp.Eq, sp.Le, sp.Lt, sp.Ge, sp.Gt, sp.Ne])
def test_a_formulas_repr_shows_its_own_relation(relation):
    """Only an equation's == is shown as =; every other relation (a user's formula may state any)
    keeps its own sign."""
    from derivations.core.formula import Established

    q = sp.Symbol("q", positive=True)
    statement = relation(sp.Symbol("lhs"), 1 / sp.sqrt(q))
    shown = repr(Formula("bound", "", statement, (), Established.ALL_N, "", "", "test"))
    sign = "=" if relation is sp.Eq else statement.rel_op
    assert shown == f"<Formula test.bound {sign} 1/sqrt(q)>"


# --- numeric ---------------------------------------------------------------------------------------


def test_dir_of_a_numeric_layer_lists_its_functions():
    names = set(numeric.layernorm.LAYER.names())
    assert {"response", "slope_at_zero", "spectral_norm", "vjp", "forward"} <= names
    assert names <= set(dir(numeric.layernorm))
    assert names <= set(dir(numeric.layernorm.LAYER))
    assert names <= set(dir(numeric))  # the bare names are the core layer's
    assert "LAYER" in dir(numeric.layernorm)


def test_a_numeric_function_shows_its_signature_and_formula():
    assert str(inspect.signature(numeric.layernorm.response)) == "(t, epsilon, /)"
    assert str(inspect.signature(numeric.layernorm_affine.vjp)) == "(x, epsilon, dy, gain=None, bias=None, /)"
    assert str(inspect.signature(numeric.prmsnorm.second_moment)) == "(x, epsilon, /, *, p=None)"
    shown = numeric.layernorm.slope_at_zero._repr_markdown_()
    assert shown.startswith("`numeric.layernorm.slope_at_zero(epsilon)`: the slope at t = 0")
    assert "$$\\operatorname{slope\\_at\\_zero}(\\varepsilon) = \\frac{1}{\\sqrt{\\varepsilon}}$$" in shown


def test_a_numeric_functions_docstring_has_the_formula_args_returns_raises_example_and_paper():
    doc = numeric.layernorm.spectral_norm.__doc__
    sections = [line for line in doc.splitlines() if re.fullmatch(r"[A-Z][a-z]+:|\.\. math::", line)]
    assert sections == [".. math::", ".. math::", "Args:", "Returns:", "Raises:", "Example:", "References:"]
    assert "\\operatorname{spectral\\_norm}(x, \\varepsilon) = \\begin{cases}" in doc
    assert "  x: inputs, array_like of shape (..., n)" in doc
    assert "https://arxiv.org/abs/1607.06450" in doc
    assert doc.endswith("``derivations.formula('layernorm.spectral_norm')``.")
    # The class keeps a docstring of its own.
    assert type(numeric.layernorm.spectral_norm).__doc__.startswith("A registry quantity's numeric function")
    assert inspect.getdoc(numeric.layernorm.vjp).startswith("The input gradient (J^T g)_k")


def run_docstrings(key: str) -> int:
    """Run the examples of every function's docstring of layer ``key``; the number run."""
    layer = numeric.facade(key)
    parser, ran = doctest.DocTestParser(), 0
    for name in layer.names():
        test = parser.get_doctest(getattr(layer, name).__doc__ or "", {}, f"numeric.{key}.{name}", None, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        failures: list[str] = []
        result = runner.run(test, out=failures.append)
        assert result.failed == 0, "".join(failures)
        ran += result.attempted
    return ran


@pytest.mark.parametrize("key", list(LAYERS))  # the core layer and one other in make test (tests/grids.py)
def test_the_numeric_docstrings_examples_pass(key):
    assert run_docstrings(key) > (10 if key == "layernorm" else 0) or key == "dyt"  # dyt's functions: its own


# --- the environment ---------------------------------------------------------------------------------


def imported(code: str, **set_: str) -> list[str]:
    environment = {name: value for name, value in os.environ.items() if name != "SYMPY_CACHE_SIZE"}
    run = subprocess.run(
        [sys.executable, "-c", code], env={**environment, **set_}, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return run.stdout.split()


def test_importing_derivations_leaves_the_environment_as_it_was():
    code = "import os; before = dict(os.environ); import derivations; print(dict(os.environ) == before)"
    assert imported(code) == ["True"]


def test_sympy_gets_its_cache_size_and_the_environment_keeps_none():
    shown = (
        "print(os.environ.get('SYMPY_CACHE_SIZE'), sympy.core.cache.SYMPY_CACHE_SIZE, "
        "{}.CacheSize in map(type, sys.meta_path))"
    )
    code = "import os, sys, derivations, sympy, sympy.core.cache; " + shown.format("derivations")
    assert imported(code) == ["None", "100000", "False"]  # the finder is gone once it served
    assert imported(code, SYMPY_CACHE_SIZE="2000") == ["2000", "2000", "False"]  # the user's own kept
    first = "import os, sys, sympy, sympy.core.cache, derivations; " + shown.format("derivations")
    assert imported(first) == ["None", "1000", "False"]  # too late: nothing done


def test_the_cache_size_loader_is_the_real_one_for_everything_else():
    """sympy.core.cache's loader answers get_source and get_code as the real loader does (a
    traceback through the module shows its lines), and has no attribute the real one lacks."""
    code = (
        "import derivations, importlib.util, sympy.core.cache as c; "
        "spec = c.__spec__; loader = spec.loader; "
        "print(type(loader).__name__, loader.get_source(spec.name) == open(c.__file__).read(), "
        "loader.get_code(spec.name).co_filename == c.__file__, hasattr(loader, 'no_such_attribute'))"
    )
    assert imported(code) == ["_SizedLoader", "True", "True", "False"]


def test_a_misspelt_layer_or_formula_in_python_names_the_nearest():
    """LAYERS['layrnorm'] was a bare KeyError, formula('...slop') listed names and suggested none,
    and LAYERS printed as an object address."""
    import derivations

    with pytest.raises(KeyError, match="did you mean 'layernorm'") as raised:
        derivations.LAYERS["layrnorm"]
    assert raised.value.args == ("layrnorm",)  # still the key, for code that reads it
    with pytest.raises(ValueError, match="did you mean 'slope'"):
        derivations.formula("layernorm.slop")
    assert repr(derivations.LAYERS).startswith("<Catalog of 14 layers: layernorm, layernorm_affine,")


def test_a_verdict_echoes_at_most_the_claim_languages_length_of_its_claim():
    from derivations.claims import Claim, check
    from derivations.claims.render import ECHOED, verdict_text

    text = "norm(y) <= " + "+".join(["1"] * 3000)
    shown = verdict_text(check(Claim(text, "layernorm")))
    assert shown.startswith("[claim] error: norm(y) <= 1+1")
    assert len(shown.splitlines()[0]) < ECHOED + 40


def test_a_verdict_echoes_a_claim_of_the_languages_longest_whole_and_cuts_a_longer_one():
    """The claim language takes up to MAX_LENGTH characters: a claim that long is echoed whole in
    its verdict, one a character longer (an error verdict) is cut to that many, ending in ..."""
    from derivations.claims.language import MAX_LENGTH
    from derivations.claims.render import verdict_text

    for size, cut in ((MAX_LENGTH, False), (MAX_LENGTH + 1, True)):
        text = "norm(y) <= " + "1" * (size - len("norm(y) <= "))
        echoed = verdict_text(Verdict(Claim(text, "layernorm"), "error", "")).splitlines()[0]
        claim = echoed.removeprefix("[claim] error: ").removesuffix("  [layernorm]")
        assert claim == (text[: MAX_LENGTH - 3] + "..." if cut else text)
        assert len(claim) == MAX_LENGTH


def test_html_inline_escapes_the_text_around_every_code_span():
    """Text written with `code spans` (a layer's users, a verdict's detail) as HTML: each span a
    <code>, and every character outside the spans escaped, after the last span too."""
    from derivations.core.formula import html_inline

    found = html_inline("a < b, `x & y` then c > d & e")
    assert found == "a &lt; b, <code>x &amp; y</code> then c &gt; d &amp; e"
    assert html_inline("no <span> here") == "no &lt;span&gt; here"


def test_markdown_inline_keeps_every_code_span_and_escapes_the_text_around_it():
    """The same as Markdown: each span kept as a code span, every character outside escaped where
    Markdown would read it, from the first to the last."""
    from derivations.core.formula import markdown_inline

    assert markdown_inline("x < 1, see `derivations.formula` here") == "x \\< 1, see `derivations.formula` here"
    assert markdown_inline("*plain* text") == "\\*plain\\* text"


def test_a_formulas_repr_is_one_line_cut_to_a_hundred_characters_after_its_head():
    """<Formula key.name = ...>: the head and what follows it together at most 100 characters,
    the rest cut with "..." (the separator and the closing > besides); the long ones are cut."""
    from derivations import LAYERS, catalog

    shown = [(f.qualified, repr(f)) for key in LAYERS for f in catalog.formulas(key)]
    assert all(one_line(s, 103) for _, s in shown)
    cut = [(name, s) for name, s in shown if s.endswith("...>")]
    assert len(cut) > 10
    for name, s in cut:
        colon = s[len(f"<Formula {name}")] == ":"
        assert len(s) == 100 + colon + 2, s  # 100, the colon after a name, a space and the closing >


def test_escaped_keeps_printable_ascii_and_the_space_and_writes_every_other_character_as_its_escape():
    from derivations.claims.render import escaped

    printable = "".join(chr(code) for code in range(0x20, 0x7F))
    assert escaped(printable) == printable
    assert escaped("a\x7fb\x00c\x1fd\te\u00e9f\u2028") == "a\\x7fb\\x00c\\x1fd\\te\\xe9f\\u2028"


@pytest.mark.parametrize(("power", "digits"), [(5, 8), (10, 17), (20, 30), (45, 60), (70, 60)])
def test_a_refuted_scalars_sides_show_8_17_30_or_at_most_60_digits_as_it_takes_to_tell_them_apart(power, digits):
    """1 + 10^-power beside 1: the fewest of 8, 17, 30 and 60 significant digits that differ; at
    10^-70 even 60 do not, and 60 are shown."""
    from derivations.claims import checker

    left, right = checker._apart(1 + sp.Rational(1, 10**power), sp.Integer(1))
    assert right == "1." + "0" * (digits - 1)
    assert left == ("1." + "0" * (power - 1) + "1" + "0" * (digits - 1 - power) if power < digits else right)
