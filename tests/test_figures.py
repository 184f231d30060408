"""Figures: drawn only after verification passes, written atomically, readable."""

import contextlib
import fcntl
import io
import itertools
import json
import os
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import pytest
from docs_text import docs_words
from latex_lines import unbroken
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.ticker import MultipleLocator

import figures.__main__ as cli
from figures import FIGURES, _pdflatex, spectrum
from figures import layer_normalization_epsilon_response as seed_figure
from numeric.checks.agreement import AgreementError, assert_agree

SIZES = {
    "layer-normalization-epsilon-response.png": (410, 860),
    "conventions.png": (1160, 1280),
    "spectrum.png": (480, 720),
}


@pytest.fixture(scope="module")
def written():
    """`python -m figures --out FOLDER` run once in the whole run for the tests that read what it
    writes: (status, FOLDER, what it printed, the key it drew under).

    The first process to ask draws, under a lock, in the run's cache folder (shared by the xdist
    workers, removed at the end of the run), in a folder of this run's own (a cache folder given
    in the environment outlives runs); any other reads what it recorded.  The key is the
    real one, computed at each call, and a suffix naming that folder: no other run's, test's or
    setup's entry is under it, so the first setup draws; the recall test then recalls that set
    under the same key."""
    # xdist's id of this run, shared by its workers; a run without xdist is its one process.
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"process {os.getpid()}"
    shared = Path(os.environ["EPSILON_LAYERNORM_TEST_CACHE"]) / "test_figures" / run
    shared.mkdir(parents=True, exist_ok=True)
    folder, record, real = shared / "figures", shared / "drawn.json", cli._key

    def key():
        return real() + f"test_figures in {shared}".encode()

    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            # A draw that raised in another process left no record: this one draws afresh (and shows the error).
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            printed = io.StringIO()
            with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
                patch.setattr(cli, "_key", key)
                status = cli.main(["--out", str(folder)])
            partial = shared / "drawn.json.partial"
            partial.write_text(json.dumps({"status": status, "printed": printed.getvalue()}))
            partial.replace(record)
        drawn = json.loads(record.read_text())
    return drawn["status"], folder, drawn["printed"], key


