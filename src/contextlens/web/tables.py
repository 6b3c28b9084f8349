"""The numbers beside each page's figures: the tables the CLI prints, as HTML, from the same result.

Each ``*_numbers`` takes the analysis result the page drew and returns an HTML fragment; the
slider pages call it once per layer (and head), so the numbers redraw with the figures.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from contextlens.core.model_kinds import model_kind
from contextlens.reports.card_tables import cells
from contextlens.web.page import Page


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def esc(text: Any) -> str:
    return html.escape(str(text))


def table(
    head: Sequence[str],
    rows: Sequence[Sequence[Any]],
    caption: str = "",
    marked: set[int] = frozenset(),
    cards: bool = False,
) -> str:
    """A table in a scrolling box (it fits a phone); ``marked``: row indices shown in bold red;
    ``cards``: too many columns for a phone, so below 640 px each row is a card of label: value lines."""
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join(
        f"<tr{' class=mark' if i in marked else ''}>{cells(head, [esc(c) for c in r], cards)}</tr>"
        for i, r in enumerate(rows)
    )
    kind = "numbers cards" if cards else "numbers"
    return f'<div class="scroll"><table class="{kind}">{cap}<tr class="head">{th}</tr>{body}</table></div>'


def kind_line(model: str) -> str:
    kind = model_kind(model)
    return "" if kind is None else f'<p class="dim" id="model-kind">{esc(kind.summary)}</p>'


def compare_numbers(result, with_kind: bool = True) -> str:
    """Tokenization line per sentence, the per-layer table with the random-word baseline, the static
    and input-row cosines, the most divergent layer, and the notes: what ``contextlens compare`` prints.
    ``with_kind``: with the model's kind line (the lesson shows it once, above its sections)."""
    lines = "".join(
        f"<li>{esc(o.marked())} <span class='dim'>tokens: <code>{esc(' '.join(toks))}</code></span>"
        f"{' (cut to a window around the target)' if cut else ''}</li>"
        for o, toks, cut in zip(result.occurrences, result.target_tokens, result.truncated, strict=True)
    )
    many = result.n > 2
    head = ["layer", "mean pairwise cosine" if many else "cosine"] + (["lowest pair"] if many else [])
    with_base = result.baseline is not None
    if with_base:
        head += ["random words (mean)", "percentile among random", "− random"]
    rows, marked = [], set()
    worst = result.most_divergent_layer
    data = zip(result.layers, result.layer_cosines, result.lowest_pair_cosines, result.lowest_pairs,
               result.layer_baselines(), strict=True)  # fmt: skip
    for i, (layer, cos, low, pair, base) in enumerate(data):
        row = [layer, fmt(cos)] + ([f"{fmt(low)} ({pair[0]}–{pair[1]})"] if many else [])
        if with_base:
            row += ["-", "-", "-"] if base is None else [
                f"{base['mean']:.3f}", f"{base['percentile']:.0f}", f"{base['adjusted']:+.3f}"]  # fmt: skip
        rows.append(row)
        if layer == worst:
            marked.add(i)
    blanks = [""] * (len(head) - 2)
    if result.static_cosine is not None:
        rows.append([f"static ({result.static_model})", fmt(result.static_cosine), *blanks])
    rows.append(["input row", fmt(result.input_row_cosine), *blanks])
    notes = "".join(f"<li>{esc(n)}</li>" for n in result.notes())
    base = f"<p class='dim'>{esc(result.baseline.describe())}</p>" if with_base else ""
    return (
        f"<ol class='sentences' id='tokenization'>{lines}</ol>{kind_line(result.model) if with_kind else ''}"
        + table(head, rows, f"{result.model}: cosine of the target's hidden states, layer by layer", marked)
        + f"<p id='most-divergent'>most divergent layer: <b>{worst}</b> "
        f"(cosine {fmt(result.most_divergent_cosine)})</p>" + base + (f"<ul class='dim'>{notes}</ul>" if notes else "")
    )


