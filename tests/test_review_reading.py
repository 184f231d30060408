"""review reads a paper as it is written: an outside check's findings, each a wrong verdict the
reader once gave (proved for a false relation, or refuted for a true one), pinned here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from derivations.claims import latex
from derivations.review import classify, document
from derivations.review.notation import Notation


def _rows(tmp_path: Path, source: str, notation: Notation | None = None) -> list[tuple[str, str, str]]:
    """(class, verdict, layer) of each link of the paper ``source``."""
    (tmp_path / "main.tex").write_text(source)
    context = classify.Context(notation or Notation(), None, 30.0)
    entries = classify.review(document.read(tmp_path / "main.tex"), context)
    return [(entry.kind, entry.verdict, entry.layer) for entry in entries]


LN = "\\[ y = \\frac{x - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}} \\]\n"
NORM_J = "\\left\\| \\frac{\\partial y}{\\partial x} \\right\\|_2"


def test_a_limit_takes_the_whole_product_that_follows_it():
    """lim sqrt(eps) ||J|| was the limit of sqrt(eps) alone times ||J||: 0, proved; it is 1 at a
    constant input for every epsilon."""
    claim = latex.to_claim(r"\lim_{\epsilon \to 0^{+}} \sqrt{\epsilon} \left\| J \right\|_2 = 0")
    assert claim == "limit(sqrt(epsilon) * norm(J, 2), epsilon, 0, '+') == 0"
    assert latex.to_claim(r"\lim_{\epsilon \to 0} \|y\| + 1 = 2") == "limit(norm(y), epsilon, 0) + 1 == 2"
    epsilon = 1e-6  # the constant input: J = I / sqrt(epsilon)
    assert np.isclose(np.sqrt(epsilon) * np.linalg.norm(np.eye(3) / np.sqrt(epsilon), 2), 1.0)


def test_the_jacobian_of_a_layer_named_in_the_numerator_is_that_layers(tmp_path):
    """d RMSNorm(x)/dx was checked as the Jacobian of the LayerNorm defined first, and proved."""
    source = (
        LN + "\\[ \\mathrm{RMSNorm}(x) = \\frac{x}{\\sqrt{\\frac{1}{n}\\sum_i x_i^2} + \\epsilon} \\]\n"
        "\\[ \\left\\| \\frac{\\partial\\, \\mathrm{RMSNorm}(\\mathbf{x})}{\\partial \\mathbf{x}} \\right\\|_2"
        " \\le \\frac{1}{\\sqrt{\\epsilon}} \\]\n"
        "\\[ \\left\\| \\frac{\\partial \\mathbf{h}}{\\partial \\mathbf{x}} \\right\\|_2 \\le 1 \\]\n"
    )
    rows = _rows(tmp_path, source)
    assert rows[2] == ("checked", "refuted", "rmsnorm_eps_outside")
    assert rows[3][0] == "not in the vocabulary"  # the derivative of h is not the Jacobian


@pytest.mark.parametrize(
    "condition",
    [r"\quad \text{for } H \ge 3", r", \quad n \ge 3", r"\qquad (n \ge 3)", r"\quad \forall n \ge 3"],
)
def test_a_condition_the_row_states_is_an_assumption_of_its_check(tmp_path, condition):
    """||J|| = 1/s holds for n >= 3 and fails at n = 2: the condition was dropped and the relation
    refuted, and n >= 3 checked on its own and refuted "for all n"."""
    rows = _rows(tmp_path, LN + f"\\[ {NORM_J} = \\frac{{1}}{{\\sqrt{{\\sigma^2 + \\epsilon}}}} {condition} \\]\n")
    assert rows[1:] == [("checked", "proved", "layernorm")]


def test_a_condition_the_checker_cannot_assume_leaves_the_relation_unread(tmp_path):
    rows = _rows(
        tmp_path,
        LN + f"\\[ {NORM_J} = \\frac{{1}}{{\\sqrt{{\\sigma^2 + \\epsilon}}}} \\quad \\text{{for }} x \\neq 0 \\]\n",
    )
    assert rows[1][0] == "not read"


def test_a_subscripted_sigma_with_epsilon_inside_is_the_papers_own(tmp_path):
    """Wu & He's sigma_i with epsilon inside was refuted as the vocabulary's sigma."""
    source = (
        "\\[ \\sigma_i = \\sqrt{\\frac{1}{n}\\sum_{k}(x_k-\\mu_i)^2+\\epsilon} \\]\n"
        "\\[ \\frac{1}{n}\\sum_k \\hat{x}_k^2 = \\frac{\\sigma_i^2-\\epsilon}{\\sigma_i^2} \\]\n"
    )
    rows = _rows(tmp_path, source)
    assert rows[0][:2] == ("defined", "differs from the vocabulary's \\sigma")
    assert rows[1][0] == "not in the vocabulary"


def test_relations_after_a_definition_not_read_are_not_checked_against_the_previous_layer(tmp_path):
    """After a definition not read, ||J|| <= 1/sqrt(eps) was checked against the LayerNorm before
    it, and proved, though the paper's layer (std + eps) breaks it; a braceless mu_\\mathcal{B} is read."""
    source = (
        LN + "\\[ \\hat{x} = \\frac{x - \\mu}{\\operatorname{rsqrt}(x) + \\epsilon} \\]\n"
        f"\\[ {NORM_J} \\le \\frac{{1}}{{\\sqrt{{\\epsilon}}}} \\]\n"
        "\\[ \\hat{x} = \\frac{x - \\mu_\\mathcal{B}}{\\sigma_u + \\epsilon} \\]\n"
        f"\\[ {NORM_J} \\le \\frac{{1}}{{\\sqrt{{\\epsilon}}}} \\]\n"
    )
    rows = _rows(tmp_path, source)
    assert rows[2][:2] == ("not read", "")
    assert rows[3][:2] == ("defined", "equals layernorm_std_eps")
    assert rows[4] == ("checked", "refuted", "layernorm_std_eps")