def _files(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_a_recalled_set_is_byte_identical_to_one_drawn_now(written, tmp_path, capsys, monkeypatch):
    status, drawn, printed, key = written
    assert status == 0
    assert "verification passed" in printed
    assert "an earlier run" not in printed
    monkeypatch.setattr(cli, "_key", key)
    nested = tmp_path / "not" / "yet" / "there"  # --out creates its folder and every parent
    assert cli.main(["--out", str(nested)]) == 0
    assert "an earlier run, same sources and versions" in capsys.readouterr().out
    files = _files(drawn)
    assert set(files) == {module.FILENAME for module in FIGURES}
    assert _files(nested) == files


def test_every_figure_is_written_at_its_size(written):
    status, folder, *_ = written
    assert status == 0
    for module in FIGURES:
        image = plt.imread(folder / module.FILENAME)
        assert image.shape[:2] == SIZES[module.FILENAME]
    assert not list(folder.glob(".*"))  # no temporary file left behind


def test_no_png_when_verification_fails(tmp_path, monkeypatch, capsys):
    def failing_run():
        raise AgreementError("slope vs symbolic: at (3,) got 1.0, expected 2.0")

    monkeypatch.setattr(cli.verify, "run", failing_run)
    # Without the cache: a set an earlier run drew after its verification passed is not drawn again.
    assert cli.main(["--out", str(tmp_path), "--no-cache"]) == 1
    assert list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert "verification failed: slope vs symbolic" in err
    assert "no figure written" in err


def _tick_boxes(figure, *axes):
    """Each axes' labelled x ticks, left to right, from one rendering of the whole figure."""
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    labels = ([label for label in one.get_xticklabels() if label.get_text()] for one in axes)
    return [sorted((label.get_window_extent(renderer) for label in each), key=lambda box: box.x0) for each in labels]


def _overlaps(boxes):
    return [(a, b) for a, b in itertools.pairwise(boxes) if a.x1 > b.x0]


# The smallest type any figure sets, legends included, at the size it is written at.
SMALLEST_POINTS = 9


@pytest.mark.parametrize("module", FIGURES, ids=lambda m: m.FILENAME)
def test_figure_is_readable(module):
    figure = module.draw()
    legends = list(figure.legends) + [ax.get_legend() for ax in figure.axes if ax.get_legend()]
    assert legends, "a legend names the curves"
    texts = [text for text in figure.findobj(matplotlib.text.Text) if text.get_text() and text.get_visible()]
    small = [(text.get_text(), text.get_fontsize()) for text in texts if text.get_fontsize() < SMALLEST_POINTS]
    assert small == [], f"text below {SMALLEST_POINTS} pt"
    for axes, boxes in zip(figure.axes, _tick_boxes(figure, *figure.axes), strict=True):
        assert axes.get_xlabel()
        assert axes.get_ylabel()
        assert len(boxes) >= 3
        assert _overlaps(boxes) == []


def test_the_seed_tick_spacing_would_overlap():
    """The overlap check can fail: with the seed's 0.25 spacing it does."""
    figure = seed_figure.draw()
    derivative = figure.axes[1]
    derivative.xaxis.set_major_locator(MultipleLocator(0.25))
    assert _overlaps(_tick_boxes(figure, derivative)[0]) != []


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


def test_the_seed_curves_are_the_derived_functions_on_both_sides_of_zero():
    """The response on -3 .. 3 and the slope on -1 .. 1 (both signs of t: the peak at 0 is in the middle)."""
    from numeric import layernorm

    forward, derivative = seed_figure.draw().axes
    for axes, function, span in ((forward, layernorm.response, 3), (derivative, layernorm.slope, 1)):
        curves = [line for line in axes.get_lines() if len(line.get_xdata()) > 2][:3]
        assert len(curves) == 3
        for curve, epsilon in zip(curves, (0.04, 0.25, 1.0), strict=True):
            t = np.asarray(curve.get_xdata())
            assert (t.min(), t.max()) == (-span, span)
            assert_agree(curve.get_ydata(), function(t, epsilon), rtol=0, what=f"curve at epsilon = {epsilon}")


def test_the_tallest_slope_fills_its_panel_below_a_little_headroom():
    """The sensitivity panel starts at 0 and its tallest curve (the smallest epsilon's peak at
    t = 0) reaches 3/4 to 9/10 of its height: the peak readable, not squashed at the bottom."""
    _, derivative = seed_figure.draw().axes
    low, high = derivative.get_ylim()
    tallest = max(max(line.get_ydata()) for line in derivative.get_lines() if len(line.get_xdata()) > 2)
    assert low == 0
    assert 0.75 * high <= tallest <= 0.9 * high, (tallest, high)


def test_the_spectrum_plots_each_eigenvalue_times_the_root_of_epsilon():
    """spectrum.png plots lambda sqrt(epsilon) against q/epsilon, so that the bound 1/sqrt(epsilon)
    is the line at 1: 1/s gives 1/sqrt(1 + q/epsilon), epsilon/s**3 gives (1 + q/epsilon)**-1.5
    (typed here, independently of the derivation)."""
    axes = spectrum.draw().axes[0]
    complement, centered = [line for line in axes.get_lines() if len(line.get_xdata()) > 2]
    ratio = np.asarray(complement.get_xdata())
    assert_agree(complement.get_ydata(), 1 / np.sqrt(1 + ratio), rtol=1e-14, what="1/s times sqrt(epsilon)")
    assert_agree(centered.get_ydata(), (1 + ratio) ** -1.5, rtol=1e-14, what="epsilon/s**3 times sqrt(epsilon)")
    # The dashed line is the bound, 1/sqrt(epsilon) times sqrt(epsilon): at 1, which 1/s nears as q -> 0.
    (bound,) = [line for line in axes.get_lines() if line.get_linestyle() == "--"]
    assert_agree(np.asarray(bound.get_ydata(), dtype=float), np.ones(2), rtol=1e-15, what="the bound line")
    # Every curve is inside the axes, and the bound, the largest value drawn, is within half a
    # decade of the top: the plot spends its height on the curves.
    low, top = axes.get_ylim()
    assert low <= min(centered.get_ydata().min(), complement.get_ydata().min())
    assert 1 < top <= 10**0.5


def test_conventions_legend_carries_each_derived_slope_at_zero():
    figure = FIGURES[1].draw()
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes if ax.get_legend())]
    labels = [text.get_text() for legend in legends for text in legend.get_texts()]
    assert any(label.startswith("layernorm_std_eps: slope at 0 = $\\dfrac{1}{\\varepsilon}$") for label in labels)
    assert any(label.startswith("rmsnorm: slope at 0 = $\\dfrac{1}{\\sqrt{\\varepsilon}}$") for label in labels)
    # A slope in epsilon is its formula alone; Dynamic Tanh's, drawn at alpha_0, also its value there.
    assert "rmsnorm: slope at 0 = $\\dfrac{1}{\\sqrt{\\varepsilon}}$" in labels
    assert "l2norm_clamped: slope at 0 = $\\dfrac{1}{\\varepsilon}$" in labels
    (dyt,) = [label for label in labels if label.startswith("dyt: ")]
    assert dyt.endswith("$ = 0.5"), dyt