def explore_numbers(result) -> str:
    """The explorer's summary at the result's layer: spread, the random-word percentile of the mean
    pairwise cosine (as ``contextlens explore`` prints it), same, cross, gap and p per word."""
    with_base = result.baseline is not None
    rows = [
        [i, w.word, len(w.occurrences), len(w.distinct_senses) or "-", fmt(w.spread)]
        + ([_pct(w.chosen_baseline)] if with_base else [])
        + [fmt(w.same_sense_cosine), fmt(w.cross_sense_cosine), "-" if w.gap is None else f"{w.gap:+.3f}",
           fmt(w.p_value, 4)]
        for i, w in enumerate(result.words, 1)
    ]  # fmt: skip
    reasons = "".join(
        f"<li>{esc(w.word)}: no gap: {esc(w.no_gap_reason)}</li>" for w in result.words if w.no_gap_reason
    )
    return (
        kind_line(result.model)
        + table(
            ["rank", "word", "sentences", "senses", "spread"]
            + (["pct among random"] if with_base else [])
            + ["same", "cross", "gap", "p"],
            rows,
            f"{result.model}, {result.layer_label}, ranked by spread ({result.source})",
            cards=True,
        )  # fmt: skip
        + (f"<ul class='dim'>{reasons}</ul>" if reasons else "")
        + _baseline_line(result, "the word's mean pairwise cosine (1 − spread)")
        + f"<p class='dim'>spread = 1 − mean pairwise cosine; same / cross: mean same-sense / cross-sense cosine; "
        f"gap = same − cross; p: {esc(result.p_floor_note())}</p>"
    )


def attention_numbers(result) -> str:
    """Per sentence: the tokens the target attends to most at the chosen layer and head, by the head
    mean, and by the rollout (attention carried through the residual stream up to that layer)."""
    k = result.top_k
    rows = []
    for m in result.maps:
        ro = m.rollout[result.layer - 1]
        order = sorted(range(len(ro)), key=lambda j: -ro[j])[:k]
        rows.append([
            m.occurrence.marked(),
            ", ".join(f"{t} {w:.2f}" for t, w in m.top(result.layer, k, result.head, display=True)),
            ", ".join(f"{t} {w:.2f}" for t, w in m.top(result.layer, k, display=True)),
            ", ".join(f"{m.display_tokens[j]} {ro[j]:.2f}" for j in order),
        ])  # fmt: skip
    head = ["sentence", f"layer {result.layer}, head {result.head}", "head mean", f"rollout up to layer {result.layer}"]
    return kind_line(result.model) + table(head, rows, f"top {k} tokens the target attends to — {result.model}")


def probe_numbers(result) -> str:
    scores = result.at()
    rows = [
        [s.occurrence.marked(), *[f"{v:.3f}" for v in scores[i]], result.best_anchor(i)]
        for i, s in enumerate(result.sentences)
    ]
    rows += [[f"static {result.static_model}: {w} (any sentence)", *[f"{v:.3f}" for v in row], ""]
             for w, row in result.static_groups()]  # fmt: skip
    if result.baseline is not None:
        b = result.baseline.layer(result.layer)
        rows.append([f"random pairs of different words (5-95%: {b.p5:.3f} to {b.p95:.3f})",
                     *[f"{b.mean:.3f}"] * len(result.anchors), ""])  # fmt: skip
    notes = "".join(f"<li>{esc(n)}</li>" for n in result.notes)
    return (
        kind_line(result.model)
        + table(
            ["sentence", *result.anchors, "closest anchor"], rows, f"cosine with each anchor at {result.layer_label}"
        )  # fmt: skip
        + _baseline_line(result, "each cosine", pct=False)
        + (f"<ul class='dim'>{notes}</ul>" if notes else "")
    )


def _pct(base: dict[str, float] | None) -> str:
    return "-" if base is None else f"{base['percentile']:.0f}"


def _baseline_line(result, what: str, pct: bool = True) -> str:
    """The random-word baseline at the result's layer, or why there is none (explore, probe)."""
    if result.baseline is None:
        why = result.baseline_missing
        return f"<p class='dim'>no random-word baseline: {esc(why)}</p>" if why else ""
    b = result.baseline.layer(result.layer)
    return (
        f"<p class='dim' id='baseline'>random-word baseline at layer {result.layer}: mean cosine {b.mean:.3f} "
        f"(5-95%: {b.p5:.3f} to {b.p95:.3f}) over random pairs of different words in unrelated sentences, to read "
        f"{esc(what)} against{'; pct: the share of those pairs at or below it' if pct else ''}. "
        f"{esc(result.baseline.describe())}</p>"
    )