def test_h_is_the_width_only_in_a_paper_that_uses_it_as_one(tmp_path):
    """H 1 = 0 (H the Hessian) was read as n * ones == 0 and refuted."""
    rows = _rows(tmp_path, LN + "\\[ H \\mathbf{1} = 0 \\]\n")
    assert rows[1][0] == "not in the vocabulary"
    rows = _rows(tmp_path, LN + "\\[ \\mu = \\frac{1}{H}\\sum_{i=1}^{H} x_i \\]\n")
    assert rows[1] == ("checked", "proved", "layernorm")


def test_scalenorms_gain_g_is_its_gain_not_the_upstream_gradient(tmp_path):
    """||ScaleNorm(x)|| <= |g| was read with g the upstream gradient vector, and refuted."""
    source = (
        "\\[ \\mathrm{ScaleNorm}(x) = g \\frac{x}{\\max(\\|x\\|_2, \\epsilon)} \\]\n"
        "\\[ \\left\\| \\mathrm{ScaleNorm}(\\mathbf{x}) \\right\\|_2 \\le |g| \\]\n"
        "\\[ \\left\\| \\mathrm{ScaleNorm}(\\mathbf{x}) \\right\\|_2 \\le |g| / 2 \\]\n"
    )
    assert _rows(tmp_path, source)[1:] == [("checked", "proved", "scalenorm"), ("checked", "refuted", "scalenorm")]


def test_the_output_restated_as_a_named_layer_is_the_layer_from_there_on(tmp_path):
    """Zhang & Sennrich: the output with gain g_i first, then bar a = RMSNorm(a) without it (bold,
    under --notation y=\\bar{a}); the Jacobian after was checked about the gain's layer and refuted."""
    source = (
        "\\[ \\bar{a}_i = \\frac{a_i}{\\mathrm{RMS}(\\mathbf{a})} g_i \\]\n"
        "\\[ \\bar{\\mathbf{a}} = \\mathrm{RMSNorm}(\\mathbf{a}) \\]\n"
        "\\[ \\mathrm{RMSNorm}(\\mathbf{a})"
        " = \\frac{\\mathbf{a}}{\\sqrt{\\mathrm{RMS}(\\mathbf{a})^2 + \\epsilon}} \\]\n"
        "\\[ \\frac{\\partial \\bar{\\mathbf{a}}}{\\partial \\mathbf{a}}^\\top"
        " = \\frac{\\partial \\bar{\\mathbf{a}}}{\\partial \\mathbf{a}} \\]\n"
    )
    notation = Notation.parse(["x=a", "y=\\bar{a}"])
    rows = _rows(tmp_path, source, notation)
    assert rows[0][:2] == ("defined", "equals rmsnorm_affine")
    assert rows[1][:2] == ("defined", "equals rmsnorm")
    assert rows[3] == ("checked", "proved", "rmsnorm")