def test_bad_arguments_print_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--bogus"])
    assert stop.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_report_holds_every_formula_figure_check_and_version(written, tmp_path, monkeypatch):
    from derivations import LAYERS, formulas
    from derivations.catalog import rows
    from derivations.render import proved_text
    from figures import report

    status, folder, *_ = written
    assert status == 0
    # Two of the example claims, a proved one and a refuted one: the whole file's verdicts are
    # test_claims.py's (test_the_example_file_meets_every_expectation), checked once per run.
    examples = tmp_path / "claims.toml"
    entries = report.EXAMPLES.read_text().split("[[claim]]")
    examples.write_text("[[claim]]".join(entries[:3]))
    monkeypatch.setattr(report, "EXAMPLES", examples)
    (tmp_path / "figures").symlink_to(folder, target_is_directory=True)
    sheet = report.build(tmp_path / "report.md", tmp_path / "figures").read_text()
    for key in LAYERS:
        for f in formulas(key):
            assert f"**`{f.qualified}`**" in sheet
            assert f.latex() in sheet
    for module in FIGURES:
        assert f"(figures/{module.FILENAME})" in sheet
    assert "| **total** |" in sheet
    from derivations.claims import load

    claims = load(report.EXAMPLES)
    assert [claim.expect for claim in claims] == ["proved", "refuted"]
    assert "2 of 2 as expected" in sheet
    for claim in claims:
        assert f"| {claim.id} | `{claim.text}` | {claim.layer} | {claim.expect} | {claim.expect} |" in sheet
    for name in ("Python", "SymPy", "NumPy"):
        assert f"- {name} " in sheet
    assert sheet.count("```math") == sum(len(formulas(key)) for key in LAYERS)

    # The same sheet as a LaTeX article: each formula labelled, its proof line beneath it.
    tex = (tmp_path / "report.tex").read_text()
    for key in LAYERS:
        for f in formulas(key):
            block = tex.split(f"\\label{{eq:{f.qualified}}}\n", 1)[1]
            env = "multline" if len(f.latex_lines()) > 1 else "equation"
            equation, after = block.split(f"\\end{{{env}}}\n", 1)
            assert unbroken(equation.splitlines()) == f.latex()
            assert after.startswith("\\noindent{\\small Established ")
            row = next(r for r in rows([key]) if r["name"] == f.qualified)
            text = proved_text(row)
            proof = f"{text[0].upper()}{text[1:]}."
            assert report.escape(proof) in after.split("\n", 1)[0]
    for module in FIGURES:
        assert f"\\includegraphics[width=\\linewidth]{{figures/{module.FILENAME}}}" in tex
    pdf = tmp_path / "report.pdf"
    assert pdf.exists() == _pdflatex.available()
    if pdf.exists():
        assert pdf.read_bytes().startswith(b"%PDF")  # compiled with no error and no overfull box over 10 pt


def test_report_needs_the_figures(tmp_path):
    from figures import report

    with pytest.raises(FileNotFoundError, match="run make figures first"):
        report.build(tmp_path / "report.md", tmp_path / "nowhere")


