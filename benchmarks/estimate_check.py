"""`corpus plan`'s estimate against the job it prices (issue 34, item 3: within 20%).

For each case the estimate is made, then the job it prices is run, one after the other in one
process with the model loaded once (its load is in neither, as neither counts it): occurrences,
shard bytes (the folder's files) and seconds (the job's own clock, from its first read to its
last shard) side by side with the ratio. The cases:

  lee           the installed Lee corpus, read whole by the estimate (exact counts)
  enwiki-text   the installed enwiki sample written out as one text file (its documents'
                paragraphs, blank-line separated), sampled at ``--sample-bytes`` (default 600,000:
                about a fifth, so the counts are scaled by about 5)
  enwiki-10x    that text file ten times over (a corpus ten times enwiki's), sampled at the
                default 4,000,000 bytes

    python benchmarks/estimate_check.py [--cases lee enwiki-text enwiki-10x] [--model minilm]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

WORDS = {"lee": "fire,government,police", "enwiki-text": "bank,spring,state", "enwiki-10x": "bank,spring,state"}


def _enwiki_text(folder: Path, copies: int) -> str:
    from contextlens.analyses.corpus.readers import read_corpus

    text = "\n\n".join(piece for doc in read_corpus("enwiki") for piece in doc.pieces) + "\n"
    path = folder / f"enwiki-x{copies}.txt"
    path.write_text(text * copies)
    return str(path)


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(WORDS), choices=list(WORDS))
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sample-bytes", type=int, default=600_000, help="enwiki-text's sample")
    args = parser.parse_args()

    from contextlens.analyses.corpus.estimate import DEFAULT_SAMPLE_BYTES, price_job
    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.core.contextual_models import load_contextual

    model = load_contextual(args.model)
    rows = []
    with tempfile.TemporaryDirectory(prefix="contextlens-estimate-check-") as work:
        for case in args.cases:
            source = {"lee": lambda: "lee", "enwiki-text": lambda: _enwiki_text(Path(work), 1),
                      "enwiki-10x": lambda: _enwiki_text(Path(work), 10)}[case]()  # fmt: skip
            sample = args.sample_bytes if case == "enwiki-text" else DEFAULT_SAMPLE_BYTES
            words = WORDS[case].split(",")
            load = os.getloadavg()[0]
            started = time.perf_counter()
            estimate = price_job(source, words, model, sample_bytes=sample)
            pricing = time.perf_counter() - started
            out = Path(work) / f"out-{case}"
            result = extract_corpus(source, words, out, model=args.model, loader=lambda *_a, **_k: model)
            seconds = result.stats.seconds  # the job's clock, read as it returns
            actual = (result.manifest.counts["rows"], _folder_bytes(out), seconds)
            guess = (estimate.occurrences, estimate.shard_bytes, estimate.seconds_here)
            rows.append(
                (case, WORDS[case], estimate.sample["factor"], pricing, guess, actual, load, os.getloadavg()[0])
            )
            f = estimate.forward
            print(
                f"{case}: estimate = scan {estimate.seconds_scan:.1f} s + forward {estimate.seconds_forward:.1f} s "
                f"({f['job_padded_tokens']:,.0f} tokens in the job's batches, padding included, at "
                f"{f['seconds_per_padded_token'] * 1e6:.0f} us each); the job {seconds:.1f} s",
                flush=True,
            )
    print(f"{args.model} (contextual encoder) fp32, all layers, float16, local engine, {os.cpu_count()} cores")
    print(
        f"{'case':<12}{'words':<24}{'x':>6}{'plan s':>8}  {'occurrences':>16}  {'shard bytes':>26}  "
        f"{'seconds':>20}  load"
    )
    for case, words, factor, pricing, guess, actual, load0, load1 in rows:
        cells = []
        for g, a, fmt in zip(guess, actual, ("{:,.0f}", "{:,.0f}", "{:.1f}"), strict=True):
            cells.append(f"{fmt.format(g)} / {fmt.format(a)} ({(g - a) / a:+.0%})" if a else f"{g} / {a}")
        print(
            f"{case:<12}{words:<24}{factor:>6.2f}{pricing:>8.1f}  {cells[0]:>16}  {cells[1]:>26}  {cells[2]:>20}"
            f"  {load0:.1f}-{load1:.1f}"
        )


if __name__ == "__main__":
    main()
