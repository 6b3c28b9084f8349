"""`static train`: word2vec (skip-gram or CBOW) or fastText trained with gensim on a corpus the
corpus commands read, saved under a name with how it was made.

The corpus is read once into memory (the installed ones together are about 2 million words) as
lowercase word tokens (gensim's ``tokenize``: runs of letters), one token list per line or
paragraph. gensim draws its initial vectors and its negative samples from ``seed``; with one
worker thread the result is the same on every run, with more the threads' interleaving changes
it (gensim's documented limit), so the provenance says whether the run was reproducible.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contextlens.analyses.corpus.readers import INSTALLED, ReadStats, check_readable, describe, read_corpus
from contextlens.core import arguments
from contextlens.core.progress import Progress, progress_bar
from contextlens.core.static_store import VECTORS, check_new, save_made
from contextlens.errors import InputError, ParameterError

METHODS = ("word2vec", "fasttext")
ALL_INSTALLED = "installed"
BUCKETS = 200_000  # fastText's hashed n-gram vectors kept by default (fastText's own: 2,000,000)
MAX_SEED = 2**32 - 1  # gensim seeds numpy's legacy RandomState, which takes 0..2**32 - 1


@dataclass(frozen=True)
class TrainedModel:
    """What ``static train`` made: the name to pass as ``static``, and its provenance."""

    name: str
    path: str
    method: str
    architecture: str
    corpus: list[str]
    documents: int
    lines: int
    tokens: int
    vocabulary: int
    parameters: dict[str, Any] = field(default_factory=dict)
    read_seconds: float = 0.0
    train_seconds: float = 0.0
    reproducible: bool = False
    lowercase: bool = True
    tokenizer: str = "gensim.utils.tokenize, lowercase (runs of letters)"
    gensim: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def corpus_sources(corpus: str | list[str] | tuple[str, ...]) -> list[str]:
    """``installed`` (every installed corpus: enwiki, lee, wordnet), one corpus, or several."""
    sources = [corpus] if isinstance(corpus, str) else list(corpus) if isinstance(corpus, Iterable) else []
    if not sources or not all(isinstance(s, str) and s.strip() for s in sources):
        raise ParameterError("corpus", f"must name a corpus (a file, a folder, {', '.join(INSTALLED)} or installed)")
    out: list[str] = []
    for source in sources:
        out.extend(INSTALLED if source == ALL_INSTALLED else [source])
    return out


def read_token_lines(sources: list[str], stats: ReadStats) -> tuple[list[list[str]], int]:
    """Every non-empty line or paragraph of ``sources`` as lowercase word tokens; and the token count."""
    from gensim.utils import tokenize

    intern = sys.intern
    lines: list[list[str]] = []
    tokens = 0
    for source in sources:
        for doc in read_corpus(source, stats):
            for piece in doc.pieces:
                words = [intern(w) for w in tokenize(piece, lowercase=True)]
                if words:
                    lines.append(words)
                    tokens += len(words)
    return lines, tokens


def train_static(  # noqa: PLR0913 - the public API: one keyword per gensim setting (most keyword-only)
    corpus: str | list[str] = ALL_INSTALLED,
    method: str = "word2vec",
    *,
    name: str,
    sg: bool = True,
    dim: int = 100,
    epochs: int = 5,
    window: int = 5,
    min_count: int = 5,
    seed: int = 0,
    workers: int = 1,
    buckets: int | None = None,
    force: bool = False,
    show_progress_bar: bool = False,
    progress: Progress | None = None,
) -> TrainedModel:
    """Train word2vec (``sg``: skip-gram, else CBOW) or fastText on ``corpus`` and save it as ``name``.

    fastText keeps ``buckets`` hashed character n-gram vectors (3 to 6 letters; default 200,000;
    fastText's own default is 2,000,000, 800 MB at 100-d, too large for a cache entry), from which a
    word never seen in the corpus gets a vector; word2vec has none, so ``buckets`` with it is
    refused. ``workers=1`` makes the run reproducible from ``seed`` (0 to 2**32 - 1). An existing
    model of that name is replaced only with ``force``.
    """
    if method not in METHODS:
        raise ParameterError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")
    sg, force = arguments.flag(sg, "sg"), arguments.flag(force, "force")
    if buckets is not None and method != "fasttext":
        raise ParameterError(
            "buckets", "is fastText's (hashed n-gram vectors); word2vec has none: drop it, or use `method` fasttext"
        )
    check_new(name, force)
    params = _gensim_params(method, sg, dim, epochs, window, min_count, seed, workers, buckets)
    sources = corpus_sources(corpus)
    for source in sources:
        check_readable(source)

    import gensim

    lines, tokens, stats, read_seconds = _read(sources)
    model, train_seconds = _fitted(method, params, lines, f"{', '.join(sources)} ({tokens:,} tokens)",
                                   show_progress_bar, progress)  # fmt: skip
    del lines
    kv = model.wv
    result = TrainedModel(
        name=name, path="", method=method, architecture="skip-gram" if sg else "CBOW",
        corpus=[describe(s) for s in sources], documents=stats.documents, lines=model.corpus_count, tokens=tokens,
        vocabulary=len(kv.index_to_key), parameters={k: v for k, v in params.items() if k != "sg"},
        read_seconds=round(read_seconds, 2), train_seconds=round(train_seconds, 2),
        reproducible=params["workers"] == 1, gensim=gensim.__version__,
    )  # fmt: skip
    return _saved(name, kv, result)


def _read(sources: list[str]) -> tuple[list[list[str]], int, ReadStats, float]:
    """The corpus's token lines, its token count and read statistics, and the seconds reading took."""
    started = time.perf_counter()
    stats = ReadStats()
    lines, tokens = read_token_lines(sources, stats)
    read_seconds = time.perf_counter() - started
    if not lines:
        raise InputError(f"corpus {', '.join(sources)} has no words to train on")
    return lines, tokens, stats, read_seconds


def _fitted(method: str, params: dict[str, Any], lines: list, read: str, show_progress_bar: bool, progress):
    """The gensim model with its vocabulary built and its epochs run; the seconds the epochs took."""
    from gensim.models import FastText, Word2Vec

    cls = FastText if method == "fasttext" else Word2Vec
    model = cls(**params)
    model.build_vocab(lines)
    if not model.wv.index_to_key:
        raise InputError(f"no word occurs {params['min_count']} times in {read}; lower `min_count`")
    return model, _train(model, lines, method, params["epochs"], show_progress_bar, progress)


def _saved(name: str, kv: Any, result: TrainedModel) -> TrainedModel:
    """The vectors saved as a made model with the run's provenance; the record with its folder."""

    def write(folder: Path) -> None:
        kv.save(str(folder / VECTORS))

    provenance = result.to_dict()
    del provenance["path"], provenance["name"]
    folder = save_made(name, write, provenance)
    return TrainedModel(**{**result.to_dict(), "path": str(folder)})


def _gensim_params(
    method: str, sg: bool, dim: int, epochs: int, window: int, min_count: int, seed: int, workers: int,
    buckets: int | None,
) -> dict[str, Any]:  # fmt: skip
    """The settings checked (each within its range) as gensim's keyword arguments."""
    dim = arguments.whole_number(dim, "dim", minimum=2, maximum=1000)
    epochs = arguments.whole_number(epochs, "epochs", minimum=1, maximum=100)
    window = arguments.whole_number(window, "window", minimum=1, maximum=50)
    min_count = arguments.whole_number(min_count, "min_count", minimum=1)
    seed = arguments.whole_number(seed, "seed", minimum=0, maximum=MAX_SEED)
    workers = arguments.whole_number(workers, "workers", minimum=1, maximum=64)
    buckets = BUCKETS if buckets is None else buckets
    buckets = arguments.whole_number(buckets, "buckets", minimum=1000, maximum=2_000_000)
    params: dict[str, Any] = dict(vector_size=dim, window=window, min_count=min_count, sg=int(sg), seed=seed)
    params.update(workers=workers, epochs=epochs)
    if method == "fasttext":
        params.update(bucket=buckets, min_n=3, max_n=6)
    return params


def _train(model: Any, lines: list, method: str, epochs: int, show_progress_bar: bool, progress) -> float:
    """The epochs run, told to the bar and to ``progress``; the seconds they took."""
    started = time.perf_counter()
    with progress_bar(f"{method}: epochs", epochs) if show_progress_bar else nullcontext() as bar:
        tellers = [t for t in (bar, progress) if t is not None]
        model.train(
            lines,
            total_examples=model.corpus_count,
            epochs=epochs,
            callbacks=[_EpochCallback(tellers, epochs)],
        )
    return time.perf_counter() - started


class _EpochCallback:
    """gensim calls it around each epoch; it tells the progress bar (gensim's CallbackAny2Vec shape,
    without importing gensim at module level)."""

    def __init__(self, tellers: list[Progress], epochs: int):
        self.tellers = tellers
        self.epochs = epochs
        self.done = 0

    def on_train_begin(self, model: Any) -> None:
        pass

    def on_train_end(self, model: Any) -> None:
        pass

    def on_epoch_begin(self, model: Any) -> None:
        pass

    def on_epoch_end(self, model: Any) -> None:
        self.done += 1
        for tell in self.tellers:
            tell(self.done, self.epochs)
