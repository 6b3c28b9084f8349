"""The benchmarks' span path is the core's occurrence path: same tokens, same vectors, same window."""

import numpy as np

from contextlens.analyses.measures.span_encoding import encode_spans
from contextlens.core.occurrences import Occurrence

LONG = "the water rose slowly over the fields and " * 80 + "then the river bank gave way."  # ~700 tokens


def test_spans_equal_encode_occurrences_including_a_windowed_text(minilm):
    texts = ["The bank called about my account.", LONG, "A bank by the bank of the river."]
    spans = [(0, 4, 8), (1, LONG.rindex("bank"), LONG.rindex("bank") + 4), (2, 2, 6), (2, 14, 18), (1, 4, 9)]
    seen = []
    got = encode_spans(minilm, texts, spans, chunk_size=2, progress=lambda d, t: seen.append((d, t)), use_cache=False)
    occs = [Occurrence(texts[t], s, e) for t, s, e in spans]
    minilm.clear_cache()
    want = minilm.encode_occurrences(occs, batch_size=1)
    assert want[1].truncated and want[4].truncated  # the long text is windowed, around each span
    assert want[1].tokenized.input_ids != want[4].tokenized.input_ids
    assert got.hidden.shape == (len(spans), minilm.num_layers + 1, minilm.hidden_size)
    for i, enc in enumerate(want):
        # the span cache stores float16: equal up to its resolution
        np.testing.assert_allclose(got.hidden[i], enc.hidden, rtol=2e-3, atol=2e-3)
        np.testing.assert_allclose(got.input_rows[i], enc.input_row_values, rtol=1e-6, atol=1e-7)
    assert not np.allclose(got.hidden[2], got.hidden[3], atol=1e-2)  # two spans of one text differ
    assert seen[-1] == (4, 4)  # 4 distinct token sequences: 2 short texts, 2 windows of the long one
