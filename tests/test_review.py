"""review: a whole paper read as LaTeX, every relation classified and checked, the report written
whole; bad input is one line and status 2 with nothing written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from docs_text import docs_words

import numeric
from derivations.claims import ClaimError
from derivations.review import classify, document, pdf, report
from derivations.review.notation import Notation, canonical, fit, foreign, read, segments, split, tokens

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "examples" / "paper"


def _review(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "derivations", "review", *arguments], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    out = tmp_path_factory.mktemp("review")
    done = _review(str(PAPER / "main.tex"), "--out", str(out))
    return done, out


def test_the_committed_report_of_the_example_paper_is_fresh(reviewed):
    done, out = reviewed
    assert done.returncode == 1, done.stderr  # it holds refuted relations
    assert _without_pdf_note((out / "review.md").read_text()) == _without_pdf_note((PAPER / "review.md").read_text())


def _without_pdf_note(text: str) -> str:
    """review.md without its line on review.pdf, which says whether pdflatex was on PATH where it ran."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(pdf.NOTE_PREFIX))


# Every checked verdict of the example paper, by (file, line, what it was read as).
EXPECTED = {
    "proved": 16,
    "refuted": 9,
}


def test_every_relation_is_classified_and_every_verdict_is_right(reviewed):
    _, out = reviewed
    data = json.loads((out / "review.json").read_text())
    rows = data["relations"]
    assert len(rows) >= 25
    assert all(row["class"] in ("checked", "defined", "not in the vocabulary", "not read") for row in rows)
    assert data["summary"]["verdicts"] == EXPECTED
    by_claim = {row["read_as"]: row for row in rows}
    assert by_claim["norm(y) == sqrt(n)"]["verdict"] == "refuted"
    assert by_claim["all(abs(y) <= sqrt(n - 1))"]["verdict"] == "proved"
    assert by_claim["J @ ones == 0"]["verdict"] == "proved"
    assert by_claim["layernorm(x + b * ones) == y"]["verdict"] == "proved"
    assert by_claim["rmsnorm_eps_outside(a * x) == y"]["verdict"] == "refuted"
    definitions = {row["line"]: row["identification"]["equals"] for row in rows if row.get("identification")}
    assert definitions[22] == "layernorm"
    assert definitions[27] == "rmsnorm_eps_outside"
    assert definitions[43] == "layernorm_std_eps_biased"
    foreign_rows = [row for row in rows if row["class"] == "not in the vocabulary"]
    assert any("softmax" in row["reason"] for row in foreign_rows)
    assert any("W_Q" in row["reason"] for row in foreign_rows)
    readable = [row for row in rows if row["class"] != "not in the vocabulary"]
    assert sum(row["class"] != "not read" for row in readable) >= 0.9 * len(readable)


def test_a_refutation_in_the_report_holds_in_numpy(reviewed):
    """||x_hat||_2 = sqrt(N) is refuted: at the counterexample LayerNorm's output is shorter."""
    _, out = reviewed
    rows = json.loads((out / "review.json").read_text())["relations"]
    (row,) = [row for row in rows if row["read_as"] == "norm(y) == sqrt(n)"]
    example = row["counterexample"]
    x, epsilon = np.array(example["x"], dtype=float), float(example["epsilon"])
    assert not np.isclose(np.linalg.norm(numeric.layernorm.forward(x, epsilon)), np.sqrt(x.size))


def test_the_document_reader_follows_inputs_macros_labels_and_lines(tmp_path):
    (tmp_path / "part.tex").write_text(
        "\\begin{align}\n  a &= \\half{b} \\label{eq:one} \\\\\n  &\\le c\n\\end{align}\n"
    )
    (tmp_path / "main.tex").write_text(
        "% layernorm-claims: n=H\n\\newcommand{\\half}[1]{\\frac{#1}{2}}\n\\def\\e{\\epsilon}\n"
        "\\begin{document}\n% $x = 1$ is a comment\nText $\\e > 0$.\n\\input{part}\n\\end{document}\n"
    )
    read = document.read(tmp_path / "main.tex")
    assert read.notation == ["n=H"]
    assert [(f.file, f.line, f.latex, f.label) for f in read.relations] == [
        ("main.tex", 6, "\\epsilon > 0", None),
        ("part.tex", 2, "a = \\frac{b}{2}", "eq:one"),
        ("part.tex", 3, "\\le c", None),
    ]


def test_a_def_of_a_name_latex_knows_takes_its_parameters_as_written(tmp_path):
    """\\def\\frac#1#2{...}: the reader's LaTeX parser takes #1 and #2 as \\frac's own arguments;
    they are still the definition's two parameters, and its body is the group after them."""
    (tmp_path / "main.tex").write_text("\\def\\frac#1#2{#1 over #2}\n\\def\\half#1{#1/2}\n$\\half{a} = \\frac{b}{c}$\n")
    read = document.read(tmp_path / "main.tex")
    assert [(f.line, f.latex) for f in read.relations] == [(3, "a/2 = b over c")]


def test_a_def_without_a_body_at_the_end_of_an_input_file_is_skipped_and_reading_goes_on(tmp_path):
    (tmp_path / "part.tex").write_text("$a = b$\n\\def\\foo#1")
    (tmp_path / "main.tex").write_text("\\input{part}\n$c \\le d$\n")
    read = document.read(tmp_path / "main.tex")
    assert [(f.file, f.line, f.latex) for f in read.relations] == [
        ("part.tex", 1, "a = b"),
        ("main.tex", 2, "c \\le d"),
    ]


