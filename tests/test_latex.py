"""LaTeX for a paper: the reader's form, `--format latex`, the notation options, and pdflatex."""

import itertools
import json
import os
import re
from pathlib import Path

import pytest
import sympy as sp
from latex_lines import unbroken

from derivations import LAYERS, QUANTITIES, formula, formulas
from derivations.__main__ import main
from derivations._printer import ReaderPrinter
from derivations.derive import backward
from derivations.notation import DEFAULT, Notation
from derivations.render import FORMATS, standalone
from derivations.symbols import beta, c_vec, epsilon, gamma, n, ones, q, s, t
from figures import _pdflatex

needs_pdflatex = pytest.mark.skipif(not _pdflatex.available(), reason="pdflatex is not on PATH")

u = sp.Function("u_3")(t)


def _limits(upper: sp.Expr, lower: sp.Expr) -> sp.And:
    return sp.And(sp.Eq(sp.Limit(u, t, sp.oo), upper), sp.Eq(sp.Limit(u, t, -sp.oo), lower))


# (expression, the exact LaTeX the reader's printer gives).
PRINTED = [
    pytest.param(
        -c_vec * c_vec.T / (n * s**3) - ones * ones.T / (n * s) + sp.Identity(n) / s,
        r"\frac{1}{s} \mathbb{I} - \frac{1}{n s} \mathbf{1} \mathbf{1}^{T} - \frac{1}{n s^{3}} c c^{T}",
        id="identity first, corrections by denominator degree, minus signs",
    ),
    pytest.param(1 / sp.sqrt(epsilon + q), r"\frac{1}{\sqrt{q + \varepsilon}}", id="epsilon after the leading term"),
    pytest.param(sp.sqrt(6) / 2, r"\sqrt{\frac{3}{2}}", id="sqrt(6)/2 as one root"),
    pytest.param(sp.sqrt(6) * gamma[2] / 2, r"\sqrt{\frac{3}{2}} {\gamma}_{2}", id="a root times a symbol"),
    pytest.param(-sp.sqrt(6) / (3 * s), r"- \frac{\sqrt{\frac{2}{3}}}{s}", id="a negative root over a symbol"),
    pytest.param(sp.sqrt(2) / 2, r"\frac{\sqrt{2}}{2}", id="no root of 1/2"),
    pytest.param(3 * sp.sqrt(3) * epsilon, r"3 \sqrt{3} \varepsilon", id="no root of an integer"),
    pytest.param(
        _limits(sp.sqrt(6) / 2, -sp.sqrt(6) / 2),
        r"\lim_{t \to \pm\infty} u_{3}{\left(t \right)} = \pm \sqrt{\frac{3}{2}}",
        id="odd limits as one statement",
    ),
    pytest.param(
        _limits(beta[2] + sp.sqrt(6) * gamma[2] / 2, sp.sqrt(2) * (sp.sqrt(2) * beta[2] - sp.sqrt(3) * gamma[2]) / 2),
        r"\lim_{t \to \pm\infty} u_{3}{\left(t \right)} = {\beta}_{2} \pm \sqrt{\frac{3}{2}} {\gamma}_{2}",
        id="limits about a centre",
    ),
    pytest.param(_limits(-1, 1), r"\lim_{t \to \pm\infty} u_{3}{\left(t \right)} = \mp 1", id="decreasing limits"),
    pytest.param(
        _limits(1, 0),
        r"\begin{aligned} \lim_{t \to \infty} u_{3}{\left(t \right)} &= 1 \\ "
        r"\lim_{t \to -\infty} u_{3}{\left(t \right)} &= 0 \end{aligned}",
        id="limits that do not read simpler with +- as two lines",
    ),
    pytest.param(
        # One operation about a centre against two in the bounds (a 0-operation bound among them).
        _limits(2 * gamma[2] + beta[2], beta[2]),
        r"\lim_{t \to \pm\infty} u_{3}{\left(t \right)} = {\beta}_{2} + {\gamma}_{2} \pm {\gamma}_{2}",
        id="the +- form where it has fewer operations than the two bounds together",
    ),
    pytest.param(
        _limits(gamma[2] + 1, gamma[2]),
        r"\begin{aligned} \lim_{t \to \infty} u_{3}{\left(t \right)} &= {\gamma}_{2} + 1 \\ "
        r"\lim_{t \to -\infty} u_{3}{\left(t \right)} &= {\gamma}_{2} \end{aligned}",
        id="two bounds where the +- form has as many operations or more",
    ),
    pytest.param(
        _limits(3, 1),
        r"\begin{aligned} \lim_{t \to \infty} u_{3}{\left(t \right)} &= 3 \\ "
        r"\lim_{t \to -\infty} u_{3}{\left(t \right)} &= 1 \end{aligned}",
        id="two bounds where the +- form (2 +- 1) has as many operations, none",
    ),
    pytest.param(
        sp.And(sp.Eq(sp.Limit(u, t, sp.oo), 1), sp.Eq(sp.Limit(sp.Function("v_3")(t), t, -sp.oo), -1)),
        r"\begin{aligned} \lim_{t \to \infty} u_{3}{\left(t \right)} &= 1 \\ "
        r"\lim_{t \to -\infty} v_{3}{\left(t \right)} &= -1 \end{aligned}",
        id="the limits of two functions are two statements, never one +-",
    ),
    pytest.param(
        sp.And(sp.Eq(sp.Limit(u, t, 0), 1), sp.Eq(sp.Limit(u, t, sp.oo), -1)),
        r"\begin{aligned} \lim_{t \to 0^+} u_{3}{\left(t \right)} &= 1 \\ "
        r"\lim_{t \to \infty} u_{3}{\left(t \right)} &= -1 \end{aligned}",
        id="limits at 0 and at oo are two statements, never one +-",
    ),
]


