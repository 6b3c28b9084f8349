"""What a `corpus extract` job will cost, priced before it runs (issue 34, item 3).

A sample of the corpus is read with the job's reader and searched with the job's
:class:`~contextlens.analyses.corpus.targets.Matcher` (the same :func:`scan_documents` both engines
run), so on a sample that is the whole corpus the counts are the run's own. A larger corpus is
sampled by bytes: a folder by whole files spread over it (every k-th, sorted as the job reads
them), a single uncompressed text or JSONL file by :data:`SLICES` slices spread over the file, each
cut at paragraph (or line) boundaries (the first 20% of the enwiki sample held 1.8x the mean
density of "state": a head is not a sample); the counts
are scaled by the corpus's bytes on disk over the sample's. A compressed single file, a Parquet file
and the installed corpora cannot be cut, and are read whole (exact).

Shard bytes come from the row layout: the layers x width x dtype of the vectors, plus the keys
(doc id, sentence, offsets, target, form) at the sample's mean lengths. Time is the sample's
scan time scaled like the counts, plus the occurrences over a forward rate measured here on up to
:data:`FORWARD_SAMPLE` of the sample's occurrences with the job's model, runtime and precision.
N Ray actors are priced by a stated scaling: 1.89x for 2 actors was measured on a forward-bound job
(docs/corpus.md, "On Ray"); beyond 2 it is assumed to continue at that efficiency per actor (not
measured). A GPU (or any other machine) is priced only from a rate the user states, in tokens/s
of real (unpadded) tokens as ``benchmarks/device.py`` reports them, per actor: N actors at a stated
rate are N times it (each actor has a GPU of its own, so none shares another's cores; assumed,
not measured here). Every time says what it rests on: measured here (on which device), or stated.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from contextlens.analyses.corpus.chunks import DTYPES, JobSpec, ScannedChunk, encode_scanned
from contextlens.analyses.corpus.engines import GROUP_BATCHES
from contextlens.analyses.corpus.readers import (
    DEFAULT_LINE_BREAKS,
    INSTALLED,
    TEXT_SUFFIXES,
    _base_suffix,
    check_line_breaks,
    read_corpus,
)
from contextlens.analyses.corpus.targets import Found, Matcher, ScanCounts, form_table, parse_targets, scan_documents
from contextlens.core.threads import current_threads
from contextlens.errors import InputError

DEFAULT_SAMPLE_BYTES = 4_000_000  # ~700k words of English: the enwiki sample and Lee are read whole
FORWARD_SAMPLE = 64  # occurrences encoded to measure the forward rate (twice: the second is timed)
SLICES = 128  # slices of a single file's sample, spread evenly over it (32 missed enwiki 10x by 11%)
TWO_ACTORS_SPEEDUP = 1.89  # measured, docs/corpus.md "On Ray": 2 actors over 1 on a forward-bound job
DTYPE_BYTES = {"float16": 2, "float32": 4}
INT32 = 4
STRING_OFFSET = 4  # Arrow/Parquet keep a 4-byte length or offset per string value


@dataclass(frozen=True)
class Sample:
    """The part of the corpus read, and the factor its counts are scaled by."""

    source: str  # what was read: the corpus itself, or a cut copy of its head
    sampled_bytes: int
    corpus_bytes: int
    basis: str

    @property
    def factor(self) -> float:
        return self.corpus_bytes / self.sampled_bytes if self.sampled_bytes else 1.0

    @property
    def whole(self) -> bool:
        return self.sampled_bytes >= self.corpus_bytes


@dataclass
class ExtractEstimate:
    """Every number of a priced job, each with what it rests on (``basis``)."""

    corpus: str
    sample: dict
    counts_in_sample: dict
    occurrences: int
    per_target: dict
    rows: int
    row_bytes: int
    shard_bytes: int
    forward: dict
    seconds_here: float
    seconds_scan: float
    seconds_forward: float
    actors: dict = field(default_factory=dict)
    rate: dict | None = None
    basis: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def sample_corpus(source: str, sample_bytes: int, work: Path, line_breaks: str) -> Sample:
    """The sample to read (see the module's docstring for how each kind of corpus is cut)."""
    if sample_bytes < 1:
        raise InputError(f"`sample_bytes` must be at least 1, got {sample_bytes}")
    if source in INSTALLED:
        return Sample(source, 1, 1, f"{source} is an installed corpus: read whole")
    path = Path(source).expanduser()
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and _base_suffix(p) in TEXT_SUFFIXES)
        total = sum(p.stat().st_size for p in files)
        if total <= sample_bytes:
            return Sample(source, total, total, f"all {len(files)} files ({total:,} bytes): read whole")
        taken, size = [], 0
        stride = max(1, total // sample_bytes)
        for f in files[::stride]:  # spread over the folder: every stride-th file, whole
            if size >= sample_bytes:
                break
            taken.append(f)
            size += f.stat().st_size
        copy = work / path.name
        for f in taken:
            (copy / f.relative_to(path)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, copy / f.relative_to(path))
        return Sample(
            str(copy), size, total, f"{len(taken)} of {len(files)} files, whole, every {stride}th, by bytes on disk"
        )
    if not path.is_file():  # missing, or a FIFO: the reader says which, in one line
        list(read_corpus(source, line_breaks=line_breaks))
    total = path.stat().st_size
    suffix = path.suffix.lower()
    cannot_cut = suffix in (".gz", ".bz2", ".parquet")
    if total <= sample_bytes or cannot_cut:
        kind = "the whole file" if total <= sample_bytes else f"a {suffix} file cannot be cut: read whole"
        return Sample(source, total, total, f"{kind} ({total:,} bytes)")
    paragraphs = line_breaks == "paragraphs" and _base_suffix(path) != ".jsonl"
    sampled = _slices(path, sample_bytes, paragraphs)
    copy = work / path.name
    copy.write_bytes(sampled)
    where = "paragraphs" if paragraphs else "lines"
    return Sample(
        str(copy),
        len(sampled),
        total,
        f"{len(sampled):,} of {total:,} bytes: {SLICES} slices of whole {where} spread over the file",
    )


def _slices(path: Path, size: int, paragraphs: bool, count: int = SLICES) -> bytes:
    """About ``size`` bytes of the file in ``count`` slices spread evenly over it, each starting
    after and ending at a blank line (``paragraphs``) or a line's end, so no paragraph is cut and
    a corpus whose topics drift (Wikipedia's articles in order) is sampled all along."""
    total = path.stat().st_size
    out = bytearray()
    with path.open("rb") as f:
        end_of_last = 0
        for i in range(count):
            start = max(i * total // count, end_of_last)
            f.seek(start)
            if start > 0:
                _skip_to_boundary(f, paragraphs)
            taken = 0
            for line in f:
                out += line
                taken += len(line)
                if taken >= size // count and (not paragraphs or not line.strip()):
                    break
            if out and not out.endswith(b"\n"):
                out += b"\n"
            if paragraphs and not out.endswith(b"\n\n"):
                out += b"\n"  # a slice that ended at the file's end: its last paragraph ends here
            end_of_last = f.tell()
    return bytes(out)


def _skip_to_boundary(f, paragraphs: bool) -> None:
    """Past the line the seek landed in, and (``paragraphs``) past the rest of its paragraph."""
    f.readline()
    if not paragraphs:
        return
    while True:
        line = f.readline()
        if not line or not line.strip():
            return


def row_key_bytes(found: Sequence[Found]) -> float:
    """Mean bytes of a row's keys in the sample: doc id, sentence, target, form (UTF-8 + offset)
    and the four int32 columns (paragraph, sentence, start, end)."""
    if not found:
        return 0.0
    strings = sum(
        len(f.doc_id.encode()) + len(f.occurrence.text.encode()) + len(f.target.encode()) + len(f.form.encode())
        for f in found
    )
    return strings / len(found) + 4 * STRING_OFFSET + 4 * INT32


def stated_seconds(tokens: float, rate: float, seconds_scan: float, actors: int = 1) -> float:
    """The rule for a stated rate: the tokens over ``actors`` x the rate (one GPU each, none
    sharing another's: linear, assumed), plus the scan at this machine's reading pace."""
    return seconds_scan + tokens / (rate * actors)


def actor_seconds(seconds_forward: float, seconds_scan: float, actors: int) -> float:
    """The stated scaling: 2 actors encode at 1.89x one (measured); N at N x (1.89 / 2) (assumed).
    The scan stays on the driver's reading pace."""
    speedup = 1.0 if actors == 1 else actors * TWO_ACTORS_SPEEDUP / 2
    return seconds_scan + seconds_forward / speedup


def padded_tokens(groups: Sequence[Sequence[int]], batch_size: int) -> int:
    """Tokens the forward runs on, padding included, for groups of sequence lengths encoded one
    group a call: each sorted longest first and cut into batches of ``batch_size`` padded to their
    longest (Backbone.batches). Why: a batch costs its padded size, and a few long sentences pad
    every batch they fall in."""
    total = 0
    for group in groups:
        part = sorted(group, reverse=True)
        total += sum(len(part[b : b + batch_size]) * part[b] for b in range(0, len(part), batch_size))
    return total


def job_groups(model, found: Sequence[Found], group: int, factor: float = 1.0) -> list[list[int]]:
    """Token counts of the sentences the job encodes, one list per extraction call of ``group``
    occurrences (engines.grouped). The core encodes a sentence once within a call, not across
    calls: in a sample standing for ``factor`` times its text, a call's occurrences are ``group /
    factor`` consecutive ones of the sample (a corpus that repeats itself repeats in other calls),
    and the sentences kept are batched in calls of ``group``."""
    from contextlens.core.alignment import tokenize_many

    first = {f.occurrence.text: f.occurrence for f in found}
    length = dict(zip(first, (len(t.input_ids) for t in tokenize_many(model, list(first.values()))), strict=True))
    window = max(1, round(group / factor))
    kept = [
        length[text]
        for start in range(0, len(found), window)
        for text in dict.fromkeys(f.occurrence.text for f in found[start : start + window])
    ]
    return [kept[start : start + group] for start in range(0, len(kept), group)]


def measure_forward(model, spec, found: Sequence[Found]) -> dict:
    """Seconds per padded token of the job's forward (the same call the engines make) on up to
    FORWARD_SAMPLE of the sample's sentences with an occurrence, all their occurrences included,
    the second of two passes. Per padded token, not per sentence: 64 sentences spread over the
    sample make two batches, one of them padded to the sample's longest sentence, where the job's
    batches are sorted among a thousand occurrences (Lee: priced at 2.5x its run per sentence)."""
    texts = list(dict.fromkeys(f.occurrence.text for f in found))
    if not texts:
        return {"sentences": 0, "seconds": 0.0, "seconds_per_padded_token": None, "tokens": 0, "padded_tokens": 0}
    step = max(1, len(texts) // FORWARD_SAMPLE)
    chosen_texts = set(texts[::step][:FORWARD_SAMPLE])  # spread over the sample: sentences of every length
    chosen = [f for f in found if f.occurrence.text in chosen_texts]
    # untimed first pass: a long job has met each batch shape before (the first forward of a new
    # shape builds its kernels), so the rate it keeps is the second pass's
    encode_scanned(model, spec, [ScannedChunk(0, ScanCounts(), chosen)])
    (lengths,) = job_groups(model, chosen, len(chosen))  # one call: one group
    padded = padded_tokens([lengths], spec.batch_size)
    start = time.perf_counter()
    encode_scanned(model, spec, [ScannedChunk(0, ScanCounts(), chosen)])
    seconds = time.perf_counter() - start
    return {
        "sentences": len(lengths),
        "occurrences": len(chosen),
        "tokens": sum(lengths),
        "padded_tokens": padded,
        "seconds": seconds,
        "seconds_per_padded_token": seconds / padded,
        "tokens_per_s": sum(lengths) / seconds,
        "tokens_per_sentence": sum(lengths) / len(lengths),
        "sentences_in_sample": len(texts),
    }


def estimate_extraction(
    source: str,
    targets: Sequence[str],
    model,
    spec,
    line_breaks: str = "paragraphs",
    on_error: str = "skip",
    sample_bytes: int = DEFAULT_SAMPLE_BYTES,
    actors: Sequence[int] = (1, 2, 4),
    rate: float | None = None,
) -> ExtractEstimate:
    """Price the job ``spec`` (its matcher, layers, dtype, batch) on ``source`` with ``model``
    loaded (nothing is written): counts from a sample, bytes from the row layout, time measured."""
    if rate is not None and rate <= 0:
        raise InputError(f"`rate` must be a positive number of tokens per second, got {rate}")
    sample, counts, found, scan_seconds = _scan_sample(source, spec, line_breaks, on_error, sample_bytes)
    per_target: dict[str, int] = dict.fromkeys(parse_targets(targets), 0)
    for f in found:
        per_target[f.target] = per_target.get(f.target, 0) + 1
    factor = sample.factor
    occurrences = round(len(found) * factor)
    width = len(spec.layers) * model.hidden_size * DTYPE_BYTES[spec.dtype]
    keys = row_key_bytes(found)
    row_bytes = round(width + keys)
    forward = measure_forward(model, spec, found)
    groups = job_groups(model, found, GROUP_BATCHES * spec.batch_size, factor)
    sentences = sum(len(g) for g in groups) * factor  # sentences to encode, scaled like the counts
    # the job's batches (padding included) from the sample's sentences in reading order, scaled likewise
    job_padded = padded_tokens(groups, spec.batch_size) * factor
    seconds_forward = job_padded * (forward["seconds_per_padded_token"] or 0.0)
    forward |= {"job_padded_tokens": job_padded, "job_sentences": sentences}
    seconds_scan = scan_seconds * factor
    tokens_total = sum(sum(g) for g in groups) * factor
    return ExtractEstimate(
        corpus=source,
        sample=asdict(sample) | {"factor": factor, "whole": sample.whole},
        counts_in_sample={
            "occurrences": len(found),
            "paragraphs": counts.paragraphs,
            "paragraphs_split": counts.paragraphs_split,
            "sentences_split": counts.sentences,
            "scan_seconds": scan_seconds,
        },
        occurrences=occurrences,
        per_target={t: round(n * factor) for t, n in per_target.items()},
        rows=occurrences,
        row_bytes=row_bytes,
        shard_bytes=occurrences * row_bytes,
        forward=forward | _measured_on(model, spec),
        seconds_here=seconds_scan + seconds_forward,
        seconds_scan=seconds_scan,
        seconds_forward=seconds_forward,
        actors={n: actor_seconds(seconds_forward, seconds_scan, n) for n in actors},
        rate=None if rate is None else _stated(rate, tokens_total, seconds_scan, actors),
        basis=_basis(sample, spec, model.hidden_size, width, keys),
    )


def _measured_on(model, spec: JobSpec) -> dict:
    """What the forward rate was measured with, here: the model, its backend, this process's threads."""
    where = {"precision": spec.precision, "runtime": spec.runtime, "device": model.backend.device}
    return {"model": model.name, **where, "threads": current_threads()}


def _stated(rate: float, tokens: float, seconds_scan: float, actors: Sequence[int]) -> dict:
    """The job at a stated rate: on one actor, and on each of ``actors`` (:func:`stated_seconds`)."""
    return {
        "tokens_per_s": rate,
        "tokens": tokens,
        "seconds": stated_seconds(tokens, rate, seconds_scan),
        "actors": {n: stated_seconds(tokens, rate, seconds_scan, n) for n in actors},
    }


def _scan_sample(
    source: str, spec: JobSpec, line_breaks: str, on_error: str, sample_bytes: int
) -> tuple[Sample, ScanCounts, list[Found], float]:
    """The sample of ``source`` scanned by the job's own matcher: its counts, its finds, the scan's seconds."""
    with tempfile.TemporaryDirectory(prefix="contextlens-estimate-") as folder:
        sample = sample_corpus(source, sample_bytes, Path(folder), line_breaks)
        start = time.perf_counter()
        docs = [(d.doc_id, d.pieces) for d in read_corpus(sample.source, on_error=on_error, line_breaks=line_breaks)]
        counts, found = scan_documents(docs, spec.matcher)
        return sample, counts, found, time.perf_counter() - start


def _basis(sample: Sample, spec: JobSpec, hidden_size: int, width: int, keys: float) -> dict[str, str]:
    """How each number of the estimate was reached, said beside it."""
    return {
        "occurrences": "the sample's, found by the job's own scan"
        + ("" if sample.whole else f", x {sample.factor:.3g}"),
        "row_bytes": f"{len(spec.layers)} layers x {hidden_size} x {DTYPE_BYTES[spec.dtype]} bytes "
        f"({spec.dtype}) = {width:,} + keys {keys:,.0f} (the sample's mean doc id, sentence, target, form, "
        "offsets); Parquet's own page overhead and compression not counted",
        "seconds_here": "the sample's read+scan time scaled like the counts + the tokens the job's batches "
        "hold (the sample's sentences with an occurrence, each once, batched as the job batches them, padding "
        "included), scaled likewise, x the seconds per padded token measured here; model load not counted",
        "actors": f"2 actors = {TWO_ACTORS_SPEEDUP}x 1 actor on the forward (measured, docs/corpus.md); "
        f"N actors = N x {TWO_ACTORS_SPEEDUP / 2:.3f} (assumed beyond 2); each actor with this "
        "process's threads; the scan as here",
        "rate": "stated, not measured here: tokens of the sentences to encode (the sample's, scaled like the "
        "counts, no padding: a rate as benchmarks/device.py reports it) / the stated rate, + the scan as here; "
        "N actors: N x the stated rate (a GPU each; assumed linear, not measured)",
    }


def price_job(
    source: str,
    targets: Sequence[str],
    model,
    layers: Sequence[int] | None = None,
    pooling: str = "mean",
    dtype: str = "float16",
    forms: bool = False,
    line_breaks: str | None = None,
    on_error: str = "skip",
    sample_bytes: int = DEFAULT_SAMPLE_BYTES,
    actors: Sequence[int] = (1, 2, 4),
    rate: float | None = None,
) -> ExtractEstimate:
    """:func:`estimate_extraction` of the job `corpus extract` would run with these settings
    (``model``: the loaded contextual model the job would load)."""
    from contextlens.core.choices import check_pooling

    check_pooling(pooling)
    if dtype not in DTYPES:
        raise InputError(f"unknown `dtype` {dtype!r}; use float16 or float32")
    line_breaks = check_line_breaks(line_breaks or DEFAULT_LINE_BREAKS)
    words = parse_targets(targets)
    spec = JobSpec(
        model.name, Matcher(form_table(words, forms)), tuple(model.check_layers(layers)), pooling, dtype,
        model.precision, runtime=model.runtime,
    )  # fmt: skip
    return estimate_extraction(source, words, model, spec, line_breaks, on_error, sample_bytes, actors, rate)