def test_an_input_is_found_beside_the_main_file_as_pdflatex_finds_it(tmp_path):
    (tmp_path / "sections").mkdir()
    (tmp_path / "main.tex").write_text("\\input{sections/a}\n")
    (tmp_path / "sections" / "a.tex").write_text("\\input{sections/b}\n")
    (tmp_path / "sections" / "b.tex").write_text("\\[ \\|y\\|_2 \\le \\sqrt{n} \\]\n")
    found = document.read(tmp_path / "main.tex")
    assert [relation.file for relation in found.relations] == ["sections/b.tex"]


def test_an_affine_output_of_the_normalized_one_keeps_the_normalized_layer_in_force(tmp_path):
    """Ioffe & Szegedy: y_i = gamma x_hat_i + beta was read as y == gamma * y + beta; relations about
    x_hat after it are about the normalization, and y is the paper's own symbol."""
    source = (
        "\\[ \\hat{x}_i = \\frac{x_i - \\mu_\\mathcal{B}}{\\sqrt{\\sigma_\\mathcal{B}^2 + \\epsilon}} \\]\n"
        "\\[ y_i = \\gamma \\hat{x}_i + \\beta \\]\n"
        "\\[ \\sum_i \\hat{x}_i = 0 \\]\n"
        "\\[ \\sum_i y_i = 0 \\]\n"
        "\\[ \\frac{1}{m}\\sum_{i=1}^{m} x_i = \\mu \\]\n"
    )
    rows = _rows(tmp_path, source)
    assert rows[1] == ("defined", "affine output", "batchnorm_train")
    assert rows[2] == ("checked", "proved", "batchnorm_train")
    assert rows[3][0] == "not in the vocabulary"  # the affine y is not the normalized output
    assert rows[4] == ("checked", "proved", "batchnorm_train")  # m, the batch size, is the width here


@pytest.mark.parametrize(
    ("latex", "kept"),
    [("\\gamma^{i}", "\\gamma ^ { i }"), ("\\beta^{k} + 1", "\\beta ^ { k } + 1"), ("\\gamma^2", "\\gamma ^ 2")],
)
def test_only_a_subscript_makes_the_gain_or_bias_an_entry(latex, kept):
    """gamma_i is the gain's entry (read as gamma); gamma^i is a power, kept as written."""
    from derivations.review.notation import canonical

    assert canonical(latex, Notation()) == kept
    assert canonical(latex.replace("^", "_"), Notation()).split()[0] in ("\\gamma", "\\beta")


def test_the_largest_gain_entry_is_gamma_max():
    from derivations.review.notation import read

    claim = read("\\|J\\|_2", "|\\alpha| \\max_i |\\gamma_i|", "\\le", Notation())
    assert claim == "norm(J, 2) <= abs(alpha) * gamma_max"


def test_a_loss_gradient_by_entry_and_an_operator_on_a_derivative_are_read():
    """sum_i dl/dx_i and det dy/dx were "names \\ell" and "unknown LaTeX command \\partial"."""
    from derivations.review.notation import read

    assert read("\\sum_i \\frac{\\partial \\ell}{\\partial x_i}", "0", "=", Notation()) == "sum(J.T * g) == 0"
    assert read("\\det \\frac{\\partial y}{\\partial x}", "0", "=", Notation()) == "det(J) == 0"


def test_a_letter_inside_a_word_is_not_the_redefined_symbol(tmp_path):
    """After y became the affine output, DyT's definition (\\mathrm{DyT} holds a y) was "names y"."""
    source = (
        "\\[ \\hat{x}_i = \\frac{x_i - \\mu}{\\sqrt{\\sigma^2 + \\epsilon}} \\]\n"
        "\\[ y_i = \\gamma \\hat{x}_i + \\beta \\]\n"
        "\\[ \\mathrm{DyT}(\\mathbf{x}) = \\gamma \\odot \\tanh(\\alpha \\mathbf{x}) + \\beta \\]\n"
    )
    assert _rows(tmp_path, source)[2][:2] == ("defined", "equals dyt")
