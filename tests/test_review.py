"""review: a whole paper read as LaTeX, every relation classified and checked, the report written
whole; bad input is one line and status 2 with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import numeric
from derivations.review import document
from derivations.review.notation import Notation, canonical, foreign, split

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
    assert (out / "review.md").read_text() == (PAPER / "review.md").read_text()


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
    assert all(row["class"] in ("checked", "definition", "not in the vocabulary", "not read") for row in rows)
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


def test_the_notation_splits_chains_and_names_foreign_symbols():
    links = split(r"\|J\|_2 = \frac{1}{\sqrt{\sigma^2 + \epsilon}} \le \frac{1}{\sqrt{\epsilon}}.")
    assert [link.relation for link in links] == ["=", "\\le"]
    assert foreign(canonical(r"\mathrm{softmax}(Q K^\top / \sqrt{d_k})", Notation())) == ["\\mathrm{softmax}", "d_k"]
    assert foreign(canonical(r"\mathrm{LN}(x) = \hat{x}", Notation())) == []


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