@pytest.mark.parametrize(("expr", "expected"), PRINTED)
def test_reader_printer(expr, expected):
    assert ReaderPrinter(DEFAULT).doprint(expr) == expected


# The issue's examples, as `make derive` prints them now.
ISSUE_EXAMPLES = {
    "layernorm.jacobian": r"J = \frac{1}{s} \mathbb{I} - \frac{1}{n s} \mathbf{1} \mathbf{1}^{T} "
    r"- \frac{1}{n s^{3}} c c^{T}",
    "layernorm.slope": r"\frac{d}{d t} u_{3}{\left(t \right)} = "
    r"\frac{\varepsilon}{\left(\frac{2 t^{2}}{3} + \varepsilon\right)^{\frac{3}{2}}}",
    "layernorm_affine.asymptote": r"\lim_{t \to \pm\infty} u_{3}{\left(t \right)} = "
    r"{\beta}_{2} \pm \sqrt{\frac{3}{2}} {\gamma}_{2}",
    "layernorm.asymptote": r"\lim_{t \to \pm\infty} u_{3}{\left(t \right)} = \pm \sqrt{\frac{3}{2}}",
}


@pytest.mark.parametrize(("name", "expected"), ISSUE_EXAMPLES.items())
def test_issue_examples_print_in_the_readers_form(name, expected):
    assert formula(name).latex() == expected


BACKWARD = {q.stem for q in QUANTITIES if q.evaluate == "backward"}


# One test per layer, not per formula: the ids need no derivation at collection,
# so each xdist worker derives only the layers its own tests reach.
@pytest.mark.parametrize("key", [key for key, layer in LAYERS.items() if layer.stated])
def test_a_proved_stated_form_is_what_is_printed(key):
    layer = LAYERS[key]
    stated_formulas = [f for f in formulas(key) if f.name in layer.stated]
    assert stated_formulas, f"{key} states forms but prints none of them"
    for f in stated_formulas:
        assert f.proof, f"{f.qualified} states a form but records no proof"
        stated = layer.stated[f.name]
        # Products with g and v are stated in x and mu and printed in the statements'
        # notation (c_k = x_k - mu), like every other formula's right-hand side.
        shown = backward._shown(layer, stated) if f.name in BACKWARD else stated
        if isinstance(f.printed, sp.And):
            # The limits at +-oo print as one statement, c +- d: the stated limit at +oo is one side of it.
            assert shown in [relation.rhs for relation in f.printed.args], f.qualified
            continue
        assert ReaderPrinter(DEFAULT).doprint(shown) in f.latex(), f.qualified


@pytest.mark.parametrize("key", list(LAYERS))
def test_no_logical_and_and_no_plus_minus_pair(key):
    for f in formulas(key):
        assert r"\wedge" not in f.latex(), f.qualified
        assert "+ -" not in f.latex(), f.qualified


def _latex_blocks(out: str) -> list[str]:
    return out.strip("\n").split("\n\n")