def trace_numbers(result, with_kind: bool = True) -> str:
    """The pipeline's steps as the CLI prints them: tokens, ids and input rows; positions; the layers.
    ``with_kind``: with the model's kind line (the lesson shows it once, above its sections)."""
    toks = [
        [i, t, d, f"{result.input_row_norms[i]:.3f}",
         "-" if result.position_row_norms is None else f"{result.position_row_norms[i]:.3f}",
         "target" if i in result.target_positions else ("special" if result.special[i] else "")]
        for i, (t, d) in enumerate(zip(result.display_tokens, result.token_ids, strict=True))
    ]  # fmt: skip
    marked = set(result.target_positions)
    if result.has_learned_positions:
        pos = (
            f"4. positions: learned absolute position rows are added to the input rows; the target's position row has "
            f"cosine {fmt(result.position_cosine_to_input_row)} with its input row, and the embedding output (layer 0) "
            f"has cosine {fmt(result.layer0_cosine_to_row_plus_position)} with input row + position row."
        )
    else:
        pos = "4. positions: this model has no learned absolute position rows (relative or rotary positions)."
    layers = [
        [t.layer, fmt(t.cosine_to_input_row), f"{t.norm:.2f}",
         ", ".join(f"{tok} {w:.2f}" for tok, (_, w) in zip(t.top_display or [tok for tok, _ in t.top_attended],
                                                         t.top_attended, strict=True)) or "- (embedding output)"]
        for t in result.layers
    ]  # fmt: skip
    k = max((len(t.top_attended) for t in result.layers), default=0)
    return (
        (kind_line(result.model) if with_kind else "")
        + table(
            ["pos", "token", "id", "input row norm", "position row norm", ""],
            toks,
            "1-3. tokens, ids and input rows (the embedding table)",
            marked,
        )  # fmt: skip
        + f"<p>{esc(pos)}</p>"
        + table(
            ["layer", "cosine to input row", "norm", f"attends most to (top {k}, head mean)"],
            layers,
            f"5-6. the target's hidden state per layer (“{' '.join(result.display_target_tokens)}”)",
        )  # fmt: skip
        + f"<p class='dim'>target input row norm: {result.target_input_row_norm:.3f}</p>"
        + "".join(f"<p class='dim'>{esc(n)}</p>" for n in result.notes)
        + (
            "<p class='dim'>tokens shown decoded from byte-level BPE: ␣ is the space a token starts with</p>"
            if result.shown is not None and result.shown != result.tokens
            else ""
        )
    )


def rank_numbers(result) -> str:
    rows = [
        [f"{p.pair.a}–{p.pair.b}", fmt(p.static_cosine), f"{p.static_rank:g}", fmt(p.contextual_cosine),
         f"{p.contextual_rank:g}", f"{p.move:+g}"]
        for p in sorted(result.pairs, key=lambda r: r.static_rank)
    ]  # fmt: skip
    moves = ", ".join(f"{p.pair.a}–{p.pair.b} ({p.move:+g})" for p in result.top_moves)
    return (
        kind_line(result.model)
        + f"<p id='tau'>inversions (discordant pairs of pairs): <b>{result.inversions}</b> of {result.pairs_compared}; "
        f"Kendall τ-b = <b>{result.kendall_tau:.4f}</b></p>"
        + table(
            ["pair", "static", "rank", "contextual", "rank", "move"],
            rows,
            f"{len(result.pairs)} pairs — {result.static_model} vs {result.model} layer {result.layer}",
        )  # fmt: skip
        + f"<p class='dim'>cosine; rank 1 = most similar; move = static rank − contextual rank; template "
        f"{esc(repr(result.template))}; largest moves (+ = more similar in context): {esc(moves)}</p>"
    )


def same_sense_numbers(answer) -> str:
    rule = answer.rule
    verdict = "same sense" if answer.same else "different senses"
    return (
        f"<p id='verdict'><b>{verdict}</b>: P(same) = {answer.probability:.3f}; cosine {answer.cosine:.3f} at layer "
        f"{rule.layer} (random-word pairs: mean {fmt(answer.baseline_mean)}, this pair at percentile "
        f"{fmt(answer.baseline_percentile, 0)})</p>"
        f"<p>the rule: test accuracy {rule.test_accuracy:.3f} beside chance {rule.chance:.3f} on {rule.test_pairs} "
        f"test pairs of unseen lemmas; ECE {rule.test_ece:.3f}</p>"
        + "".join(f"<p class='dim'>{esc(n)}</p>" for n in answer.notes)
    )


def numbers(page: Page, result: Any) -> str:
    """The page's numbers for ``result`` (empty for a page whose table is its result)."""
    return "" if page.numbers is None else f'<div id="numbers">{page.numbers(result)}</div>'
