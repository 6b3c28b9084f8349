"""The lesson as one offline HTML report: each experiment with a sentence of explanation, its key
numbers and its interactive figures (plotly.js inlined once; nothing is fetched over the network)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import plotly.graph_objects as go

from contextlens.analyses.lesson.divergence import Comparison
from contextlens.analyses.lesson.run import Lesson
from contextlens.core import atomic_files
from contextlens.reports import card_tables
from contextlens.reports import interactive as ix


@dataclass
class Section:
    title: str
    explanation: str
    numbers: str
    figures: list[go.Figure] = field(default_factory=list)
    table: list[list[str]] | None = None  # first row is the header


def _other_model(name: str) -> str:
    """A shipped encoder other than ``name``, for the report's cross-model example (the mpnet
    report used to suggest comparing mpnet with itself)."""
    return "minilm" if name == "mpnet" else "mpnet"


def _baseline_numbers(w: Comparison) -> str:
    """The last layer's cosine beside the model's random-word baseline, and what the model is."""
    bases = w.layer_baselines()
    out = ""
    if bases and bases[-1] is not None:
        b = bases[-1]
        out += (
            f" Unrelated words at layer {w.layers[-1]} average {b['mean']:.3f} (random-word baseline); "
            f"{w.layer_cosines[-1]:.3f} is above {b['percentile']:.1f}% of them."
        )
    if w.model_kind is not None:
        out += f" {w.model_kind.line}."
    return out


def lesson_sections(lesson: Lesson) -> list[Section]:
    """One section per experiment, in the lesson's order."""
    return [
        _worked_example_section(lesson.worked_example),
        _explorer_section(lesson.exploration),
        _ranking_section(lesson.ranking),
        _attention_section(lesson.attention),
        _probe_section(lesson.probe),
        _trace_section(lesson.trace),
        _input_share_section(lesson),
        _cost_section(lesson),
        _cka_section(lesson),
        _layer_probe_section(lesson),
        _static_methods_section(lesson),
    ]


def _worked_example_section(w) -> Section:
    """Section 1: the worked example: one word in two sentences, layer by layer."""
    return Section(
        "1. Worked example: “bank” in two sentences",
        "A static vector and the input row give “bank” the same vector in both sentences (cosine 1.0); the "
        "hidden states start close and drift apart layer by layer as attention mixes in the context.",
        f"static cosine {w.static_cosine:.3f}, input-row cosine {w.input_row_cosine:.3f}, hidden-state cosine "
        f"{w.layer_cosines[0]:.3f} at layer 0 and {w.layer_cosines[-1]:.3f} at layer {w.layers[-1]}; "
        f"most divergent layer {w.most_divergent_layer}." + _baseline_numbers(w),
        ix.divergence_figures(w),
    )


def _explorer_section(e) -> Section:
    """Section 2: the polysemy explorer: each word's senses, their spread and separation gap."""
    return Section(
        "2. Polysemy explorer",
        "Each word appears in four sentences for each of three senses; the heatmap shows the pairwise cosine of "
        "its hidden states, the PCA shows whether the senses form groups, and the separation gap (same-sense minus "
        "cross-sense cosine) is tested against shuffled sense labels, because one pair of sentences can mislead.",
        f"layer {e.layer}; p: {e.p_floor_note()}; spread = 1 − mean pairwise cosine.",
        ix.explore_figures(e),
        [["word", "spread", "gap", "p-value"]]
        + [[x.word, f"{x.spread:.3f}", _num(x.gap, "+.3f"), _num(x.p_value, ".4f")] for x in e.words],
    )


def _ranking_section(r) -> Section:
    """Section 3: word pairs ranked by static and by contextual cosine."""
    return Section(
        "3. Static versus contextual ranking",
        f"Twenty word pairs ranked by their static ({r.static_model}) cosine and by the cosine of their hidden "
        f"states in the neutral sentence {r.template!r}; crossing lines are pairs the two views order differently.",
        f"{r.inversions} of {len(r.pairs) * (len(r.pairs) - 1) // 2} pairs of pairs are inverted; Kendall τ-b = "
        f"{r.kendall_tau:.3f}; largest moves: "
        + ", ".join(f"{m.pair.a}–{m.pair.b} ({m.move:+g})" for m in r.top_moves)
        + ".",
        ix.slope_figures(r),
    )