def test_latex_format_is_one_labelled_equation_per_formula_with_its_statement_above(capsys):
    assert main(["--format", "latex", "--layer", "rmsnorm"]) == 0
    blocks = _latex_blocks(capsys.readouterr().out)
    assert len(blocks) == len(formulas("rmsnorm"))
    for block, f in zip(blocks, formulas("rmsnorm"), strict=True):
        lines = block.splitlines()
        assert lines[0] == f"% {f.qualified}: {f.statement}"
        assert lines[1].startswith(f"% Established {f.how}; ")
        # A long right-hand side is broken between terms into a multline block.
        shown = f.latex_lines()
        env = "multline" if len(shown) > 1 else "equation"
        body = [f"  {line}" + (r" \\" if index < len(shown) - 1 else "") for index, line in enumerate(shown)]
        assert lines[2:] == [rf"\begin{{{env}}}", rf"  \label{{eq:{f.qualified}}}", *body, rf"\end{{{env}}}"]
        assert unbroken(body) == f.latex()


def test_a_broken_formula_fills_each_line_before_it_starts_the_next():
    """Terms go on a line while it stays within the width: no line could have taken the next line's first term."""
    from derivations._width import width
    from derivations.core.formula import LINE

    broken = [f for key in LAYERS for f in formulas(key) if len(f.latex_lines()) > 1]
    assert broken
    for f in broken:
        # The next line starts with the term that did not fit, so the two are wider than a line.
        for line, following in itertools.pairwise(f.latex_lines()):
            assert width(line) + width(" " + following) > LINE, (f.qualified, line, following)


def test_a_formula_is_broken_once_it_is_wider_than_the_sixty_letters_the_docs_state():
    """docs/getting-started.md states the width a displayed line holds; a sum exactly that wide
    stays on one line, and one wider by less than a letter is broken before its last term."""
    from derivations._width import width
    from derivations.core.formula import Established, Formula

    docs = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"
    stated = re.search(r"wider than (\d+) typeset letters", docs.read_text())
    assert stated is not None
    line = int(stated.group(1))

    def shown(names: str) -> list[str]:
        relation = sp.Eq(sp.Symbol("y"), sp.Add(*sp.symbols(names)))
        return Formula("sum", "a sum", relation, (), Established.ALL_N, "", "", "test").latex_lines()

    # Wide letters (F, P, ... 1.25; A 1.45; n 1.2; h, u 1.15) bring 19 terms to the width exactly.
    (fits,) = shown("F P S T V Y n h u b c d e f g i j k l")
    assert width(fits) == line
    first, rest = shown("F P S T V Y n h u A c d e f g i j k l")
    assert width(first + " " + rest) == line + 0.45
    assert rest == "+ u"


