"""Figures: drawn only after verification passes, written atomically, readable."""

import matplotlib

matplotlib.use("Agg")

import itertools

import matplotlib.pyplot as plt
import pytest

import figures.__main__ as cli
from figures import layer_normalization_epsilon_response as seed_figure
from numeric.agreement import AgreementError


def test_figure_is_written_at_the_seed_size(tmp_path):
    assert cli.main(["--out", str(tmp_path)]) == 0
    path = tmp_path / "layer-normalization-epsilon-response.png"
    image = plt.imread(path)
    assert image.shape[:2] == (410, 860)
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


def test_no_png_when_verification_fails(tmp_path, monkeypatch, capsys):
    def failing_run():
        raise AgreementError("slope vs symbolic: at (3,) got 1.0, expected 2.0")

    monkeypatch.setattr(cli.verify, "run", failing_run)
    assert cli.main(["--out", str(tmp_path)]) == 1
    assert list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert "verification failed: slope vs symbolic" in err
    assert "no figure written" in err


def _overlaps(boxes):
    return [(a, b) for a, b in itertools.pairwise(boxes) if a.x1 > b.x0]


def test_tick_labels_do_not_overlap():
    figure = seed_figure.draw()
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        boxes = sorted(
            (label.get_window_extent(renderer) for label in axes.get_xticklabels() if label.get_text()),
            key=lambda box: box.x0,
        )
        assert len(boxes) >= 3
        assert _overlaps(boxes) == []
    plt.close(figure)


def test_content_matches_the_seed():
    figure = seed_figure.draw()
    forward, derivative = figure.axes
    colors = [line.get_color() for line in forward.get_lines()[:3]]
    assert colors == ["#0072b2", "#d55e00", "#009e73"]
    labels = [text.get_text() for text in forward.get_legend().get_texts()]
    assert labels == [r"$\varepsilon=0.04$", r"$\varepsilon=0.25$", r"$\varepsilon=1$"]
    dashed = sorted(line.get_ydata()[0] for line in forward.get_lines() if line.get_linestyle() == "--")
    assert dashed == pytest.approx([-(1.5**0.5), 1.5**0.5], rel=1e-15)
    assert r"Slope at $t=0$: $\dfrac{1}{\sqrt{\varepsilon}}$" in [text.get_text() for text in derivative.texts]
    plt.close(figure)


def test_the_seed_tick_spacing_would_overlap():
    """The overlap check can fail: with the seed's 0.25 spacing it does."""
    from matplotlib.ticker import MultipleLocator

    figure = seed_figure.draw()
    derivative = figure.axes[1]
    derivative.xaxis.set_major_locator(MultipleLocator(0.25))
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = sorted(
        (label.get_window_extent(renderer) for label in derivative.get_xticklabels() if label.get_text()),
        key=lambda box: box.x0,
    )
    assert _overlaps(boxes) != []
    plt.close(figure)


def test_bad_arguments_print_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--bogus"])
    assert stop.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
