"""`contextlens cost`: measured lookup vs forward time, memory, scaling; bad input is one line."""

from __future__ import annotations

import json
import statistics

import pytest

from contextlens.analyses.search.capacity import estimate
from contextlens.analyses.search.cost import measure_cost
from contextlens.analyses.search.index_config import IndexConfig
from contextlens.cli import main
from contextlens.data.text_sets import corpus_texts
from contextlens.errors import InputError
from tests.helpers import assert_plain_json


def test_cost_measures_both_and_scales_to_documents(minilm, glove) -> None:
    texts = corpus_texts("builtin", 16)
    report = measure_cost(minilm, glove, texts, count=1000, repeats=2)
    assert report.lookup_seconds_per_token > 0 and report.forward_seconds_per_token > 0
    # what is timed, not how fast (a ratio of two timings is the command's output, not a test's
    # claim: under load either side may stall): the median of each side's own runs
    assert len(report.lookup_runs) == 5 and len(report.forward_runs) == 3  # at least 5 and 3 runs
    assert report.lookup_seconds_per_token == statistics.median(report.lookup_runs)
    assert report.forward_seconds_per_token == statistics.median(report.forward_runs)
    assert report.ratio == report.forward_seconds_per_token / report.lookup_seconds_per_token
    encoded = minilm.tokenizer(texts, truncation=True, max_length=minilm.max_length)["input_ids"]
    assert report.tokens == sum(len(ids) for ids in encoded)
    assert report.static_table_bytes == glove.kv.vectors.nbytes
    params = sum(p.numel() for p in minilm.model.parameters())
    assert report.model_weight_bytes == 4 * params  # fp32
    assert report.activation_bytes > 0
    docs = report.documents
    assert docs["contextual"]["index_bytes"] == estimate(IndexConfig("flat"), 1000, minilm.hidden_size).bytes
    assert docs["static"]["dim"] == glove.dim
    per_doc = docs["contextual"]["tokens_per_document"]
    assert docs["contextual"]["embed_seconds"] == pytest.approx(1000 * per_doc * report.forward_seconds_per_token)
    assert len(report.seed_table()) == 2


def test_cost_json_has_the_named_fields(tmp_path, capsys) -> None:
    plot = tmp_path / "cost.png"
    args = ["cost", "--model", "minilm", "--corpus", "builtin", "--limit", "12", "--repeats", "1", "--count", "1e4"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--json", "--plot", str(plot)])
    assert exit_info.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert_plain_json(doc)
    assert doc["count"] == 10_000
    assert doc["ratio"] == pytest.approx(doc["forward_seconds_per_token"] / doc["lookup_seconds_per_token"])
    assert plot.stat().st_size > 10_000


def test_unknown_static_model_is_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["cost", "--model", "minilm", "--static", "no-such-vectors"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no-such-vectors" in err


def test_too_few_sentences_to_time(minilm, glove) -> None:
    with pytest.raises(InputError, match="at least 8 sentences"):
        measure_cost(minilm, glove, ["One.", "Two."])
