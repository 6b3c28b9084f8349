"""Issue 34, item 3: `corpus extract --estimate` / `corpus plan` price a job before it runs.

A sample that is the whole corpus must give the run's own counts exactly (the same reader and
matcher); a sample of part of a corpus is scaled by bytes, and on a corpus of repeated blocks the
error is bounded by the one block the cut can split (the tolerance below is derived from it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contextlens.analyses.corpus.estimate import (
    FORWARD_SAMPLE,
    SLICES,
    TWO_ACTORS_SPEEDUP,
    padded_tokens,
    price_job,
    sample_corpus,
)
from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.errors import InputError
from tests.helpers import run_cli
from tests.test_senses import MONEY, RIVER

BLOCK = "\n\n".join(RIVER + MONEY) + "\n\n"  # 16 paragraphs, 'bank' in each, 'river' in 5


def test_a_whole_corpus_sample_gives_the_runs_counts_and_its_bytes(tmp_path, minilm):
    corpus = tmp_path / "bank.txt"
    corpus.write_text(BLOCK)  # no sentence twice: repeated vectors would compress in Parquet
    e = price_job(str(corpus), ["bank", "river"], minilm, layers=[0, 3, 6], forms=True)
    assert e.sample["whole"] and e.sample["factor"] == 1.0
    result = extract_corpus(str(corpus), ["bank", "river"], tmp_path / "out", model="minilm", layers=[0, 3, 6],
                            forms=True, loader=lambda *a: minilm)  # fmt: skip
    counts = result.manifest.counts
    assert e.occurrences == e.rows == counts["rows"] and e.per_target == counts["per_target"]
    assert e.counts_in_sample["paragraphs"] == result.stats.paragraphs
    assert e.counts_in_sample["sentences_split"] == result.stats.sentences
    # the layout: 3 layers x 384 x float16, plus the keys as the written rows hold them
    import pyarrow as pa

    table = pa.concat_tables(pq.read_table(p) for p in sorted(result.folder.glob("part-*.parquet")))
    strings = sum(len(str(v).encode()) for c in ("doc_id", "sentence", "target", "form") for v in table[c].to_pylist())
    assert e.row_bytes == round(3 * 384 * 2 + strings / table.num_rows + 4 * 4 + 4 * 4)
    written = sum(p.stat().st_size for p in result.folder.glob("part-*.parquet"))
    # float16 vectors barely compress; the small keys and Parquet's footer are the difference
    assert e.shard_bytes == pytest.approx(written, rel=0.2)
    rows = sum(pq.read_metadata(p).num_rows for p in result.folder.glob("part-*.parquet"))
    assert rows == e.rows


def test_a_sample_of_part_of_a_file_is_scaled_by_its_bytes(tmp_path, minilm):
    """Paragraphs of one byte length, each with 'bank', every other one with 'river': a sample of
    whole paragraphs scaled by bytes gives 'bank' exactly; 'river' is off by at most one per slice
    (a slice may start or end on either kind), so by at most SLICES of the sample's river count."""
    n = 20_000  # enough river paragraphs in a quarter that SLICES of them are an eighth
    lines = [
        (f"The river bank {i:05d} rose." if i % 2 else f"The bank {i:05d} opened today.").ljust(40) for i in range(n)
    ]
    corpus = tmp_path / "big.txt"
    corpus.write_text("\n\n".join(lines) + "\n\n")
    size = corpus.stat().st_size
    (tmp_path / "work").mkdir()
    sample = sample_corpus(str(corpus), size // 4, tmp_path / "work", "paragraphs")
    head = Path(sample.source).read_text()
    assert not sample.whole and sample.factor == pytest.approx(size / sample.sampled_bytes)
    assert sample.sampled_bytes >= size // 4 and head.endswith("\n\n") and head.count("bank") < n // 2
    e = price_job(str(corpus), ["bank", "river"], minilm, layers=[6], sample_bytes=size // 4)
    assert e.per_target["bank"] == n  # every paragraph holds one: the scaling by bytes is exact
    river_in_sample = round(e.per_target["river"] / e.sample["factor"])
    assert abs(e.per_target["river"] - n // 2) <= SLICES * e.sample["factor"]
    assert river_in_sample >= 8 * SLICES  # so the bound above is within 1/8 of the count


def test_a_folder_is_sampled_by_whole_files(tmp_path, minilm):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(8):
        (folder / f"{i:02d}.txt").write_text(BLOCK)
    one = (folder / "00.txt").stat().st_size
    e = price_job(str(folder), ["bank"], minilm, layers=[6], sample_bytes=2 * one)
    assert e.sample["factor"] == pytest.approx(4.0) and "2 of 8 files, whole, every 4th" in e.sample["basis"]
    assert e.occurrences == 8 * 16  # identical files: the scaling is exact


def test_time_is_the_measured_forward_and_the_stated_scalings(tmp_path, minilm):
    corpus = tmp_path / "bank.txt"
    corpus.write_text(BLOCK * 2)  # every sentence twice: encoded once, priced once
    e = price_job(str(corpus), ["bank"], minilm, layers=[6], actors=(1, 2, 3), rate=1000.0)
    f = e.forward
    sentences = len({line for line in BLOCK.split("\n\n") if "bank" in line})  # each encoded once
    assert f["sentences"] == min(FORWARD_SAMPLE, sentences) and f["occurrences"] == 2 * f["sentences"]
    assert f["seconds_per_padded_token"] > 0 and f["padded_tokens"] >= f["tokens"] > f["sentences"]
    # the sample is the whole corpus and all of it was timed: the job's batches are the timed ones
    assert f["job_sentences"] == sentences and f["job_padded_tokens"] == f["padded_tokens"]
    assert e.seconds_forward == pytest.approx(f["job_padded_tokens"] * f["seconds_per_padded_token"])
    assert e.seconds_here == pytest.approx(e.seconds_scan + e.seconds_forward)
    assert e.actors[1] == pytest.approx(e.seconds_here)
    assert e.actors[2] == pytest.approx(e.seconds_scan + e.seconds_forward / TWO_ACTORS_SPEEDUP)
    assert e.actors[3] == pytest.approx(e.seconds_scan + e.seconds_forward / (3 * TWO_ACTORS_SPEEDUP / 2))
    assert e.rate["seconds"] == pytest.approx(e.seconds_scan + f["tokens"] / 1000)
    # a stated rate is per actor (a GPU each): N actors at N x the rate; the measured one names its device
    assert e.rate["actors"][3] == pytest.approx(e.seconds_scan + f["tokens"] / 3000)
    assert f["device"] == "cpu" and "stated, not measured here" in e.basis["rate"]
    with pytest.raises(InputError, match="rate"):
        price_job(str(corpus), ["bank"], minilm, rate=0)


def test_padded_tokens_are_the_batches_the_forward_runs(minilm):
    """The job's cost is its batches' padded size (a long sentence pads its whole batch): the count
    is the backbone's own batching (longest first), checked on the arrays it pads."""
    assert padded_tokens([[10, 3, 7, 5]], batch_size=2) == 2 * 10 + 2 * 5  # [10, 7] [5, 3]
    assert padded_tokens([[10, 3], [7, 5]], batch_size=2) == 2 * 10 + 2 * 7  # two calls: [10, 3] | [7, 5]
    assert padded_tokens([[4, 4, 4]], batch_size=2) == 12 and padded_tokens([], 2) == 0
    sentences = [s for s in BLOCK.split("\n\n") if s.strip()] + [MONEY[0], RIVER[0]]
    sequences = [minilm.tokenizer(s)["input_ids"] for s in sentences]
    batched = [
        minilm.pad([seq for _, seq in batch])[0].shape for batch in minilm.batches(list(enumerate(sequences)), 4)
    ]
    assert sum(rows * width for rows, width in batched) == padded_tokens([[len(q) for q in sequences]], 4)


def test_plan_and_estimate_print_every_number_and_write_nothing(tmp_path, minilm):
    corpus = tmp_path / "bank.txt"
    corpus.write_text(BLOCK)
    out = tmp_path / "out"
    proc = run_cli("corpus", "extract", str(corpus), "--words", "bank", "--out", str(out), "-m", "minilm",
                   "--layers", "6", "--estimate", "--rate", "5000", "--actors", "1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not out.exists()
    stated = ("5,000 tokens/s (stated, not measured here)", "on 2 Ray actors at 5,000 tokens/s each (stated)")
    parts = ("occurrences expected: 16", "rows x", "time here:", "(measured here on cpu, ", "on 2 Ray actors")
    for part in (*parts, *stated):
        assert part in proc.stdout.replace("\n", " "), part
    plan = run_cli("corpus", "plan", str(corpus), "--words", "bank", "-m", "minilm", "--layers", "6", "--json")
    assert plan.returncode == 0, plan.stderr
    doc = json.loads(plan.stdout)
    assert doc["occurrences"] == 16 and doc["row_bytes"] > 384 * 2 and doc["basis"]["actors"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("--rate", "100"), "add --estimate"),
        (("--estimate", "--sample-bytes", "0"), "--sample-bytes must be at least 1"),
        (("--estimate", "--rate", "-1"), "--rate must be a positive"),
        ((), "give --out FOLDER"),
    ],
)
def test_pricing_refusals_are_one_line(tmp_path, args, message):
    corpus = tmp_path / "bank.txt"
    corpus.write_text(BLOCK)
    out = ("--out", str(tmp_path / "o")) if "--rate" in args and "--estimate" not in args else ()
    proc = run_cli("corpus", "extract", str(corpus), "--words", "bank", "-m", "minilm", *out, *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