def _attention_section(a) -> Section:
    """Section 4: what the target attends to, per layer and in the seed's close-up."""
    first_special = next((tok for m in a.maps for tok, sp in zip(m.tokens, m.special, strict=True) if sp), None)
    return Section(
        "4. Attention attribution",
        "Which tokens “bank” attends to in each layer (the mean over heads), and the full token × token pattern of "
        f"the seed's close-up, layer {a.layer} head {a.head}"
        + (f"; the special token {first_special} often absorbs most of it." if first_special else "."),
        "; ".join(
            f"{m.occurrence.marked()}: top at layer {a.layer} (head mean) "
            + ", ".join(f"{tok} {wt:.2f}" for tok, wt in m.top(a.layer))
            for m in a.maps
        ),
        ix.attention_figures(a),
    )


def _probe_section(p) -> Section:
    """Section 5: the sense probe: the target's hidden state against anchor words."""
    return Section(
        "5. Sense probe",
        "The target's hidden state is scored against anchor words (each a hidden state of the same model in a "
        f"neutral sentence); at layer {p.layer} the anchor that scores higher indicates the sense.",
        "; ".join(
            f"{s.occurrence.marked()}: "
            + ", ".join(f"{anchor} {v:.3f}" for anchor, v in zip(p.anchors, p.at()[i], strict=True))
            for i, s in enumerate(p.sentences)
        ),
        ix.probe_figures(p),
    )


def _trace_section(t) -> Section:
    """Section 6: the trace: from token to hidden state."""
    last = t.layers[-1]
    return Section(
        "6. Trace: from token to hidden state",
        "The pipeline for one target: its tokens and ids, its input row, the position information added at the "
        "embedding step, and then at every layer how much of the input row is left and what it attended to.",
        f"tokens {' '.join(t.display_tokens)}; target input-row norm {t.target_input_row_norm:.3f}; cosine to the "
        "input "
        f"row {t.layers[0].cosine_to_input_row:.3f} at layer 0 and {t.layers[-1].cosine_to_input_row:.3f} at layer "
        f"{last.layer}.",
        ix.trace_figures(t),
        [["layer", "cosine to input row", "norm", "top attended"]]
        + [
            [
                str(x.layer),
                f"{x.cosine_to_input_row:.3f}",
                f"{x.norm:.2f}",
                ", ".join(f"{tok} {wt:.2f}" for tok, wt in x.top_attended),
            ]
            for x in t.layers
        ],
    )


def _input_share_section(lesson: Lesson) -> Section:
    s = lesson.input_share
    position = s.to_position_row is not None
    return Section(
        "7. Is the embedding table still there? Every token, every layer",
        "The trace above follows one target; here every token of the built-in sentences: the cosine of each layer's "
        "hidden state to the token's own input row, to a neighbouring token's row (the floor) and, where the model "
        "learns absolute positions, to its position row. The table's row fades but never vanishes.",
        f"{s.tokens:,} tokens of {s.texts} sentences; own row {s.to_input_row[0]:.3f} at layer 0, "
        f"{s.to_input_row[-1]:.3f} at layer {s.layers[-1]}; neighbour's row at most {max(s.to_other_row):.3f}.",
        [],
        [["layer", "cosine to own input row", "to a neighbour's row", "to own position row"]]
        + [
            [
                str(layer),
                f"{s.to_input_row[i]:.3f}",
                f"{s.to_other_row[i]:.3f}",
                f"{s.to_position_row[i]:.3f}" if position and s.to_position_row is not None else "-",
            ]
            for i, layer in enumerate(s.layers)
        ],
    )