@pytest.mark.parametrize(
    ("latex", "stated"),
    [
        (r"f(x) = 1 \quad \text{for } n \ge 3", r"n \ge 3"),
        (r"a = (b \text{ for } c)", ""),  # inside brackets: part of the relation, no condition on it
        (r"\left( a \right) = b \text{ if } t > 0.", "t > 0"),
    ],
)
def test_a_row_states_a_condition_only_outside_its_brackets(latex, stated):
    from derivations.review.notation import condition

    assert condition(latex) == stated


def test_the_notation_splits_chains_and_names_foreign_symbols():
    links = split(r"\|J\|_2 = \frac{1}{\sqrt{\sigma^2 + \epsilon}} \le \frac{1}{\sqrt{\epsilon}}.")
    assert [link.relation for link in links] == ["=", "\\le"]
    assert foreign(canonical(r"\mathrm{softmax}(Q K^\top / \sqrt{d_k})", Notation())) == [
        "\\mathrm{softmax}",
        "Q",
        "K",
        "d_k",
    ]
    assert foreign(canonical(r"\mathrm{LN}(x) = \hat{x}", Notation())) == []


@pytest.mark.parametrize("latex", [r"\tilde{z}_i Q = 1", r"\tilde{z}_{i} Q = 1", r"\bar{u}_i Q"])
def test_an_accented_symbols_entry_is_part_of_it_and_what_follows_is_read(latex):
    """\tilde{z}_i is one foreign symbol, its subscript its entry; the symbol right after it is read
    (a reading that skipped one token too many lost Q)."""
    assert foreign(canonical(latex, Notation()))[1:] == ["Q"]


@pytest.mark.parametrize(
    ("word", "known"),
    [("slope\\_at\\_zero", True), ("spectral\\_norm", True), ("Foo\\_Bar", False), ("w\\_2", False), ("relu", False)],
)
def test_a_word_of_small_letters_joined_by_underscores_is_a_quantity_s_name(word, known):
    """A word in \\mathrm of small letters and underscores names a quantity the checker reads (it
    says which when the claim is fitted); capitals or a digit, or no underscore, make it the paper's own."""
    latex = canonical(rf"\mathrm{{{word}}} \le 1", Notation())
    assert foreign(latex) == ([] if known else [f"\\mathrm{{{word.replace(chr(92), '')}}}"])


@pytest.mark.parametrize("terms", [2, 140])
@pytest.mark.parametrize(("word", "read"), [("Var", "\\operatorname { q }"), ("mean", "\\mathrm { m e a n }")])
def test_a_statistic_word_ending_a_formula_is_read_however_long_the_formula(terms, word, read):
    """\\mathrm{Var} with no bracket after it, at the end of 285 tokens as at the end of 5: the
    variance of the input, or mean as written (for the grammar to refuse); never an entry read past the last token."""
    latex = canonical(" + ".join(["a"] * terms) + rf" + \mathrm{{{word}}}", Notation())
    assert latex.endswith(read), latex[-40:]


