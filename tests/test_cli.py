"""`python -m derivations`: the golden LaTeX, the three formats, and clean errors."""

import json
from pathlib import Path

import pytest

from derivations import LAYERS, formulas
from derivations.__main__ import main
from derivations.catalog import rows
from derivations.render import FORMATS, text

GOLDEN = Path(__file__).parent / "golden"


def _blocks(text: str) -> dict[str, str]:
    """The golden text's blocks by their first line, the formula's qualified name."""
    return {block.split("\n", 1)[0]: block for block in text.strip("\n").split("\n\n")}


GOLDEN_BLOCKS = _blocks((GOLDEN / "derive.txt").read_text())


@pytest.fixture(scope="module")
def produced() -> dict[str, str]:
    return _blocks(text(rows(list(LAYERS))))


# A deliberate change to a formula is recorded with `make golden` and reviewed
# as a diff of tests/golden/derive.txt; a drift names the formula that moved.
@pytest.mark.parametrize("name", list(GOLDEN_BLOCKS))
def test_formula_matches_the_committed_golden_block(name, produced):
    assert name in produced, f"{name} is in tests/golden/derive.txt but no longer derived"
    assert produced[name] == GOLDEN_BLOCKS[name], f"{name} drifted from tests/golden/derive.txt"


def test_every_formula_has_a_golden_block_in_order(produced):
    assert list(produced) == list(GOLDEN_BLOCKS), "formulas added, removed or reordered: run make golden"


def test_the_whole_text_output_is_the_golden_file(capsys):
    assert main([]) == 0
    assert capsys.readouterr().out == (GOLDEN / "derive.txt").read_text()


@pytest.mark.parametrize("key", list(LAYERS))
def test_one_layer_is_its_part_of_the_whole(key, capsys):
    assert main(["--layer", key]) == 0
    part = capsys.readouterr().out
    assert part.startswith(f"{key}.definition\n")
    assert part in (GOLDEN / "derive.txt").read_text()


def test_json_has_name_statement_latex_for_every_formula(capsys):
    assert main(["--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    every = [f for key in LAYERS for f in formulas(key)]
    assert [r["name"] for r in rows] == [f.qualified for f in every]
    for row, f in zip(rows, every, strict=True):
        assert {"name", "statement", "latex"} <= row.keys()
        assert row["latex"] == f.latex()
        assert row["statement"] == f.statement


def test_markdown_uses_math_blocks(capsys):
    assert main(["--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.count("```math\n") == sum(len(formulas(key)) for key in LAYERS)
    assert r"J c = \frac{\varepsilon}{s^{3}} c" in out


def test_every_format_is_registered():
    assert sorted(FORMATS) == ["conventions", "json", "latex", "markdown", "text"]


@pytest.mark.parametrize("argv", [["--format", "yaml"], ["--layer", "nope"], ["--bogus"]])
def test_bad_arguments_print_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_readme_blocks_are_generated_from_the_derivations():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme", GOLDEN / "readme.py")
    assert spec is not None
    assert spec.loader is not None
    readme = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(readme)
    text = readme.README.read_text()
    for name in ("conventions", "sample", "latex"):
        assert readme.block(name).search(text), f"README has no {name} block"
    assert readme.update(text) == text, "README blocks are stale: run make golden"


def test_claims_are_read_from_a_pipe():
    """``--claims /dev/stdin``: a file that is not a regular one, read whole (a real process: its stdin)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "derivations", "check", "--claims", "/dev/stdin"],
        input='[[claim]]\nid = "a"\nclaim = "slope_at_zero == 1/sqrt(epsilon)"\n'
        '[[claim]]\nid = "b"\nclaim = "slope_at_zero == 1/epsilon"\n',
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert [line.split()[:2] for line in done.stdout.splitlines() if line.startswith("[")] == [
        ["[a]", "proved:"],
        ["[b]", "refuted:"],
    ]
    assert done.returncode == 1, done.stderr
