"""Figures whose legend or lines hid what they show (issue 20's "small but seen"): each checked on
the drawn figure, with minilm's real results."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

BANK = ["I sat on the river [bank].", "I opened a [bank] account.", "The [bank] approved the loan."]


@pytest.fixture(scope="module")
def comparison(minilm, glove):
    from contextlens.analyses.lesson.divergence import compare
    from contextlens.core.occurrences import locate_all

    return compare(locate_all(BANK), minilm, glove)


def _outside(fig, legend, ax) -> bool:
    fig.canvas.draw()
    box = legend.get_window_extent()
    return not box.overlaps(ax.get_window_extent())


def test_the_compare_png_legend_is_off_the_axes_and_the_lines_differ(comparison):
    """The legend sat on the lower left of the random-word band; the static and input-row lines
    (both at 1.0 for one word) were drawn alike, one hiding the other."""
    import matplotlib.pyplot as plt

    from contextlens.reports.figures import divergence_figure

    fig = divergence_figure(comparison)
    ax = fig.axes[0]
    assert _outside(fig, ax.get_legend(), ax)
    flat = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_label().startswith(("static", "input row"))}
    static, row = flat["static (glove-50d)"], flat["input row (embedding table)"]
    assert static.get_linewidth() >= 2 * row.get_linewidth() and static.get_linestyle() != row.get_linestyle()
    assert not [t for t in ax.texts if t.arrow_patch is not None]  # no arrow across the band
    plt.close(fig)


def test_the_trace_png_legend_is_not_struck_through(minilm):
    import matplotlib.pyplot as plt

    from contextlens.analyses.lesson.trace import trace
    from contextlens.core.occurrences import locate_all
    from contextlens.reports.lesson_figures import trace_figure

    (occ,) = locate_all(["The river [bank] flooded."])
    fig = trace_figure(trace(occ, minilm))
    left = fig.axes[0]
    assert _outside(fig, left.get_legend(), left)  # inside, the twin axis's lines crossed its entries
    plt.close(fig)


def test_the_interactive_compare_draws_both_flat_lines_and_its_legend_below(comparison):
    from contextlens.reports.interactive import divergence_figures

    (fig,) = divergence_figures(comparison)
    traces = {t.name: t for t in fig.data}
    static, row = traces["static (glove-50d)"], traces["input row (embedding table)"]
    assert static.line.width >= 3 * row.line.width and row.line.dash == "dot" and static.opacity < 1
    assert fig.layout.legend.y < 0  # below the plot, off the band
    assert any("most divergent" in a.text for a in fig.layout.annotations)


def test_the_interactive_compare_label_hangs_below_every_line_at_its_layer(comparison):
    """The label "most divergent: layer N" sat 30 px above the curve, on the pair lines and the static and
    input-row lines at 1.0: it now hangs below the lowest line at that layer."""
    from contextlens.reports.interactive import divergence_figures

    (fig,) = divergence_figures(comparison)
    (label,) = [a for a in fig.layout.annotations if a.text.startswith("most divergent")]
    worst = comparison.most_divergent_layer
    lines = [t for t in fig.data if t.name and not t.name.startswith("random") and worst in list(t.x)]  # no band
    names = {"mean over pairs", "sentences 1-2", "static (glove-50d)", "input row (embedding table)"}
    assert {t.name for t in lines} >= names
    at_worst = [t.y[list(t.x).index(worst)] for t in lines]
    assert label.x == worst and label.ay > 0  # below the point it marks (ay: the text's offset down, px)
    assert label.y == pytest.approx(min(at_worst))
    assert label.xanchor == ("right" if worst > comparison.layers[-1] / 2 else "left")


def test_the_interactive_trace_names_its_norm_axis_and_rounds_its_ticks(minilm):
    from contextlens.analyses.lesson.trace import trace
    from contextlens.core.occurrences import locate
    from contextlens.reports.interactive import trace_figures

    (fig,) = trace_figures(trace(locate("The river [bank] flooded."), minilm))
    norm_axis = next(t.yaxis for t in fig.data if t.name == "norm")
    axis = fig.layout[norm_axis.replace("y", "yaxis")]
    assert "norm" in axis.title.text and axis.tickformat == ".1f" and axis.tickmode == "auto"
    assert "cosine" in fig.layout.yaxis.title.text


@pytest.mark.parametrize(
    "text",
    [
        "The crane was looking for fish by the river [bank] today.",
        "A very long sentence that goes on and on about things before it gets to the river [bank].",
        "The [crane] lifted the steel beams onto the roof, slowly and carefully, all day long.",
        "Somewhere in the middle of a long sentence the [bank] appears and then more words follow it here.",
    ],
)
@pytest.mark.parametrize("width", [30, 50, 70])
def test_a_shortened_sentence_label_keeps_its_target(text, width):
    """The attention panels' titles were cut at 50 characters from the end: a long sentence's
    target ("…looking for fish by the river…") was gone from its own panel's title."""
    from contextlens.reports.plot_style import short_marked

    short = short_marked(text, width)
    target = text[text.index("[") : text.index("]") + 1]
    assert target in short and len(short) <= width
    assert short.strip("…") in text or all(part in text for part in short.split("…") if part)