def test_standalone_is_an_article_needing_only_amsmath_and_amssymb(capsys):
    assert main(["--format", "latex", "--standalone", "--layer", "rmsnorm"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("\\documentclass{article}\n\\usepackage{amsmath}\n\\usepackage{amssymb}\n\\title")
    assert out.count("\\usepackage") == 2
    assert out.rstrip().endswith(r"\end{document}")


NOTATION_FORMATS = sorted(FORMATS)


@pytest.mark.parametrize("fmt", NOTATION_FORMATS)
def test_notation_changes_the_printing_in_every_format(fmt, capsys):
    assert main(["--format", fmt, "--layer", "rmsnorm", "--notation", r"epsilon=\epsilon"]) == 0
    renamed = capsys.readouterr().out
    assert main(["--format", fmt, "--layer", "rmsnorm"]) == 0
    default = capsys.readouterr().out
    escaped = (lambda text: json.dumps(text)[1:-1]) if fmt == "json" else (lambda text: text)
    assert escaped(r"\varepsilon") in default
    assert escaped(r"\varepsilon") not in renamed
    assert renamed.replace(escaped(r"\epsilon"), escaped(r"\varepsilon")) == default


def test_notation_in_the_python_api():
    jacobian = formula("jacobian")
    assert jacobian.latex(Notation(n="d")) == jacobian.latex().replace(r"{n s", r"{d s")
    assert formula("slope_at_zero").value_latex(Notation.parse([r"epsilon=\epsilon"])) == r"\frac{1}{\sqrt{\epsilon}}"


def test_a_notation_shows_the_names_it_was_given_as_the_call_that_makes_it():
    assert repr(Notation(n="d", epsilon=r"\epsilon")) == "Notation(epsilon='\\\\epsilon', n='d')"
    assert repr(Notation()) == "Notation()"


def test_notations_are_equal_and_hash_alike_exactly_when_they_give_the_same_names():
    """However a notation is made (by keyword, from the command line's pairs, in another order),
    it equals another giving the same names, hashes as it does, and differs from one that does not."""
    parsed = Notation.parse(["epsilon=\\epsilon", "n=d"])
    by_keyword = Notation(n="d", epsilon="\\epsilon")
    assert parsed == by_keyword
    assert hash(parsed) == hash(by_keyword)
    assert len({parsed, by_keyword, Notation(n="d")}) == 2
    assert by_keyword != Notation(n="d")
    assert by_keyword != "Notation(epsilon='\\\\epsilon', n='d')"


def test_a_name_given_to_several_symbols_names_every_one_it_clashes_with():
    clash = "notation: n=k clashes with the symbol epsilon and the symbol t, which already prints as k"
    with pytest.raises(ValueError, match=f"^{clash}$"):
        Notation(n="k", t="k", epsilon="k")


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--notation", "m=d"], "notation: unknown symbol 'm'; one of n, epsilon, t, s, q, r, mu, sigma, sigma_u"),
        (["--notation", r"n=\input{x}"], r"notation: n=\input{x} is not a safe LaTeX name"),
        (["--notation", "epsilon=e}"], "notation: epsilon=e} is not a safe LaTeX name"),
        (["--notation", "n=t"], "notation: n=t clashes with the symbol t, which already prints as t"),
        (["--notation", "n=p"], "notation: n=p clashes with the homogeneity degree p, which already prints as p"),
        (["--notation", "nd"], "notation: expected SYMBOL=LATEX such as n=N; got 'nd'"),
        (["--standalone"], "--standalone applies to --format latex"),
    ],
)
def test_bad_latex_options_are_one_line_and_exit_2(argv, line, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert err.startswith(f"python -m derivations: error: {line}")
    assert len(err.strip().splitlines()) == 1


@needs_pdflatex
def test_every_formula_compiles_as_display_math_with_pdflatex():
    every = [f for key in LAYERS for f in formulas(key)]
    body = FORMATS["latex"]([f.row() for f in every])
    assert body.count(r"\label{eq:") == len(every)
    assert body.count(r"\begin{multline}") >= 1  # the long second-order formulas are broken
    compiled = _pdflatex.compile_pdf(standalone(body))  # raises on an error or an overfull box
    assert compiled.pdf.startswith(b"%PDF")
    assert _pdflatex.problems(compiled.log) == []


@needs_pdflatex
@pytest.mark.parametrize(
    "long", ["n=N_{featurespertoken}", "n=N_{featurespertokeninthelayer}", "s=S_{standarddeviation}"]
)
def test_every_formula_compiles_within_the_margin_under_a_long_notation(long, capsys):
    """A long subscript widens what a reader sees: sums, a product's sum and cases branches are
    broken by typeset width (they overflowed the margin by up to 141 pt, by source length)."""
    assert main(["--format", "latex", "--standalone", "--notation", long]) == 0
    compiled = _pdflatex.compile_pdf(capsys.readouterr().out)  # raises on an overfull box over 10 pt
    assert _pdflatex.problems(compiled.log) == []
    assert compiled.log.count("Overfull") == 0


def _subscripted(letters: str) -> list[str]:
    """--notation options that give n, epsilon, t, s, q, r and alpha the subscript ``letters``."""
    names = {"n": "N", "epsilon": r"\varepsilon", "t": r"\tau", "s": "S", "q": "Q", "r": "R", "alpha": r"\alpha"}
    return [option for key, name in names.items() for option in ("--notation", f"{key}={name}_{{{letters}}}")]


@needs_pdflatex
def test_every_formula_compiles_within_the_margin_with_a_long_subscript_on_every_symbol(capsys):
    """cases blocks whose values and conditions are too wide side by side set each condition
    below its value (l2norm_clamped.constant_response passed the margin by 33 pt)."""
    assert main(["--format", "latex", "--standalone", *_subscripted("abcdefghij")]) == 0
    compiled = _pdflatex.compile_pdf(capsys.readouterr().out)
    assert compiled.log.count("Overfull") == 0


@needs_pdflatex
def test_names_too_long_for_any_line_are_refused_and_would_pass_the_margin(capsys):
    """A fraction cannot be broken: with 15-letter subscripts on every symbol, tau over the root of
    a sum is wider than the article's line.  The article is refused in one line naming the
    formula; set without the check, pdflatex finds it past the margin."""
    options = _subscripted("abcdefghijklmno")
    with pytest.raises(SystemExit) as stop:
        main(["--format", "latex", "--standalone", *options])
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "letters wide, and a line of the article holds 72; give shorter subscripts" in err
    notation = Notation.parse(options[1::2])
    body = FORMATS["latex"]([f.row(notation) for key in LAYERS for f in formulas(key)])
    with pytest.raises(_pdflatex.LatexError, match="Overfull"):
        _pdflatex.compile_pdf(standalone(body))


@needs_pdflatex
@pytest.mark.parametrize(
    "name",
    [
        *(f"N_{{{letter * count}}}" for letter in "WM" for count in (8, 16, 24)),
        *(f"N_{{{letter * 60}}}" for letter in "mwnx"),
        "N_{" + "m" * 20 + "}",
        r"\Omega_{" + "m" * 38 + "}",
    ],
)
def test_wide_subscripts_are_set_within_the_margin_or_refused(name, capsys):
    """A capital, an m or a w is wider than a letter in math italic: n = N_{W...} with 24 W's was
    counted as 24 letters, accepted, and passed the margin by 183 pt; 60 m's by 186 pt, 60 n's by
    57 pt (a script letter is 0.82 of a text one in width, not 0.7)."""
    argv = ["--format", "latex", "--standalone", "--layer", "layernorm", "--notation", f"n={name}"]
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    if code == 0:
        assert _pdflatex.compile_pdf(out).log.count("Overfull") == 0
    else:
        assert code == 2
        assert "a line of the article holds 72" in err
        assert err.count("\n") == 1


@needs_pdflatex
@pytest.mark.parametrize(
    ("math", "problem"),
    [
        (r"x = \undefinedmacro{y}", "Undefined control sequence"),
        ("x = " + " + ".join(["y"] * 200), "Overfull \\hbox"),
    ],
)
def test_pdflatex_check_fails_on_what_a_reader_would_see(math, problem):
    source = standalone(f"\\begin{{equation}}\n  {math}\n\\end{{equation}}")
    with pytest.raises(_pdflatex.LatexError, match=problem.replace("\\", "\\\\")):
        _pdflatex.compile_pdf(source)


def test_overfull_boxes_up_to_the_limit_pass():
    log = "Overfull \\hbox (9.9pt too wide) in paragraph at lines 1--2\nOverfull \\hbox (10.1pt too wide) in x\n"
    assert _pdflatex.problems(log) == ["Overfull \\hbox (10.1pt too wide) in x"]


@pytest.mark.parametrize("width", [12, 20, 31, 45])
def test_a_long_sum_breaks_only_where_the_next_term_would_pass_the_width(width):
    """Terms of one letter: every line stays within the width (in typeset letters), and each
    break was needed (the next term did not fit)."""
    from derivations._width import width as typeset_width
    from derivations.core.formula import Established, Formula

    terms = sp.symbols("a b c d e f g h j k l m p r u w z")
    shown = Formula("sum", "", sp.Eq(sp.Symbol("y"), sp.Add(*terms)), (), Established.ALL_N, "", "", "test")
    lines = shown.latex_lines(width=width)
    assert len(lines) > 1
    for line in lines:
        assert typeset_width(line) <= width, (line, width)
    for line, following in itertools.pairwise(lines):
        # " + a": the joining space, the sign, its space and the letter.
        assert typeset_width(line) + typeset_width(" " + " ".join(following.split(" ")[:2])) > width


@pytest.mark.parametrize("script", ["2", "ij", "abc", r"\top"])
def test_a_sub_or_superscript_counts_at_script_size(script):
    """x^{ab} is x and ab at the script's size, after the caret: the base counted once."""
    from derivations._width import SCRIPT, width

    for mark in "^_":
        assert width(f"x{mark}{{{script}}}") == pytest.approx(width("x") + SCRIPT * width(script))


@pytest.mark.parametrize(
    ("spaced", "tight"),
    [("x^ 2", "x^2"), ("x_ {ij}", "x_{ij}"), (r"\frac {a}  {b}", r"\frac{a}{b}"), (r"\sqrt {y}", r"\sqrt{y}")],
)
def test_a_space_before_an_argument_takes_no_width(spaced, tight):
    """TeX skips spaces before a script's or a command's argument: x^ 2 is set as x^2."""
    from derivations._width import width

    assert width(spaced) == width(tight)


@pytest.mark.parametrize(("stray", "balanced"), [("a}b", "ab"), ("x}}yz", "xyz"), (r"\alpha}+ c", r"\alpha+ c")])
def test_a_closing_brace_with_no_group_open_takes_no_width_and_hides_nothing(stray, balanced):
    """A fragment cut from inside a group ends one that is not open there: the brace is set as
    nothing, and every letter after it still counts."""
    from derivations._width import width

    assert width(stray) == width(balanced)


@pytest.mark.parametrize("text", [r"\frac{\begin{cases}}{y}z", r"x^{\begin{cases}}y", r"\sqrt{\begin{aligned}}z"])
def test_an_environment_with_no_end_is_one_letter_and_its_group_closes_at_its_own_brace(text):
    """A fragment that opens an environment it never ends counts as one letter, as a plain
    letter in its place does; the brace after its name closes nothing around it."""
    from derivations._width import width

    plain = text.replace(r"\begin{cases}", "a").replace(r"\begin{aligned}", "a")
    assert width(text) == width(plain)


def test_spacing_commands_widen_a_line_in_tex_s_order():
    """TeX's spaces, narrowest first: \\! (negative, counted 0), \\, and \\: then \\; (3, 4 and 5 mu),
    \\quad (1 em), \\qquad (2 em); none makes a line narrower than its letters alone."""
    from derivations._width import width

    letters = width("ab")
    thin = [width(rf"a\{space}b") for space in "!,:;"]
    assert thin[0] < thin[1] <= thin[2] < thin[3]  # each space counted as itself, the letter after it apart
    assert thin[0] >= letters
    assert thin[-1] > letters
    wide = [width(rf"a \{space} b") for space in (";", "quad", "qquad")]
    assert wide == sorted(wide)
    assert len(set(wide)) == 3


def test_a_null_delimiter_takes_no_width_and_a_bracket_its_own():
    """\\left. and \\right. typeset nothing; \\left( and \\right) a bracket each."""
    from derivations._width import width

    assert width(r"\left.a\right|") == width(r"a\right|") == 2
    assert width(r"\left(a\right)") == width("(a)") == 3
    assert width(r"\left(a\right.") == width("(a") == 2


def test_a_matrix_or_cases_is_as_wide_as_its_columns_whatever_braces_its_cells_hold():
    """Columns line up at & and rows end at \\\\ outside every brace: a braced cell or a fraction
    in one changes nothing but that cell's own width."""
    from derivations._width import width

    plain = width(r"\begin{pmatrix}a & b \\ c & d\end{pmatrix}")
    assert width(r"\begin{pmatrix}{a} & b \\ c & {d}\end{pmatrix}") == plain
    assert plain < width("a & b c & d")  # two columns of one letter each, not one wide row
    first = width(r"\begin{cases}\frac{1}{2}&n=2\\x&n\ge3\end{cases}")
    assert first == width(r"\begin{cases}x&n=2\\\frac{1}{2}&n\ge3\end{cases}")  # the same columns


@pytest.mark.parametrize("key", ["layernorm_affine", "rmsnorm_affine", "rmsnorm_gemma"])
def test_a_product_whose_sum_is_broken_closes_its_bracket_on_the_last_line(key):
    r"""diag(gamma) (I/s - ...) broken at any width: \bigl( opens on the first line, \bigr) closes
    the last, and the lines joined are the formula printed whole."""
    f = formula(f"{key}.jacobian")
    broken = [lines for width in range(10, 60, 5) if len(lines := f.latex_lines(width=width)) > 1]
    assert broken
    for lines in broken:
        assert r"\bigl(" in lines[0]
        assert r"\bigr)" in lines[-1]
        assert "".join(lines).count(r"\bigr)") == 1
        assert unbroken(lines) == f.latex()


@pytest.mark.parametrize(
    ("status", "stdout", "message"), [(1, b"! Emergency stop.\n", "! Emergency stop."), (3, b"", "exit status 3")]
)
def test_a_pdflatex_that_writes_no_log_is_judged_by_what_it_printed(monkeypatch, status, stdout, message):
    """Where pdflatex stops before its log exists (a missing format file, a full disk), the first
    error it printed names the failure, else its exit status."""
    import subprocess

    def run(command, **options):
        return subprocess.CompletedProcess(command, status, stdout=stdout, stderr=b"")

    monkeypatch.setattr(_pdflatex.subprocess, "run", run)
    with pytest.raises(_pdflatex.LatexError, match=rf"^pdflatex: {re.escape(message)}$"):
        _pdflatex.compile_pdf("\\relax")


# cmr10's widths of the upright Greek capitals, in em (its .tfm), and the mean width of a
# lowercase math italic letter (cmmi10), which `_width` counts as one letter.
_CMR10_GREEK = {
    "Gamma": 0.625, "Delta": 0.833334, "Theta": 0.777781, "Lambda": 0.694446, "Xi": 0.666669, "Pi": 0.750002,
    "Sigma": 0.722224, "Upsilon": 0.777781, "Phi": 0.722224, "Psi": 0.777781, "Omega": 0.722224,
}  # fmt: skip
_MEAN_LETTER = 0.4995


@pytest.mark.parametrize("name", sorted(_CMR10_GREEK))
def test_a_greek_capital_is_as_wide_as_cmr10_sets_it(name):
    """Each upright Greek capital counts its typeset width over a letter's, to the class it is in."""
    from derivations._width import width

    assert width("\\" + name) == pytest.approx(_CMR10_GREEK[name] / _MEAN_LETTER, abs=0.07)


@pytest.mark.parametrize("factors", [1, 3, 7])
def test_two_limits_read_as_centre_plus_minus_half_when_that_is_shorter_whatever_their_length(factors):
    """lim u = C + H at +oo and C - H at -oo print as C +- H, the two terms counted together against
    the two limits written out: true of long terms as of short ones."""
    u = sp.Function("u")(t)
    centre = sp.Mul(*sp.symbols(f"a0:{factors}", positive=True))
    half = sp.Mul(*sp.symbols(f"b0:{factors}", positive=True))
    both = sp.And(sp.Eq(sp.Limit(u, t, sp.oo), centre + half), sp.Eq(sp.Limit(u, t, -sp.oo), centre - half))
    printed = ReaderPrinter(DEFAULT).doprint(both)
    assert printed.startswith(r"\lim_{t \to \pm\infty} u{\left(t \right)} = ")
    assert printed.endswith(rf"{sp.latex(centre)} \pm {sp.latex(half)}")


def test_two_conditions_that_are_not_both_limits_print_line_by_line():
    """Only two equalities of limits are read as one limit at +-oo: two plain equalities, or a
    limit beside an inequality, print as aligned rows, each as written."""
    u = sp.Function("u")(t)
    for both in (
        sp.And(sp.Eq(t, 1), sp.Eq(epsilon, 2)),
        sp.And(sp.Gt(sp.Limit(u, t, sp.oo), 1), sp.Eq(sp.Limit(u, t, -sp.oo), -1)),
    ):
        printed = ReaderPrinter(DEFAULT).doprint(both)
        assert printed.startswith(r"\begin{aligned} "), printed
        assert printed.count(r" \\ ") == 1, printed


@pytest.mark.parametrize("writes_log", [True, False])
def test_a_failed_compile_names_the_first_error_from_the_log_or_else_from_pdflatexs_output(
    tmp_path, monkeypatch, writes_log
):
    """pdflatex stopped before it could write a log (no room, a bad output folder) still says why:
    the error line of its output, not a bare exit status.  A stand-in pdflatex on PATH, exit 1."""
    script = tmp_path / "bin" / "pdflatex"
    script.parent.mkdir()
    log = 'for a in "$@"; do case "$a" in -output-directory=*) d="${a#*=}";; esac; done\n'
    log += 'printf "! Undefined control sequence.\\n" > "$d/document.log"\n' if writes_log else ""
    script.write_text(
        f"#!/bin/sh\n{log}printf 'This is pdfTeX\\n! I can\\047t write on file document.log.\\n'\nexit 1\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}:{os.environ['PATH']}")
    first = "! Undefined control sequence." if writes_log else "! I can't write on file document.log."
    with pytest.raises(_pdflatex.LatexError, match=rf"^pdflatex: {re.escape(first)}$"):
        _pdflatex.compile_pdf("\\documentclass{article}\\begin{document}x\\end{document}")