BAD = {
    "binary": b"\x00\x01\x02\\begin{document}",
    "empty": b"   \n",
    "not LaTeX": b"just some words, no commands at all\n",
    "cycle": b"\\input{main}\n",
    "missing": b"\\input{nowhere}\n",
    "macro": b"\\newcommand{\\a}{\\a x}\n$\\a = 1$\n",
    "unbalanced": b"\\begin{align} a &= {b \\\\ c \\end{align}\n",
    "huge": b"$a = b$ " * 1_400_000,
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_status_2_with_nothing_written(tmp_path, case):
    (tmp_path / "main.tex").write_bytes(BAD[case])
    out = tmp_path / "out"
    done = _review(str(tmp_path / "main.tex"), "--out", str(out))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_a_relation_past_its_budget_is_undecided_and_the_rest_go_on(tmp_path):
    (tmp_path / "main.tex").write_text(
        "\\[ \\|J\\|_2 \\le \\frac{1}{\\sqrt{\\epsilon}} \\]\n\\[ \\mathrm{softmax}(z) = 1 \\]\n"
    )
    done = _review(str(tmp_path / "main.tex"), "--timeout", "0.001", "--no-cache")
    assert done.returncode == 2, done.stderr
    rows = json.loads((tmp_path / "review.json").read_text())["relations"]
    assert rows[0]["verdict"] == "error"
    assert rows[0]["reason"].startswith("undecided within 0.001 s")
    assert rows[1]["class"] == "not in the vocabulary"


@pytest.mark.parametrize(("used", "expanded"), [("\\p[q]{y}", "q^{y}"), ("\\p{y}", "2^{y}"), ("\\p[q] y", "q^{y}")])
def test_a_macro_s_optional_argument_given_or_not_leaves_the_next_argument_read(used, expanded):
    """\\newcommand{\\p}[2][2]{#1^{#2}}: [q] is the first argument when given, 2 when not, and
    the reading goes on right after it, at the second."""
    macros = {"p": (2, "#1^{#2}", "2")}
    assert document.expand(f"{used} = 1", macros) == f"{expanded} = 1"


@pytest.mark.parametrize(("used", "expanded"), [("\\s{\\{a\\}}", "S(\\{a\\})"), ("\\s{a\\,}", "S(a\\,)")])
def test_a_macro_argument_ends_at_its_own_brace_past_an_escaped_one(used, expanded):
    """An escaped brace (\\{, \\}) or a one-character command (\\,) just before the closing brace
    is part of the argument: the brace that closes it is the next one, not skipped with it."""
    assert document.expand(f"{used} = 1", {"s": (1, "S(#1)", None)}) == f"{expanded} = 1"


@pytest.mark.parametrize("before", [0, 300])
@pytest.mark.parametrize("tail", ["a", "a\\"])
def test_a_macro_argument_never_closed_is_an_error_naming_the_macro_wherever_it_ends(before, tail):
    """An argument whose brace no later one closes, however far into the text (past 256 characters)
    and even where the text ends in a backslash, is refused by name, never read past the end."""
    with pytest.raises(document.DocumentError, match=r"^macro \\s: unbalanced braces in its argument$"):
        document.expand(" " * before + "\\s{" + tail, {"s": (1, "S(#1)", None)})


def test_a_macro_expanding_forever_is_named_with_its_file_and_line(tmp_path):
    (tmp_path / "main.tex").write_text("\\newcommand{\\a}{\\b}\\newcommand{\\b}{\\a}\nText.\n\\[ \\a = 1 \\]\n")
    with pytest.raises(document.DocumentError, match=r"^main\.tex:3: macro \\a expands without end"):
        document.read(tmp_path / "main.tex")


def test_a_macro_expanding_past_20000_characters_is_refused_after_few_expansions(tmp_path):
    """Two bounds, either one enough: 5000 expansions, or 20000 characters of one relation."""
    define = "\\newcommand{\\w}{" + "x + " * 300 + "}\nText.\n"
    (tmp_path / "main.tex").write_text(define + "\\[ y = " + "\\w " * 30 + "1 \\]\n")
    with pytest.raises(document.DocumentError, match=r"^main\.tex:3: macro \\w expands without end"):
        document.read(tmp_path / "main.tex")
    (tmp_path / "main.tex").write_text(define + "\\[ y = " + "\\w " * 10 + "1 \\]\n")
    assert len(document.read(tmp_path / "main.tex").relations) == 1


# --- the paper's notation: what the hostile review found misread ---------------------------------


def _fitted(lhs: str, rhs: str, relation: str = "=", key: str = "layernorm", notation: Notation | None = None) -> str:
    from derivations.claims import vocabulary

    return fit(read(lhs, rhs, relation, notation or Notation()), key, set(vocabulary(key).names()))


@pytest.mark.parametrize(
    "latex",
    [
        r"x^\top x",
        r"x^T x",
        r"x^{\mathrm{T}} x",
        r"x^{\mathsf{T}} x",
        r"x^{\mathsf{\top}} x",
        r"x^\intercal x",
        r"x^\mathsf{T} x",  # unbraced: the script is \mathsf with its argument
        r"x^\mathsf{\top} x",
        r"x^\mathrm{T} x",
    ],
)
def test_a_transpose_reads_as_one_however_the_paper_writes_its_t(latex):
    assert _fitted(latex, "1") == "x.T @ x == 1"


@pytest.mark.parametrize("written", ["T", r"\top", r"\intercal", r"{T}", r"\mathsf{T}", r"\mathrm{T}"])
def test_a_transpose_that_ends_a_side_reads_as_one(written):
    """The last tokens of a side (J = I - c c^T) are a transpose as they are anywhere else."""
    assert canonical(f"c c^{written}", Notation()) == r"c c ^ \top"
    assert foreign(canonical(f"J = I - c c^{written}", Notation())) == []


def test_letters_and_subscripts_the_vocabulary_lacks_are_named_never_misread():
    """N(x) was read as the product N * x; \\sigma_\\epsilon as sigma (so sigma_eps = sqrt(sigma^2 + eps)
    was refuted); \\gamma_{\\max} as the gain vector."""
    assert foreign(canonical(r"\mathbf{y} = N(\mathbf{x})", Notation())) == ["N"]
    assert foreign(canonical(r"\sigma_\epsilon = \sqrt{\sigma^2 + \epsilon}", Notation())) == ["\\sigma_\\epsilon"]
    assert foreign(canonical(r"\mu_1 = x_1", Notation()))[0] == "\\mu_1"
    assert foreign(canonical(r"\bar{a}_i = 1", Notation())) == ["\\bar{a}"]
    # A subscript letter is named with its letter, never again on its own.
    assert foreign(canonical(r"h_j + z_q = 0", Notation())) == ["h_j", "z_q"]
    assert foreign(canonical(r"y = W_z x", Notation())) == ["W_z"]
    assert foreign(canonical(r"\sum_{i=1}^{n} \hat{x}_i = \sigma_B^2 + \mu_g + \sigma_u", Notation())) == []
    assert _fitted(r"\|J\|_2", r"\gamma_{\max}", "\\le", "layernorm_affine") == "norm(J, 2) <= gamma_max"


def test_operators_without_parentheses_the_zero_vector_and_expectations_are_read():
    assert _fitted(r"\det J", "0") == "det(J) == 0"
    assert _fitted(r"\mathrm{tr}\,J", r"\frac{d-1}{\sigma}") == "trace(J) == (n - 1) / sqrt(q)"
    assert _fitted(r"J\mathbf{1}", r"\mathbf{0}") == "J @ ones == 0"
    assert _fitted(r"\mathbb{E}[\mathrm{LN}(x)]", "0") == "sum(y) / n == 0"
    # Square brackets group as parentheses do; sized brackets read as the plain ones.
    assert (
        _fitted(r"[\epsilon + 1]^2", r"\epsilon^2 + 2\epsilon + 1")
        == "(epsilon + 1) ** 2 == epsilon ** 2 + 2 * epsilon + 1"
    )
    assert _fitted(r"2 [t + 1]", r"2t + 2") == "2 * (t + 1) == 2 * t + 2"
    assert _fitted(r"\mathbb{E}\left[\mathrm{LN}(x)\right]", "0") == "sum(y) / n == 0"
    # An expectation's subscript (the variable it averages over) is read past, whole.
    assert _fitted(r"\mathbb{E}_{i}[\mathrm{LN}(x)]", "0") == "sum(y) / n == 0"
    assert _fitted(r"\mathbb{E}_i[x_i]", r"\mu") == "mean(x) == mean(x)"
    assert _fitted(r"\mathrm{Var}\left[x\right]", r"\sigma^2") == "q == q"


def test_sums_are_read_term_by_term_and_over_the_whole_product():
    """A quotient under the sum was an error ('**' of a vector); sum_i y_i g_i summed y_i alone."""
    assert _fitted(r"\|\mathrm{LN}(x)\|_2^2", r"\sum_{i=1}^{d} \frac{(x_i - \mu)^2}{\sigma^2 + \epsilon}") == (
        "norm(y) ** 2 == norm(x - mean(x) * ones) ** 2 / (q + epsilon)"
    )
    assert _fitted(r"\sum_i \hat{x}_i g_i", "0") == "dot(y, g) == 0"
    assert _fitted(r"\sum_i (2 \hat{x}_i + 1)", "d") == "2 * sum(y) + n * 1 == n"
    assert _fitted(r"\max_i |\hat{x}_i|", r"\sqrt{d - 1}", "\\le") == "max(abs(y)) <= sqrt(n - 1)"
    # \limits only places the scripts: the sum reads the same with it, its bounds kept.
    for sums in (r"\sum_i \hat{x}_i g_i", r"\sum_{i=1}^{d} \hat{x}_i g_i"):
        assert _fitted(sums.replace(r"\sum", r"\sum\limits"), "0") == _fitted(sums, "0") == "dot(y, g) == 0"
    limits = _fitted(r"\sqrt{\frac{1}{k}\sum\limits_{i=1}^{k} x_i^2}", r"\sqrt{r_k}", key="prmsnorm")
    assert limits == "sqrt(1 / (kappa * n) * (kappa * n * r_k)) == sqrt(r_k)"
    partial = _fitted(r"\sqrt{\frac{1}{k}\sum_{i=1}^{k} x_i^2}", r"\sqrt{r_k}", key="prmsnorm")
    assert partial == "sqrt(1 / (kappa * n) * (kappa * n * r_k)) == sqrt(r_k)"


def test_a_papers_c_is_a_scalar_shift_never_the_centered_input():
    assert _fitted(r"\mathrm{LN}(x + c\mathbf{1})", r"\mathrm{LN}(x)") == "layernorm(x + b * ones) == y"


def test_relations_side_by_side_in_one_row_are_each_read_and_conditions_are_not():
    row = r"\mathrm{LN}(v) = \frac{v - \mu}{\sigma}, \quad \text{where } \mu = \frac{1}{d}\sum_k v_k, \ \sigma^2 = 1"
    assert segments(row) == [
        r"\mathrm{LN}(v) = \frac{v - \mu}{\sigma}",
        r"\mu = \frac{1}{d}\sum_k v_k",
        r"\sigma^2 = 1",
    ]
    assert segments(r"y_i = x_i, \quad i = 1, \ldots, n") == ["y_i = x_i"]
    assert segments(r"f = 1 \quad \text{for } t > 0") == ["f = 1"]
    assert segments(r"\max(a, b) = 1") == [r"\max(a, b) = 1"]
    # Brackets of every kind close again: a comma inside one does not cut, the one after does.
    for opened, closed in (("(", ")"), ("[", "]"), (r"\left[", r"\right]"), ("{", "}")):
        first = rf"\mathbb{{E}}{opened}x, y{closed} = 0"
        assert segments(rf"{first}, \quad \sigma^2 = 1") == [first, r"\sigma^2 = 1"], opened


PAPER_SOURCE = r"""\documentclass{article}
\begin{document}
\begin{equation}
\mathrm{LayerNorm}(v) = \frac{v - \mu}{\sqrt{\sigma^2 + \epsilon}}, \quad
  \text{where } \mu = \frac{1}{d}\sum_{k=1}^{d} v_k
\end{equation}
The paper's own sigma,
$\sigma = \sqrt{\frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2 + \epsilon}$, and then $\sigma \ge \sqrt{\epsilon}$.
A sum the checker cannot build: $\sum_i J = 0$.
\end{document}
"""


def test_a_paper_s_input_name_its_own_sigma_and_an_unbuildable_sum_are_classified(tmp_path):
    """v as the input (the mean of v_k was refuted as the mean of the direction v); a sigma with
    epsilon inside (refuted as the vocabulary's sigma, and every later sigma misread); a shape the
    checker refuses (an error verdict and exit status 2, where it is the reading that failed)."""
    (tmp_path / "main.tex").write_text(PAPER_SOURCE)
    context = classify.Context(Notation(), None, 30.0)
    entries = classify.review(document.read(tmp_path / "main.tex"), context)
    rows = [entry.row() for entry in entries]
    by_line = [(row["class"], row["verdict"]) for row in rows]
    assert by_line[0] == ("defined", "equals layernorm")
    assert by_line[1] == ("checked", "proved"), rows[1]  # mu = (1/d) sum_k v_k, v the input
    assert by_line[2] == ("defined", "differs from the vocabulary's \\sigma")
    assert by_line[3][0] == "not in the vocabulary"
    assert "defined at main.tex:8" in rows[3]["reason"]
    assert by_line[4][0] == "not read", rows[4]
    assert report.status(entries) == 0
    # The Markdown report: a checked relation's verdict and its detail; any other its class and the reason.
    sections = report.markdown(entries, "main.tex").split("\n### ")[1:]
    assert len(sections) == len(entries)
    for section, entry in zip(sections, entries, strict=True):
        assert f"- class: {entry.kind}" in section
        checked = entry.kind == "checked"
        assert (f"- verdict: **{entry.verdict}**" in section) == checked
        assert ("\n- detail: " in section) == checked
        assert ("\n- reason: " in section) != checked


def test_a_paper_without_epsilon_is_checked_at_epsilon_0(tmp_path):
    """Ba et al. and Xiong et al. define LayerNorm without epsilon: ||y|| = sqrt(d) holds there."""
    (tmp_path / "main.tex").write_text(
        "\\[ y = \\frac{x - \\mu}{\\sigma} \\]\nso $\\|y\\|_2 = \\sqrt{d}$ and $\\|y\\|_2 = d$.\n"
    )
    context = classify.Context(Notation(), None, 30.0)
    entries = classify.review(document.read(tmp_path / "main.tex"), context)
    assert entries[0].identification is not None
    assert entries[0].identification.epsilon_free
    assert [e.verdict for e in entries[1:]] == ["proved", "refuted"]
    assert "epsilon = 0" in entries[1].quantifier
    (tmp_path / "main.tex").write_text(
        "\\[ y = \\frac{x - \\mu}{\\sigma} \\]\nso $\\|y\\|_2 = \\sqrt{d}$; with $\\epsilon > 0$ it is less.\n"
    )
    context = classify.Context(Notation(), None, 30.0)
    entries = classify.review(document.read(tmp_path / "main.tex"), context)
    assert entries[1].verdict == "refuted"  # the paper names epsilon: its sigma may hold it


def test_ba_et_al_gain_g_and_bias_b_are_the_gain_and_bias_from_their_definition_on(tmp_path):
    """Ba et al. write the gain g_i and bias b_i: the definition is layernorm_affine, and a later
    Jacobian with diag(g) is about the gain (outside the claim language, so not read), never the
    upstream gradient g, which would refute the paper's true Jacobian."""
    source = (
        "\\[ y_i = g_i \\frac{x_i - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}} + b_i \\]\n"
        "\\[ \\frac{\\partial y}{\\partial x} = \\frac{\\mathrm{diag}(g)}{\\sqrt{\\sigma^2 + \\epsilon}}"
        " \\left(\\mathbf{I} - \\frac{1}{n}\\mathbf{1}\\mathbf{1}^\\top"
        " - \\frac{1}{n} \\hat{x}\\hat{x}^\\top\\right) \\]\n"
        "\\[ y_i = \\frac{x_i}{\\mathrm{RMS}(x)} g_i \\]\n"
    )
    entries = _entries(tmp_path, source)
    assert (entries[0].kind, entries[0].verdict) == ("defined", "equals layernorm_affine")
    assert entries[0].identification is not None
    assert (entries[0].identification.gain, entries[0].identification.bias) == ("g", True)
    assert entries[1].kind == "not read", entries[1]
    assert "diag(gamma)" in entries[1].reason
    assert entries[2].verdict == "equals rmsnorm_affine"


def test_rms_of_any_vector_is_its_norm_over_root_n_and_var_is_read_only_of_the_input():
    """RMS(y) was read as the input's sqrt(r), and Var(y) as q: a statement about the output
    checked as one about the input."""
    notation = Notation()
    assert read("\\mathrm{RMS}(y)", "1", "=", notation) == "norm(y) / sqrt(n) == 1"
    assert read("\\mathrm{RMS}(x)", "2", "=", notation) == "sqrt(r) == 2"
    with pytest.raises(ClaimError, match="read only of the input x, not of y"):
        read("\\mathrm{Var}(y)", "1", "=", notation)


# --- review.pdf ------------------------------------------------------------------------------------


def _entries(tmp_path: Path, source: str) -> list[classify.Entry]:
    (tmp_path / "main.tex").write_text(source)
    context = classify.Context(Notation(), None, 30.0)
    return classify.review(document.read(tmp_path / "main.tex"), context)


def test_a_row_the_notation_cannot_read_is_no_definition_of_the_layer(tmp_path):
    """A relation whose left side cannot be read (the variance of a vector other than the input)
    defines no output: the rows after it are checked, not held as about an unknown layer."""
    bound = "\\[ \\|J\\|_2 \\le \\frac{1}{\\sqrt{\\epsilon}} \\]\n"
    entries = _entries(tmp_path, "\\[ \\mathrm{Var}(z) = 1 \\]\n" + bound)
    assert [entry.kind for entry in entries] == ["not read", "checked"]
    assert entries[0].reason == "\\mathrm{Var} is read only of the input x, not of z"
    assert entries[1].claim == "norm(J, 2) <= 1 / sqrt(epsilon)"
    assert entries[1].reason.startswith("proved for all x in R^n")


def test_the_pdf_source_typesets_each_row_with_coloured_verdicts(tmp_path):
    entries = _entries(tmp_path, "\\[ \\|J\\|_2 \\le \\frac{1}{\\sqrt{\\epsilon}} \\le 5 \\]\n$Q_k = 1$\n")
    text = pdf.source(entries, "main_$#.tex")
    assert "\\begin{equation*}\n\\|J\\|_2 \\le \\frac{1}{\\sqrt{\\epsilon}} \\le 5\n\\end{equation*}" in text
    assert "\\marginpar{\\raggedright\\footnotesize\\textcolor[rgb]{0,0.5,0}{\\textbf{1. proved}}}" in text
    assert "{\\textbf{2. refuted}}" in text
    assert "0.8,0,0" in text
    assert "{\\textbf{not in the vocabulary}}" in text
    assert "main\\_\\$\\#.tex" in text
    assert all(line.startswith("\\usepackage{amsmath,amssymb}") or "xcolor" not in line for line in text.splitlines())


def test_without_pdflatex_the_pdf_is_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(pdf.shutil, "which", lambda name: None)
    built = pdf.build([], "main.tex")
    assert built.pdf is None
    assert built.note == "PDF: review.pdf not written: pdflatex is not on PATH"
    assert built.note in report.markdown([], "main.tex", (built.note,))


def test_pdflatex_past_the_time_the_docs_give_it_leaves_the_pdf_out_and_says_so(monkeypatch):
    """docs/review.md gives pdflatex a time per run; a run past it is stopped there, and the
    note (a value, not changed after it is made) says the PDF was not written and why."""
    import dataclasses
    import subprocess

    stated = re.search(r"pdflatex is\s+given (\d+) s a run", (ROOT / "docs" / "review.md").read_text())
    assert stated is not None
    given = []

    def slow(command, **options):
        given.append(options["timeout"])
        raise subprocess.TimeoutExpired(command, options["timeout"])

    monkeypatch.setattr(pdf, "available", lambda: True)
    monkeypatch.setattr(pdf.subprocess, "run", slow)
    built = pdf.build([], "main.tex")
    assert given == [float(stated.group(1))]
    assert built.pdf is None
    assert built.note == f"PDF: review.pdf not written: pdflatex failed: pdflatex took more than {stated.group(1)} s"
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.note = "changed"  # type: ignore[misc]


@pytest.mark.skipif(not pdf.available(), reason="pdflatex is not on PATH")
def test_the_pdf_compiles_and_an_equation_pdflatex_cannot_typeset_is_shown_as_source(tmp_path):
    entries = _entries(
        tmp_path, "\\[ \\|J\\|_2 \\le \\frac{1}{\\sqrt{\\epsilon}} \\]\n\\[ \\undefinedmacro{x} = 1 \\]\n"
    )
    built = pdf.build(entries, "main.tex")
    assert built.pdf is not None, built.note
    assert built.pdf.startswith(b"%PDF")
    assert "1 shown as source" in built.note


@pytest.mark.skipif(not pdf.available(), reason="pdflatex is not on PATH")
def test_the_review_writes_the_pdf_whole_beside_the_report(tmp_path):
    (tmp_path / "main.tex").write_text("\\[ \\|J\\|_2 \\le \\frac{1}{\\sqrt{\\epsilon}} \\]\n")
    done = _review(str(tmp_path / "main.tex"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "review.pdf").read_bytes().startswith(b"%PDF")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["main.tex", "review.json", "review.md", "review.pdf"]


def test_the_report_files_get_the_users_permissions_not_mkstemps(tmp_path):
    import os

    umask = os.umask(0o022)
    try:
        report.write(tmp_path, {"review.md": "x\n", "review.pdf": b"%PDF"})
    finally:
        os.umask(umask)
    assert (tmp_path / "review.md").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "review.pdf").read_bytes() == b"%PDF"


@pytest.mark.parametrize("terms", [3, 200])
def test_a_long_relation_reads_as_a_short_one_does(terms):
    """A relation of any length (over 256 tokens here) is read to its end: every loop over the
    tokens compares positions by value, and the long one gives the short one's terms, repeated."""
    spelled = Notation(overrides={"z": "q"})  # a paper's own spelling, replaced by a loop of its own
    short = canonical(r"\mathbf{y} = \mathrm{LN}(\mathbf{x}) + N(z)", spelled)
    long = canonical(r"\mathbf{y} = " + " + ".join([r"\mathrm{LN}(\mathbf{x}) + N(z)"] * terms), spelled)
    assert len(tokens(long)) > 256 or terms < 100
    assert long == short.split(" = ")[0] + " = " + " + ".join([short.split(" = ", 1)[1]] * terms)
    assert foreign(long) == foreign(short) == ["N"]


def test_progress_ticks_once_per_link_whether_or_not_it_is_decided(tmp_path):
    """A chain a = b = c is two links; a link the checker decides ticks when it is decided, and
    every other link when it is classified, so the bar ends at the number of links, never past it."""
    (tmp_path / "main.tex").write_text(
        "\\[ y = \\frac{x - \\mu}{\\sigma} \\]\n"
        "so $\\|y\\|_2 = \\sqrt{d}$, and $\\zeta = \\xi = \\omega$ and $\\alpha > \\beta$.\n"
    )
    paper = document.read(tmp_path / "main.tex")
    totals: list[int] = []
    ticks: list[int] = []

    def progress(total: int):
        totals.append(total)
        return ticks.append

    entries = classify.review(paper, classify.Context(Notation(), None, 30.0), progress)
    assert [entry.kind for entry in entries].count("checked") == 1, [entry.row() for entry in entries]
    assert len(entries) == 5
    assert totals == [5]  # the bar's total, given once, before the first tick
    assert ticks == [1] * 5


@pytest.mark.parametrize(
    ("source", "where"),
    [("a\nb\n\\begin{equation} x = 1\n\n", "main.tex:5"), ("a\nb $x = {1$\nc\n", "main.tex:4")],
)
def test_latex_that_is_not_well_formed_is_named_with_its_file_and_line(tmp_path, source, where):
    (tmp_path / "main.tex").write_text(source)
    with pytest.raises(document.DocumentError, match=rf"^{re.escape(where)}: not well-formed LaTeX: Unexpected end"):
        document.read(tmp_path / "main.tex")


def test_a_symbol_that_ends_a_relation_is_read_without_looking_past_the_end():
    """\\sigma, \\bar{a} and \\nabla each peek at the token after them for a subscript; as the last
    token of a relation there is none, and each reads as it would before another token."""
    assert _fitted(r"\sqrt{\sigma^2}", r"\sigma") == "sqrt(q) == sqrt(q)"
    assert foreign(canonical(r"\bar{a}_i = \bar{a}", Notation())) == ["\\bar{a}"]
    assert _fitted(r"J^\top g", r"\nabla") == _fitted(r"J^\top g", r"\nabla + 0").replace(" + 0", "")


@pytest.mark.parametrize(
    "latex",
    [
        r"\nabla_x \mathcal{L}",
        r"\nabla_{x} \mathcal{L}",
        r"\nabla_{\mathbf{x}} L",
        r"\nabla \mathcal{L}",
        r"\nabla_x \ell",
    ],
)
def test_the_gradient_of_the_loss_is_the_backward_pass_however_its_subscript_is_written(latex):
    """\\nabla_x \\mathcal{L} is J^T g: the subscript skipped whole, \\mathcal{L} read as one name
    (it was an unknown command \\mathcal, and \\nabla_x L read as J @ x * L when the subscript was not skipped)."""
    assert _fitted(latex, r"J^\top g") == "J.T @ g == J.T @ g"


@pytest.mark.parametrize(
    "latex", [r"\nabla_x y", r"\nabla_{x} \hat{x}", r"\nabla y", r"\nabla_{\mathbf{x}} \mathbf{y}"]
)
def test_the_gradient_of_the_output_is_refused_as_its_layout_is_the_papers(latex):
    """\\nabla_x y is J in one layout and J^T in the other: refused, never read as J @ y."""
    with pytest.raises(ClaimError, match=r"nabla"):
        _fitted(latex, "J")


@pytest.mark.parametrize(
    ("latex", "read"),
    [
        (r"\frac{\mathbf{y}}{k}", "y / k"),
        (r"\hat{x} n k", "y * n * k"),
        (r"\mathbf{y}_k", "y"),
        (r"\mathbf{g}_{j}", "g"),
    ],
)
def test_a_letter_is_its_entry_only_where_an_index_subscript_follows_it(latex, read):
    """\\mathbf{y}_k is the entry y_i (a relation of entries read as one of the vectors); in
    \\frac{\\mathbf{y}}{k} the k after the closing brace is the denominator, and in \\hat{x} n k the k
    after n a factor, neither a subscript of y."""
    assert _fitted(latex, "0") == f"{read} == 0"


@pytest.mark.parametrize("verdict", ["error", "refuted", "proved"])
def test_a_check_that_names_an_unknown_name_is_outside_the_vocabulary_not_an_error(verdict):
    """The check's error for a name the claim language lacks makes the link "not in the
    vocabulary", its reason cut before the list of known names; any other verdict is the check's."""
    from derivations.review.checking import Outcome

    found = document.Found("main.tex", 3, r"\zeta = 0", None, "equation")
    detail = "unknown name 'zeta' at column 1; known names: x, y"
    entry = classify._apply(classify.Entry(found, r"\zeta = 0"), Outcome(verdict, detail))
    if verdict == "error":
        assert (entry.kind, entry.verdict) == ("not in the vocabulary", "")
        assert entry.reason == "unknown name 'zeta' at column 1"
    else:
        assert (entry.kind, entry.verdict, entry.reason) == ("checked", verdict, detail)


def test_a_bar_over_x_alone_is_its_mean_and_over_another_letter_is_not_read():
    assert _fitted(r"\bar{x}", "0") == "mean(x) == 0"
    for letter in ("u", "a", "z"):
        with pytest.raises(ClaimError, match=r"unknown LaTeX command \\bar"):
            _fitted(rf"\bar{{{letter}}}", "0")


def test_a_def_s_body_is_a_definition_not_text_of_the_paper(tmp_path):
    """The relations inside a \\def's body are read where the macro is used, not where it is defined:
    reading goes on after the body, which is not walked as the paper's text."""
    (tmp_path / "main.tex").write_text(
        "\\def\\claim{\\begin{equation} a \\le b \\end{equation}}\n\\def\\two#1#2{$#1 = #2$}\n$c = d$\n"
    )
    read = document.read(tmp_path / "main.tex")
    assert [(f.line, f.latex) for f in read.relations] == [(3, "c = d")]


def test_two_rows_that_read_alike_get_a_margin_note_each():
    """The PDF's margin notes group the links of one row (one found row: a chain); the same
    relation written twice on one line is two rows, equal as values, and gets two notes."""
    from derivations.review import pdf
    from derivations.review.classify import Entry
    from derivations.review.document import Found

    one, same = (Found("paper.tex", 3, "a = b", None, "inline") for _ in range(2))
    assert one == same
    assert one is not same
    chain = Found("paper.tex", 4, "a = b = c", None, "inline")
    entries = [Entry(one, "a = b"), Entry(same, "a = b"), Entry(chain, "a = b"), Entry(chain, "b = c")]
    assert [len(group) for group in pdf._groups(entries)] == [1, 1, 2]


def test_a_definition_after_two_relations_is_one_link_with_colon_equals():
    """`:=` is read as one relation wherever it comes in a chain, not only as its second cut."""
    from derivations.review.notation import split

    found = [(link.lhs, link.relation, link.rhs) for link in split(r"a = b \le c := d")]
    assert found == [("a", "=", "b"), ("b", "\\le", "c"), ("c", ":=", "d")]


@pytest.mark.parametrize("latex", [r"\mathbf{xy}", r"\mathbf{x'}", r"\mathbf{x_1}", r"\mathbf{}"])
def test_a_bold_group_is_read_as_a_vector_only_when_it_holds_one_letter(latex):
    """\\mathbf{x} is the vector x; a bold group of more than a letter is left as written (not the
    vector its first letter names), and an empty one too."""
    assert canonical(r"\mathbf{x}", Notation()) == "x"
    assert canonical(latex, Notation()).startswith(r"\mathbf {")


@pytest.mark.parametrize(("extra", "refused"), [(0, False), (1, True)])
def test_a_document_is_read_up_to_two_million_bytes_over_its_input_files(tmp_path, extra, refused):
    """docs/review.md: at most 2,000,000 bytes over all the files `\\input` brings in; the byte
    past them is refused, named by the file it falls in."""
    text = docs_words("review.md")
    assert "at most 200 files, and 2,000,000 bytes over all of them" in text
    head = b"\\input{part}\n$a = b$\n"
    (tmp_path / "main.tex").write_bytes(head)
    (tmp_path / "part.tex").write_bytes(b"$c = d$\n" + b"%" * (2_000_000 - len(head) - 9 + extra) + b"\n")
    if refused:
        with pytest.raises(document.DocumentError, match=r"^part.tex: the document is larger than 2000000 bytes$"):
            document.read(tmp_path / "main.tex")
    else:
        assert [found.latex for found in document.read(tmp_path / "main.tex").relations] == ["c = d", "a = b"]


@pytest.mark.parametrize(("files", "refused"), [(200, False), (201, True)])
def test_a_document_is_read_from_at_most_two_hundred_files(tmp_path, files, refused):
    for number in range(1, files):  # main.tex inputs f1, which inputs f2, ...: a chain of `files` files
        (tmp_path / f"f{number}.tex").write_text(f"\\input{{f{number + 1}}}\n" if number + 1 < files else "$a = b$\n")
    (tmp_path / "main.tex").write_text("\\input{f1}\n")
    if refused:
        with pytest.raises(document.DocumentError, match=r"^f200.tex: more than 200 \\input files$"):
            document.read(tmp_path / "main.tex")
    else:
        assert [found.latex for found in document.read(tmp_path / "main.tex").relations] == ["a = b"]


@pytest.mark.parametrize(
    "latex",
    [
        r"f\left(a, b\right) = c, \; d = e",
        r"f(a, b) = c, \; d = e",
        r"\left\{a, b\right\} = c, d",
    ],
)
def test_a_chain_ends_at_the_first_comma_outside_its_brackets(latex):
    """A comma inside ( ), { } or \\left( \\right) belongs to the relation; the first one outside
    them ends it, whatever brackets came before."""
    from derivations.review.notation import split

    (link,) = split(latex)
    assert link.relation == "="
    assert link.rhs == "c"
    assert link.lhs.endswith(("b\\right)", "b)", "b\\right\\}"))


@pytest.mark.parametrize("written", [r"\mathbb E", r"\mathbb|E}", r"\mathbb}E}", r"\mathbb~E}", r"\mathbb{R}"])
def test_mathbb_is_an_expectation_only_as_mathbb_of_e_in_braces(written):
    """\\mathbb{E}[...] is the mean; any other \\mathbb, or E not in braces, is a command the reader
    does not know, never an expectation."""
    with pytest.raises(ClaimError, match=r"unknown LaTeX command \\mathbb"):
        _fitted(written + r"[\mathrm{LN}(x)]", "0")


@pytest.mark.parametrize("order", [["s=\\sigma", "q=\\sigma^2"], ["q=\\sigma^2", "s=\\sigma"]])
def test_the_longest_of_overlapping_spellings_is_read_first_whatever_their_order(order):
    """A paper that writes sigma for s and sigma^2 for q: sigma^2 is q, not s squared, in either
    order of --notation."""
    assert canonical(r"\sigma^2 + \sigma", Notation.parse(order)) == "q + s"


def test_the_json_report_is_ascii_and_reads_back_every_character():
    """A paper's title in any script: the JSON report escapes it (it prints on an ASCII
    terminal or pipe) and reads back to the same text."""
    title = "Normalisation à ε près: Ω"
    text = report.as_json([], title)
    assert text.isascii()
    assert json.loads(text)["paper"] == title


@pytest.mark.parametrize(
    ("lhs", "defined"),
    [
        (r"\sigma", r"\sigma"),
        (r"\sigma^2", r"\sigma"),
        (r"\sigma^{2}", r"\sigma"),
        (r"\mu", r"\mu"),
        (r"\sigma_{\mathcal{B}}^2", r"\sigma"),
        (r"2 \sigma", None),
        (r"\nu", None),
    ],
)
def test_a_statistic_a_paper_defines_is_read_alone_squared_or_subscripted(lhs, defined):
    """sigma = ..., sigma^2 := ..., sigma_B^2 = ... over the input define the statistic sigma;
    a multiple of it, or another letter, defines none."""
    from derivations.review.notation import Link

    link = Link(lhs, ":=", r"\frac{1}{n} \sum_i (x_i - \mu)^2")
    assert classify._statistic(link, Notation()) == defined


@pytest.mark.parametrize(("written", "read"), [("y", "y"), ("g", "g"), ("x", None)])
def test_the_rms_of_a_vector_other_than_x_is_its_norm_over_the_root_of_n(written, read):
    r"""\mathrm{RMS}(y) is ||y|| / sqrt(n); of the input x it is the statistic sqrt(r)."""
    text = canonical(rf"\mathrm{{RMS}}({written})", Notation())
    if read is None:
        assert text == r"\sqrt { \operatorname { r } }"
    else:
        assert text == rf"\frac {{ \| {read} \| }} {{ \sqrt {{ n }} }}"


def test_a_paper_s_checks_are_decided_together_once_it_is_read(tmp_path, monkeypatch):
    """Checks whose verdicts nothing after them depends on go to one `decide_many` (a pool of
    processes) once every relation is read, not one by one as they are met: the same verdicts."""
    batches = []
    together = classify.decide_many
    monkeypatch.setattr(
        classify, "decide_many", lambda requests, timeout: batches.append(len(requests)) or together(requests, timeout)
    )
    entries = _entries(tmp_path, "\\[ \\|J\\|_2 \\le \\frac{1}{\\sqrt{\\epsilon}} \\le 5 \\]\n")
    assert batches == [2]
    assert [entry.verdict for entry in entries] == ["proved", "refuted"]
