"""The one-sentence shortcut of `split_sentences` on the installed corpora: the same sentences as
pysbd on every piece, and the CPU seconds of each way.

Why: `corpus list` (and `prepare`, and an extraction over WordNet) splits every gloss and usage
example of WordNet; most are plain pieces that pysbd returns whole. This checks, piece by piece
over whole corpora, that skipping pysbd for them changes no sentence, and prints what it saves.

    python benchmarks/sentence_split.py [--corpora lee,enwiki,wordnet]

Exit status 1 if any piece's sentences differ.
"""

from __future__ import annotations

import argparse
import sys
import time
import unicodedata

from contextlens.analyses.corpus import sentences
from contextlens.analyses.corpus.readers import read_corpus


def _without_shortcut(text: str) -> list[str]:
    """What split_sentences returned before the shortcut: pysbd on every non-blank piece."""
    text = unicodedata.normalize("NFC", text)
    return sentences.pysbd_sentences(text) if text.strip() else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default="lee,enwiki,wordnet")
    args = parser.parse_args()
    sentences._segmenter()  # its import and set-up are not either side's
    print(f"{'corpus':8} {'pieces':>8} {'shortcut':>9} {'sentences':>10} {'pysbd CPU s':>12} {'now CPU s':>10}  same")
    differ = 0
    for name in args.corpora.split(","):
        pieces = [p for doc in read_corpus(name) for p in doc.pieces]
        plain = sum(1 for p in pieces if sentences._ONE_SENTENCE.fullmatch(p))
        started = time.process_time()
        before = [_without_shortcut(p) for p in pieces]
        before_s = time.process_time() - started
        started = time.process_time()
        after = [sentences.split_sentences(p) for p in pieces]
        after_s = time.process_time() - started
        bad = sum(1 for a, b in zip(before, after, strict=True) if a != b)
        differ += bad
        count = sum(map(len, after))
        print(
            f"{name:8} {len(pieces):>8,} {plain:>9,} {count:>10,} {before_s:>12.1f} {after_s:>10.1f}  "
            f"{'yes' if not bad else f'NO: {bad} pieces differ'}"
        )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
