"""identify: the written definition of every catalog layer, in two notations, names that layer; a
refutation it reports is re-checked in NumPy on the layer's numeric forward."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from grids import tiered

import numeric
from derivations.review.identify import describe, identify
from derivations.review.notation import Notation

ROOT = Path(__file__).resolve().parents[1]

# Each layer's definition as papers write it, in two notations (d with sigma^2, n with Var and E).
WRITTEN = {
    "layernorm": (
        r"y = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}}",
        r"\hat{x} = \frac{x - \mathbb{E}[x]}{\sqrt{\mathrm{Var}[x] + \varepsilon}}",
    ),
    "layernorm_affine": (
        r"y = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta",
        r"y = \gamma \odot \frac{x - \frac{1}{d}\sum_{i=1}^{d} x_i}{\sqrt{\mathrm{Var}[x] + \varepsilon}} + \beta",
    ),
    "layernorm_std_eps": (
        r"y = \frac{x - \mu}{\sqrt{\frac{d}{d - 1}\sigma^2} + \epsilon}",
        r"y = \frac{x - \mu}{\sqrt{\frac{1}{n - 1}\sum_{i=1}^{n} (x_i - \mu)^2} + \varepsilon}",
    ),
    "layernorm_std_eps_biased": (
        r"y = \frac{x - \mu}{\sigma + \epsilon}",
        r"y = \frac{x - \mathbb{E}[x]}{\sqrt{\mathrm{Var}[x]} + \varepsilon}",
    ),
    "rmsnorm": (
        r"y = \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \epsilon}}",
        r"y = \frac{x}{\sqrt{\frac{1}{n}\|x\|_2^2 + \varepsilon}}",
    ),
    "rmsnorm_affine": (
        r"y = \gamma \odot \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \epsilon}}",
        r"y = \frac{x}{\sqrt{\frac{1}{n}\|x\|^2 + \varepsilon}} \odot \gamma + \beta",
    ),
    "rmsnorm_eps_outside": (
        r"y = \frac{x}{\mathrm{RMS}(x) + \epsilon}",
        r"y = \frac{x}{\sqrt{\frac{1}{n}\sum_{i=1}^{n} x_i^2} + \varepsilon}",
    ),
    "rmsnorm_gemma": (
        r"y = \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \epsilon}} \odot (1 + w)",
        r"y = (1 + w) \odot \frac{x}{\sqrt{\frac{1}{n}\|x\|^2 + \varepsilon}}",
    ),
    "prmsnorm": (
        r"y = \frac{x}{\sqrt{r_k + \epsilon}}",
        r"y = \frac{x}{\sqrt{r_{k} + \varepsilon}}",
    ),
    "groupnorm": (
        r"y = \frac{x - \mu_g}{\sqrt{\sigma_g^2 + \epsilon}}",
        r"y = \frac{x - \mu_{G}}{\sqrt{\sigma_{G}^{2} + \varepsilon}}",
    ),
    "batchnorm_train": (
        r"y = \frac{x - \mu_{\mathcal{B}}}{\sqrt{\sigma_{\mathcal{B}}^2 + \epsilon}}",
        r"y = \frac{x - \mu_B}{\sqrt{\sigma_B^2 + \varepsilon}}",
    ),
    "l2norm_clamped": (
        r"y = \frac{x}{\max(\|x\|_2, \epsilon)}",
        r"y = \frac{x}{\max(\lVert x \rVert, \varepsilon)}",
    ),
    "scalenorm": (
        r"y = g \frac{x}{\max(\|x\|_2, \epsilon)}",
        r"y = g \cdot \frac{x}{\max(\lVert x \rVert, \varepsilon)}",
    ),
    "dyt": (
        r"y = \gamma \odot \tanh(\alpha x) + \beta",
        r"\mathrm{DyT}(x) = \gamma \tanh(\alpha x) + \beta",
    ),
}
CASES = tiered([(key, written) for key, pair in WRITTEN.items() for written in pair], fast=2)


@pytest.mark.parametrize(("key", "written"), CASES)
def test_identify_names_the_layer_of_its_written_definition(key, written):
    assert identify(written, Notation()).key == key


@pytest.mark.parametrize("written", [r"y = \tanh(\alpha x)", r"y = g \tanh(\alpha x)", r"y = (1 + w) \tanh(\alpha x)"])
def test_tanh_without_the_gain_gamma_is_no_layer_of_the_catalog(written):
    """Dynamic Tanh is gamma * tanh(alpha x) + beta: without gamma, or with another gain, the
    written map matches no layer."""
    assert identify(written, Notation()).key is None


def test_every_catalog_layer_has_a_written_definition():
    from derivations.catalog import BUILT_IN

    assert set(WRITTEN) == set(BUILT_IN)


def test_a_definition_of_another_layer_is_refuted_and_the_counterexample_holds_in_numpy():
    """TensorFlow-style sigma + epsilon differs from layernorm: the counterexample re-checked."""
    found = identify(r"y = \frac{x - \mu}{\sigma + \epsilon}", Notation())
    assert found.key == "layernorm_std_eps_biased"
    (against,) = [c for c in found.comparisons if c.key == "layernorm"]
    assert against.outcome.verdict == "refuted"
    example = against.outcome.counterexample
    x, epsilon = np.array(example["x"], dtype=float), float(example["epsilon"])
    written = (x - x.mean()) / (np.sqrt(np.mean((x - x.mean()) ** 2)) + epsilon)
    assert not np.allclose(numeric.layernorm.forward(x, epsilon), written)


def test_a_definition_of_no_layer_matches_none():
    assert identify(r"y = \frac{x}{\sigma^2 + \epsilon}", Notation()).key is None


def test_the_command_prints_the_match_and_its_library():
    done = subprocess.run(
        [sys.executable, "-m", "derivations", "identify", "--latex", r"y = \frac{x - \mu}{\sigma + \epsilon}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "equals `layernorm_std_eps_biased`" in done.stdout
    assert "differs from `layernorm` at" in done.stdout


def test_the_command_reads_the_papers_own_letter_given_with_notation(capsys):
    """--notation epsilon=\\delta: a paper that writes delta for epsilon is read in its letters;
    without it, \\delta is an unknown command, one line and exit 2."""
    from derivations.__main__ import main

    written = r"y = \frac{x - \mu}{\sigma + \delta}"
    assert main(["identify", "--notation", r"epsilon=\delta", "--latex", written]) == 0
    assert "equals `layernorm_std_eps_biased`" in capsys.readouterr().out
    with pytest.raises(SystemExit) as ended:
        main(["identify", "--latex", written])
    assert ended.value.code == 2
    assert capsys.readouterr().err.strip().endswith(r"error: unknown LaTeX command \delta")
    # A letter the paper sets in bold is its letter: --notation x=\bar{h} reads \bar{\mathbf{h}}.
    bold = r"y = \frac{\bar{\mathbf{h}} - \mu}{\sigma + \epsilon}"
    assert main(["identify", "--notation", r"x=\bar{h}", "--latex", bold]) == 0
    assert "equals `layernorm_std_eps_biased`" in capsys.readouterr().out
    # A word's letters are not symbols: with n written N, \mathrm{LN} keeps its N.
    named = r"\mathrm{LN}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}}"
    assert main(["identify", "--notation", "n=N", "--latex", named]) == 0
    assert "equals `layernorm` " in capsys.readouterr().out


def test_a_definition_without_epsilon_is_the_layer_at_epsilon_0():
    """Ba et al. and Xiong et al. write LayerNorm without epsilon: it is LayerNorm at epsilon = 0,
    where it was "matches no layer"; a definition by a layer's name keeps the layer's epsilon."""
    found = identify(r"N(\mathbf{x}) = \gamma \frac{\mathbf{x} - \mu}{\sigma} + \beta", Notation())
    assert (found.key, found.epsilon_free) == ("layernorm_affine", True)
    assert "at epsilon = 0" in describe(found)
    named = identify(r"\hat{x} = \mathrm{LN}(x)", Notation())
    assert (named.key, named.epsilon_free) == ("layernorm", False)


# Definitions in the papers' own letters: Ba et al.'s gain g_i and bias b_i, Zhang & Sennrich's
# RMS(a) times g_i, and Nguyen & Salazar's ScaleNorm without epsilon (x = 0 excluded at epsilon = 0).
IN_PAPERS_LETTERS = [
    ("layernorm_affine", r"y_i = g_i \frac{x_i - \mu}{\sqrt{\sigma^2 + \epsilon}} + b_i"),
    ("layernorm_affine", r"h = g \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + b"),
    ("rmsnorm_affine", r"\bar{x}_i = \frac{x_i}{\mathrm{RMS}(x)} g_i"),
    ("scalenorm", r"y = g \frac{x}{\|x\|}"),
]


@pytest.mark.parametrize(("key", "written"), IN_PAPERS_LETTERS)
def test_identify_reads_the_papers_own_letters_for_gain_and_bias(key, written):
    assert identify(written, Notation()).key == key


def test_l2_normalization_at_epsilon_0_excludes_the_zero_input_instead_of_refusing_the_claim():
    """x / max(||x||, 0) has its clamp's case x/0 only at x = 0: that case is dropped where the
    domain excludes x = 0, where it made every claim "undefined (a division by zero)"."""
    from derivations.claims import Claim, check

    proved = check(Claim("y == x / norm(x)", "l2norm_clamped", ("epsilon == 0",), id="a"))
    assert proved.verdict == "proved", proved.detail
    refuted = check(Claim("norm(y) == 2", "l2norm_clamped", ("epsilon == 0",), id="b"))
    assert refuted.verdict == "refuted", refuted.detail
    x = np.array(refuted.counterexample["x"], dtype=float)
    assert np.linalg.norm(x / np.linalg.norm(x)) != 2


def test_a_relation_about_something_else_is_not_taken_for_a_definition():
    """J 1 = 0 was read as y == 0 and said to match no layer."""
    from derivations.claims import ClaimError

    with pytest.raises(ClaimError, match="is not the layer's output"):
        identify(r"J \mathbf{1} = 0", Notation())
    with pytest.raises(ClaimError, match="is not the layer's output"):
        identify(r"\|y\|_2 = \sqrt{n}", Notation())


@pytest.mark.parametrize(
    ("written", "also"),
    [
        (r"y = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}}", "; the same formula as `groupnorm`, `batchnorm_train`;"),
        (r"y = \frac{x - \mu}{\sigma + \epsilon}", None),
        (r"y = \gamma \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta", None),
    ],
)
def test_the_same_formula_lists_the_other_layers_equal_to_it_never_the_match_itself(written, also):
    """LayerNorm's formula is GroupNorm's and BatchNorm's too: they are listed, LayerNorm (the
    match) is not; a layer equal to no other, or matched with a gain, lists none."""
    found = identify(written, Notation())
    text = describe(found)
    assert text.startswith(f"equals `{found.key}`")
    assert text.count(f"`{found.key}`") == 1
    if also is None:
        assert "the same formula as" not in text
    else:
        assert also in text
