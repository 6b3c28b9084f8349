"""The numbers beside the web pages' figures (web/tables.py) keep what issue 19 added to the CLI's
tables: the random-word baseline beside explore's and probe's cosines, and tokens as a reader reads
them (Ġbank -> ␣bank) in attention's and trace's tables. Each failed on the i20a merge, whose
tables were written before issue 19."""

import dataclasses

from contextlens.core.occurrences import parse_marked
from contextlens.web.tables import attention_numbers, explore_numbers, probe_numbers, trace_numbers

BANK = "The [bank] called about my account."


def test_explore_numbers_have_the_random_word_percentile_and_baseline(minilm):
    from contextlens.analyses.lesson.polysemy import explore

    result = explore(["bank"], minilm, permutations=20)
    assert result.baseline is not None
    html = explore_numbers(result)
    assert "<th>pct among random</th>" in html and "id='baseline'" in html
    assert f'<td data-label="pct among random">{result.words[0].chosen_baseline["percentile"]:.0f}</td>' in html
    assert "random-word baseline at layer 6" in explore_numbers(result.at_layer(6))
    bare = explore_numbers(dataclasses.replace(result, baseline=None, baseline_missing="WordNet is not installed"))
    assert "pct among random" not in bare and "no random-word baseline: WordNet is not installed" in bare


def test_probe_numbers_have_the_random_word_row(minilm):
    from contextlens.analyses.lesson.probe import probe

    result = probe([parse_marked(BANK)], ["money", "river"], minilm)
    b = result.baseline.layer(result.layer)
    html = probe_numbers(result)
    assert "random pairs of different words (5-95%" in html and f"<td>{b.mean:.3f}</td>" in html
    assert "id='baseline'" in html


def test_attention_and_trace_numbers_show_decoded_tokens(minilm):
    from contextlens.analyses.lesson.attention import attend
    from contextlens.analyses.lesson.trace import trace

    t = trace(parse_marked(BANK), minilm)
    shown = ["␣" + tok if tok not in ("[CLS]", "[SEP]") else tok for tok in t.tokens]  # as a byte-level BPE shows
    as_bpe = dataclasses.replace(t, shown=shown)
    html = trace_numbers(as_bpe)
    assert "<td>␣bank</td>" in html and "(“␣bank”)" in html and "decoded from byte-level BPE" in html
    assert "decoded from byte-level BPE" not in trace_numbers(t)
    a = attend([parse_marked(BANK)], minilm, layer=2, head=1)
    m = a.maps[0]
    decoded = dataclasses.replace(a, maps=[dataclasses.replace(m, shown=["␣" + tok for tok in m.tokens])])
    html = attention_numbers(decoded)
    assert "␣" in html and "␣" not in attention_numbers(a)


def test_a_slider_step_away_from_the_auto_layer_is_labelled_by_its_own_layer(minilm):
    """i19's --layer auto label names the layer it chose; i20a's slider shows other layers of the same
    result: there the label (and the numbers' caption) says the slider's layer, not "auto"."""
    from contextlens.analyses.lesson.polysemy import explore
    from contextlens.analyses.measures.layer_choice import TASKS, LayerChoice

    result = explore(["bank"], minilm, layer=4, permutations=20, baseline=False)
    choice = LayerChoice("minilm", minilm.backend, next(iter(TASKS)), 4, "accuracy", 0.6, "dev")
    auto = dataclasses.replace(result, layer_choice=choice)
    assert auto.at_layer(4).layer_label == choice.label() and "(auto:" in explore_numbers(auto.at_layer(4))
    assert auto.at_layer(2).layer_label == "layer 2" and "minilm, layer 2, ranked" in explore_numbers(auto.at_layer(2))