def test_the_claims_table_runs_over_pages_and_wraps_long_layer_keys():
    """The whole claims file (69 claims, layer keys like layernorm_std_eps_biased) overflowed the
    page as one tabular: the report ended in an overfull box and was not written."""
    from types import SimpleNamespace

    from figures import report

    claim = SimpleNamespace(text="norm(J, 2) <= 1/sqrt(epsilon)", layer="layernorm_std_eps_biased", expect="refuted")
    verdicts = [SimpleNamespace(claim=claim, verdict="refuted", met=True)] * 120
    tex = report.document([], [], report._Checks({"agreement": 1}, verdicts))
    assert r"\begin{longtable}" in tex
    assert r"layernorm\_\allowbreak{}std" in tex
    if _pdflatex.available():
        assert _pdflatex.compile_pdf(tex).pdf.startswith(b"%PDF")


def test_conventions_lines_stay_apart_in_greyscale_and_show_the_whole_curve():
    """In each panel every layer differs from the others in colour and in dash (it reads printed in
    grey), each later line is thinner than the one under it and at least 1 pt wide (overlapping
    curves stay visible), a row's response and slope draw a layer alike, and the axis spans the
    drawn t exactly."""
    figure = FIGURES[1].draw()
    assert FIGURES[1].FILENAME == "conventions.png"
    drawn = [[line for line in axes.get_lines() if len(line.get_xdata()) > 2] for axes in figure.axes]
    assert max(len(lines) for lines in drawn) >= 3
    for axes, lines in zip(figure.axes, drawn, strict=True):
        styles = [(line.get_color(), line.get_linestyle(), line.get_linewidth()) for line in lines]
        assert len({color for color, _, _ in styles}) == len({dash for _, dash, _ in styles}) == len(styles), styles
        widths = [width for _, _, width in styles]
        assert widths == sorted(set(widths), reverse=True), widths
        assert min(widths) >= 1, widths
        for line in lines:
            t = np.asarray(line.get_xdata())
            assert axes.get_xlim() == (t.min(), t.max())
    for response, slope in zip(drawn[::2], drawn[1::2], strict=True):
        assert [(a.get_color(), a.get_linestyle(), a.get_linewidth()) for a in response] == [
            (b.get_color(), b.get_linestyle(), b.get_linewidth()) for b in slope
        ]


@pytest.mark.parametrize("module", FIGURES, ids=lambda module: module.FILENAME)
def test_reference_lines_are_drawn_thinner_than_every_curve_of_their_axes(module):
    """A bound, an asymptote or an axis drawn across a panel (a line of two points) reads as a
    reference, under the data: thinner than every curve of its axes."""
    figure = module.draw()
    for axes in figure.axes:
        lines = axes.get_lines()
        references = [line.get_linewidth() for line in lines if len(line.get_xdata()) <= 2]
        curves = [line.get_linewidth() for line in lines if len(line.get_xdata()) > 2]
        assert curves, f"{module.FILENAME}: a panel with no curve"
        assert all(width < min(curves) for width in references), (references, curves)


@pytest.mark.parametrize("module", FIGURES, ids=lambda module: module.FILENAME)
def test_reference_lines_of_one_kind_are_drawn_alike(module):
    """Reference lines of one colour and dash in a panel (the axes through 0, the asymptotes at
    plus and minus their value) are one kind of mark, drawn at one width."""
    figure = module.draw()
    for axes in figure.axes:
        widths: dict[tuple[str, str], set[float]] = {}
        for line in axes.get_lines():
            if len(line.get_xdata()) <= 2:
                widths.setdefault((line.get_color(), line.get_linestyle()), set()).add(line.get_linewidth())
        assert all(len(found) == 1 for found in widths.values()), (module.FILENAME, widths)


