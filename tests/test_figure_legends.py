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