def _cost_section(lesson: Lesson) -> Section:
    c = lesson.cost
    rows = c.seed_table()
    keys = ("aspect", "seed_static", "seed_contextual", "measured_static", "measured_contextual")
    return Section(
        "8. What a contextual vector costs",
        "The seed's table says a static vector is a table lookup and a contextual one a full forward pass, and that "
        "the memory is the embedding matrix versus the whole model. Timed live here on a few built-in sentences, "
        f"{COST_REPEATS_NOTE}; `contextlens cost` times 256 sentences, five runs, and scales to a million documents.",
        f"{c.lookup_seconds_per_token * 1e9:,.0f} ns per word for a {c.static_name} lookup, "
        f"{c.forward_seconds_per_token * 1e6:,.0f} µs per token for a {c.model_name} forward pass: {c.ratio:,.0f}× "
        f"slower, on {c.sentences} sentences ({c.tokens} model tokens); {c.machine}.",
        ix.cost_figures(c),
        [["aspect", "seed: static", "seed: contextual", "measured: static", "measured: contextual"]]
        + [[str(row[k]) for k in keys] for row in rows],
    )


COST_REPEATS_NOTE = "the median of a few runs, so expect it to move by tens of percent between reports"


def _cka_section(lesson: Lesson) -> Section:
    k = lesson.cka
    first, last = k.layers_a[0], k.layers_a[-1]
    adjacent = min(k.matrix[i, i + 1] for i in range(len(k.layers_a) - 1))
    return Section(
        "9. Which layers see the sentences alike? CKA",
        "Linear CKA (Kornblith et al. 2019) compares the geometry two sets of hidden states give the same tokens: "
        f"1 for the same geometry up to rotation and scale. Here every layer of {k.model_a} against every other "
        "layer of itself, so the diagonal is 1 and the blocks show which layers change the picture. Across two models "
        "a raw cosine means nothing (their hidden states live in different spaces, so contextlens refuses it), but "
        f"CKA still compares them: `contextlens cka --model {k.model_a} --other {_other_model(k.model_a)}` gives the "
        "cross-model view.",
        f"{k.tokens:,} tokens of {k.aligned_texts} built-in sentences; CKA of layer {first} with layer {last} "
        f"{k.matrix[0, -1]:.3f}, of adjacent layers at least {adjacent:.3f}.",
        ix.cka_figures(k),
    )


def _layer_probe_section(lesson: Lesson) -> Section:
    return Section(
        "10. Which layer knows what? Layer probes",
        "The seed says early layers are syntactic and late ones semantic. `contextlens eval layers` tests it the way "
        "Tenney et al. (2019) did: a linear probe per layer for part of speech (noun vs verb on words that are both) "
        "and for coarse sense (WordNet supersense), scored on lemmas the probe never saw, beside control tasks with "
        "random labels per word type (Hewitt & Liang 2019) and the static vector and input row as baselines. "
        "The accuracy per layer and each task's expected layer are its answer.",
        "Not run in this report: even the quick size encodes a few hundred WordNet examples and fits 5-fold probes "
        f"for every layer, about half a minute on {lesson.model} on a 2-core machine, too long for the demo. Run "
        f"`contextlens eval layers --model {lesson.model} --quick` (docs/claims.md has measured results).",
    )