@pytest.mark.parametrize("module", FIGURES, ids=lambda module: module.FILENAME)
def test_every_panel_with_its_labels_lies_within_the_figure_and_apart_from_its_title(module):
    """Nothing is cut off at the figure's edge (each panel measured with its ticks, labels, legend
    and heading, and each line of text the figure holds), and the title and subtitle cross no panel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = module.draw()
    FigureCanvasAgg(figure).draw()
    renderer = figure.canvas.get_renderer()
    edge = figure.bbox.padded(0.5)  # half a pixel: rounding
    panels = [axes.get_tightbbox(renderer) for axes in figure.axes]
    for box in panels:
        assert edge.x0 <= box.x0 <= box.x1 <= edge.x1, (module.FILENAME, box.extents, edge.extents)
        assert edge.y0 <= box.y0 <= box.y1 <= edge.y1, (module.FILENAME, box.extents, edge.extents)
    title = figure._suptitle
    assert title is not None
    assert not any(title.get_window_extent(renderer).overlaps(axes.get_window_extent(renderer)) for axes in figure.axes)
    # A subtitle (figure text) lies within the figure too, under the title and above the panels.
    for text in (text for text in figure.texts if text is not title):
        box = text.get_window_extent(renderer)
        assert edge.x0 <= box.x0 <= box.x1 <= edge.x1, text.get_text()
        assert edge.y0 <= box.y0 <= box.y1 <= edge.y1, text.get_text()
        assert not box.overlaps(title.get_window_extent(renderer)), text.get_text()
        assert not any(box.overlaps(axes.get_window_extent(renderer)) for axes in figure.axes), text.get_text()


@pytest.mark.parametrize("module", FIGURES, ids=lambda module: module.FILENAME)
def test_every_panel_is_open_at_the_top_and_right_as_the_others(module):
    """One style across the figures: a panel keeps its left and bottom axes, with ticks, and
    draws no frame line at the top or the right."""
    for axes in module.draw().axes:
        shown = {side: spine.get_visible() for side, spine in axes.spines.items()}
        assert shown == {"left": True, "bottom": True, "top": False, "right": False}, (module.FILENAME, shown)


@pytest.mark.parametrize("module", FIGURES, ids=lambda module: module.FILENAME)
def test_every_curve_lies_within_its_axes_where_it_is_drawn(module):
    """No drawn curve is clipped: over each axis' x range every point of every line lies within
    its y range (a peak slope cut off at the top of a panel, say)."""
    figure = module.draw()
    curves = 0
    for axes in figure.axes:
        low, high = axes.get_ylim()
        left, right = axes.get_xlim()
        for line in axes.get_lines():
            x, y = (np.asarray(data, dtype=float) for data in line.get_data())
            shown = (x >= min(left, right)) & (x <= max(left, right)) & np.isfinite(y)
            if len(x) < 3 or not shown.any():
                continue
            curves += 1
            assert min(low, high) <= y[shown].min(), (axes.get_title(), line.get_label())
            assert y[shown].max() <= max(low, high), (axes.get_title(), line.get_label())
    assert curves


def test_help_describes_the_command_by_its_docstring_s_first_paragraph(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    assert stop.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "verify the numerics, then draw every figure." in out
    assert "keyed by every source file" not in out  # the second paragraph is for the reader of the source


def test_the_conventions_subtitle_names_dynamic_tanhs_alpha_only_where_it_is_drawn(monkeypatch):
    """The figure draws Dynamic Tanh (no epsilon) at alpha = ALPHA and says so under its title; a
    figure whose rows hold no such layer does not mention it."""
    from figures import conventions

    def subtitle() -> str:
        figure = conventions.draw()
        (text,) = [t.get_text() for t in figure.texts if t.get_text().startswith("Input")]
        plt.close(figure)
        return text

    assert "Dynamic Tanh" in subtitle()
    rows = [row for row in conventions._rows() if row[0] != "none"]
    monkeypatch.setattr(conventions, "_rows", lambda: rows)
    assert "Dynamic Tanh" not in subtitle()


def test_the_verification_visits_the_grid_docs_numeric_states(monkeypatch):
    """docs/numeric.md, "Before a figure is drawn": the values of t and epsilon, the derivative's
    points, and the sizes and epsilon of the Jacobian checks, as run() passes them to each check."""
    from numeric.checks import verify

    text = docs_words("numeric.md")
    assert "t ∈ {−3, −0.8, −0.1, 0, 0.2, 0.7, 3} and ε ∈ {10⁻⁶, 0.04, 0.25, 1, 100}" in text
    assert "at 41 points of [−1, 1] for each of those ε" in text
    assert "at a random x of n ∈ {2, 3, 7, 64} for ε ∈ {10⁻³, 0.25, 1}" in text
    seen: dict[str, set] = {"t": set(), "scalar epsilon": set(), "derivative": set(), "jacobian": set(), "eigen": set()}

    def scalar(layer, name, ts, epsilons):
        seen["t"].add(tuple(ts))
        seen["scalar epsilon"].add(tuple(epsilons))
        return 1

    def derivative(layer, name, of, ts, epsilon):
        seen["derivative"].add((ts.size, ts[0], ts[-1], epsilon))
        return 1

    def jacobian(layer, x, epsilon, rng, *parameters):
        seen["jacobian"].add((x.size, epsilon))
        return 1

    def eigen(layer, x, epsilon, rng):
        seen["eigen"].add((x.size, epsilon))
        return 1

    for name, check in [
        ("scalar_against_symbolic", scalar),
        ("derivative_against_differences", derivative),
        ("jacobian_against_differences", jacobian),
        ("eigenstructure", eigen),
    ]:
        monkeypatch.setattr(verify, name, check)
    counts = verify.run()
    assert all(count > 0 for count in counts.values()), counts
    assert seen["t"] == {(-3.0, -0.8, -0.1, 0.0, 0.2, 0.7, 3.0)}
    assert seen["scalar epsilon"] == {(1e-6, 0.04, 0.25, 1.0, 100.0)}
    assert seen["derivative"] == {(41, -1.0, 1.0, e) for e in (1e-6, 0.04, 0.25, 1.0, 100.0)}
    grid = {(size, e) for size in (2, 3, 7, 64) for e in (1e-3, 0.25, 1.0)}
    assert seen["jacobian"] == grid
    assert seen["eigen"] == grid


def test_the_verification_checks_j_v_in_three_random_directions(monkeypatch):
    """docs/numeric.md: J v against central differences in three random directions v, each new."""
    from numeric.checks import verify

    assert "in three random directions v" in docs_words("numeric.md")
    compared = []

    def agree(found, expected, **options):
        compared.append(np.array(expected))
        return 1

    monkeypatch.setattr(verify, "assert_agree", agree)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(5)
    assert verify.jacobian_against_differences(verify.facade("layernorm"), x, 0.25, rng) == 3
    assert len(compared) == 3
    assert all(not np.allclose(a, b) for a, b in itertools.combinations(compared, 2))  # three directions, not one


@pytest.mark.parametrize("module", FIGURES, ids=lambda m: m.FILENAME)
def test_a_legend_drawn_over_the_curves_hides_them_behind_its_text(module):
    """A legend inside its axes sits on the curves: its frame is drawn and nearly opaque (alpha >= 0.9),
    so no curve shows through its labels; one beside the axes (the conventions') needs no frame."""
    figure = module.draw()
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    inside = 0
    for axes in figure.axes:
        legend = axes.get_legend()
        if legend is None:
            continue
        box, area = legend.get_window_extent(renderer), axes.get_window_extent(renderer)
        if box.overlaps(area):
            inside += 1
            assert legend.get_frame_on()
            assert legend.get_frame().get_alpha() >= 0.9
            assert legend.get_frame().get_facecolor()[3] >= 0.9
        else:
            assert box.x0 >= area.x1 - 1  # beside the axes, to their right
    assert inside == (0 if module.FILENAME == "conventions.png" else 1)


def test_a_report_whose_latex_would_replace_a_folder_writes_nothing_and_runs_nothing(written, tmp_path, monkeypatch):
    """The sheet's outputs are checked before any work: report.tex a folder is refused before the
    checks run and the sheet is built, and no report.md is written (all of them, or none)."""
    from figures import report

    status, folder, *_ = written
    assert status == 0
    (tmp_path / "figures").symlink_to(folder, target_is_directory=True)
    (tmp_path / "report.tex").mkdir()

    def not_reached():
        raise AssertionError("the checks ran before the outputs were checked")

    monkeypatch.setattr(report, "_run_checks", not_reached)
    with pytest.raises(IsADirectoryError, match=r"report\.tex"):
        report.build(tmp_path / "report.md", tmp_path / "figures")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures", "report.tex"]
    assert list((tmp_path / "report.tex").iterdir()) == []