def _static_methods_section(lesson: Lesson) -> Section:
    """The seeds' static methods, each beside its model here (made ones only: nothing is trained)."""
    from contextlens.analyses.lesson.static_methods import static_methods
    from contextlens.reports.static_figures import static_methods_figure

    m = static_methods(lesson.ranking, lesson.model)
    here = [r for r in m.rows if r.model is not None]
    numbers = "; ".join(
        f"{r.model} ({r.method}) SimLex-999 {r.scores['simlex999'][0]:.3f}, WordSim-353 {r.scores['wordsim353'][0]:.3f}"
        for r in here
    )
    missing = [r.made for r in m.rows if r.model is None]
    if missing:
        numbers += ". Not made here yet (nothing is trained for the report): " + "; ".join(missing)
    if m.ranking is not None:
        k = m.ranking
        numbers += (
            f". The seeds' ranking by word2vec cosine ({k.static_model}, {k.pairs} pairs): Kendall τ-b "
            f"{k.kendall_tau:.3f} with the contextual ranking above, {k.baseline_model}'s on the same pairs "
            f"{k.baseline_tau:.3f}"
        )
    return Section(
        "11. The static methods: word2vec, GloVe, fastText, and one distilled from a transformer",
        "The seeds' table of static methods, each beside the model of that method here: GloVe ships; word2vec "
        "and fastText are trained here on the installed corpora and a static model is distilled from a "
        "transformer (`contextlens static train|distill`). Word similarity needs no forward pass; a pair the "
        "model never saw a word of is skipped (the share scored is in brackets), while fastText composes the "
        "word from its character n-grams and a distilled model from its teacher's word pieces. `contextlens eval "
        "static` puts them beside their teacher on word in context (chance by construction), Lee retrieval and "
        "encode speed.",
        numbers + ".",
        [static_methods_figure(m)] if here else [],
        [
            [
                "method",
                "how it learns (seeds)",
                "what it captures (seeds)",
                "limitation (seeds)",
                "model here",
                "SimLex-999",
                "WordSim-353",
                "MB",
                "an unseen word",
            ]
        ]
        + [
            [
                r.method,
                r.how,
                r.captures,
                r.limitation,
                f"{r.model}: {r.made}" if r.model else r.made,
                _spearman_cell(r.scores.get("simlex999")),
                _spearman_cell(r.scores.get("wordsim353")),
                "-" if r.megabytes is None else f"{r.megabytes:,.1f}",
                r.unseen or "-",
            ]
            for r in m.rows
        ],  # fmt: skip
    )


def _spearman_cell(score: tuple[float, float] | None) -> str:
    if score is None:
        return "-"
    rho, share = score
    return f"{rho:.3f}" if share == 1 else f"{rho:.3f} ({share:.0%})"


def render(sections: list[Section], title: str, subtitle: str = "") -> str:
    """The report as one HTML document."""
    parts = [f"<p class='explain'>{html.escape(subtitle)}</p>"] if subtitle else []
    for s in sections:
        parts.append(f"<section><h2>{html.escape(s.title)}</h2>")
        parts.append(f"<p class='explain'>{html.escape(s.explanation)}</p>")
        parts.append(f"<p class='numbers'>{html.escape(s.numbers)}</p>")
        if s.table:
            parts.append(_table(s.table[0], s.table[1:]))
        parts.extend(ix.figure_div(f) for f in s.figures)
        parts.append("</section>")
    return ix.page(title, "\n".join(parts))


CARD_COLUMNS = 5  # a table of this many columns or more is too wide for a phone: there its rows are cards


def _table(head: list[str], rows: list[list[str]]) -> str:
    """A section's table in a box that scrolls if it must; numbers right-aligned, text left; a wide
    one is a card table (below 640 px each row a card of "label: value" lines, reports/card_tables)."""
    cards = len(head) >= CARD_COLUMNS
    th = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join(
        "<tr>"
        + card_tables.cells(
            head,
            [html.escape(c) for c in row],
            cards,
            ["text" if k == 0 or not _NUMBER.match(c) else "" for k, c in enumerate(row)],
        )
        + "</tr>"
        for row in rows
    )
    kind = " class='cards'" if cards else ""
    return f"<div class='scroll'><table{kind}><tr class='head'>{th}</tr>{body}</table></div>"


def figure_count(sections: list[Section]) -> int:
    return sum(len(s.figures) for s in sections)


def write_report(lesson: Lesson, path: Path | str) -> tuple[Path, int]:
    """Write the lesson report; returns the path and the number of figures in it."""
    sections = lesson_sections(lesson)
    ran_on = (
        "torch (the reference: plain transformers' numbers)"
        if lesson.backend.runtime == "torch"
        else f"ONNX Runtime ({lesson.backend.label}; its graph checked against torch when exported: states within "
        "1e-4, attention weights within 1e-5)"
    )
    subtitle = (
        f"Contextual model {lesson.model} at {lesson.backend.precision} on {ran_on}, static model "
        f"{lesson.static_model}. Every number below was computed when this report was written; the figures are "
        "interactive (hover, zoom) and work offline."
    )
    path = atomic_files.write_text(path, render(sections, "contextlens: contextual vs static embeddings", subtitle))
    return path, figure_count(sections)


_NUMBER = re.compile(r"^[-+−]?[\d.,]+$|^-$")  # right-aligned table cells; any other text is left-aligned


def _num(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)
