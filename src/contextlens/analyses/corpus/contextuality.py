"""Ethayarajh (2019) on a corpus: self-similarity, intra-sentence similarity and MEV, many contexts per word.

The WordNet benchmark has at most 10 contexts per word, and the paper's (centred) MEV is at
least 1/(n-1) with n contexts, so its MEV cannot be set beside the paper's "< 5%". Here every
word with at least ``min_contexts`` contexts (one occurrence per sentence, the first) is
measured, with the same metric functions as the benchmark (:mod:`contextlens.analyses.benchmarks.contextuality`), both
MEVs included: ``mev_centred`` (the paper's: a PCA of the word's occurrences centred on their
mean) and ``mev`` (uncentred, contextlens's earlier number, which counts the shared mean
direction as explained); each beside the same MEV of random words' matrices of the same sizes.

Two entry points, one implementation (:func:`corpus_contextuality`, on extraction folders):

* an extraction folder (``corpus extract``): its targets are the words; intra-sentence similarity
  is then over the targets of sentences holding at least three of them (the folder has no other
  words), and the random-word baselines draw from the targets' occurrences;
* a corpus (installed name, file, folder, anything ``corpus extract`` reads):
  :func:`contextuality_of_corpus` picks the words itself (:data:`WORD_RULE`), extracts them with
  the corpus extraction engine into a folder under the contextlens cache (resumable; a finished
  folder is reused, not re-encoded), and extracts EVERY word of ``n_sentences`` sampled sentences
  into a second folder, for the paper's intra-sentence similarity and random-word baselines.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from contextlens.analyses.benchmarks import contextuality as ctx
from contextlens.analyses.benchmarks.published import published
from contextlens.analyses.corpus.chunks import SENTENCE_KEY, layer_column
from contextlens.analyses.corpus.extract import ExtractStats, extract_corpus
from contextlens.analyses.corpus.folder import layer_matrix, read_rows
from contextlens.analyses.corpus.folder_check import checked_folder
from contextlens.analyses.corpus.manifest import OLD_FORMATS, Manifest, read_manifest
from contextlens.analyses.corpus.readers import INSTALLED, check_readable, describe, read_corpus
from contextlens.analyses.corpus.sentences import document_sentences
from contextlens.core.backend import Backend
from contextlens.core.resources import DEFAULT_CONTEXTUAL
from contextlens.errors import InputError

# A "word" for choosing and for the sentence sample is a maximal run of word characters that is
# all ASCII letters: exactly what the extraction's whole-word locator (``word_pattern``) finds.
WORD_RUN = re.compile(r"\w+")
WORD_RULE = (
    "content words: ASCII-alphabetic whole words of 3+ letters, lower-cased, not in scikit-learn's English "
    "stop words, seen in >= min_contexts sentences (a counting pass with the extraction's reader and splitter); "
    "up to max_words of them, a seeded random sample when more qualify (not only the most frequent)"
)
MAX_SENTENCE_WORDS = 60  # sampled sentences longer than this are skipped (each word is one forward pass)
CHOICE_VERSION = 1
Progress = Callable[[str, ExtractStats | None], None]


def _words(sentence: str) -> list[str]:
    return [w.lower() for w in WORD_RUN.findall(sentence) if w.isascii() and w.isalpha()]


# --- the metrics on extraction folders -------------------------------------------------------


@dataclass
class _Rows:
    """One folder's rows: vectors per layer, the sentence (context) of each row, its target."""

    manifest: Manifest
    table: pa.Table
    contexts: list[tuple[str, int]]
    targets: list[str]
    forms: list[str] | None = None  # the form matched, in a --forms folder (each form its own word then)

    @classmethod
    def read(cls, folder: Path) -> _Rows:
        manifest = checked_folder(Path(folder))
        # a sentence is (doc_id, paragraph_index, sentence_index) from format 3 on; before, the
        # sentence index was counted within the document (no paragraph_index column)
        key = ["doc_id", "sentence_index"] if manifest.format in OLD_FORMATS else list(SENTENCE_KEY)
        form = ["form"] if manifest.forms else []
        cols = [*key, "target", *form, *(layer_column(lay) for lay in manifest.layers)]
        table = read_rows(Path(folder), columns=cols)
        contexts = list(zip(*(table.column(k).to_pylist() for k in key), strict=True))
        forms = [f.lower() for f in table.column("form").to_pylist()] if form else None
        return cls(manifest, table, contexts, table.column("target").to_pylist(), forms)

    @property
    def words(self) -> list[str]:
        """What counts as one word: the form in a --forms folder (self-similarity per form), else the target."""
        return self.forms if self.forms is not None else self.targets

    def vectors(self, layer: int) -> np.ndarray:
        return layer_matrix(self.table, layer_column(layer))

    def first_per_context(self) -> dict[str, list[int]]:
        """Target -> row of its first occurrence in each sentence (one context per sentence)."""
        first: dict[tuple[str, tuple], int] = {}
        for i, (t, k) in enumerate(zip(self.words, self.contexts, strict=True)):
            first.setdefault((t, k), i)
        by_word: dict[str, list[int]] = {}
        for (t, _), i in first.items():
            by_word.setdefault(t, []).append(i)
        return by_word

    def sentences(self, min_words: int = 3) -> list[np.ndarray]:
        """Rows of each sentence holding at least ``min_words`` different words, one row per word
        (its first): a target repeated in a sentence is not another token of it (79 of 106 such
        "sentences" of a five-word folder repeated the target, and measured self-similarity)."""
        groups: dict[tuple, dict[str, int]] = {}
        for i, (k, w) in enumerate(zip(self.contexts, self.words, strict=True)):
            groups.setdefault(k, {}).setdefault(w, i)
        return [np.array(list(r.values())) for r in groups.values() if len(r) >= min_words]


def different_words_baseline(
    vectors: np.ndarray, words: list[str], texts_of: list[int], n_pairs: int, seed: int
) -> float:
    """Mean cosine of ``n_pairs`` random pairs of rows of different words from different sentences
    (the paper's random-word baseline); NaN when no such pair exists (one word)."""
    from contextlens.core.similarity import normalize_rows

    ids = {w: n for n, w in enumerate(dict.fromkeys(words))}
    word_of, text_of = np.array([ids[w] for w in words]), np.asarray(texts_of)
    if len(ids) < 2:
        return float("nan")
    rng, u, n = np.random.default_rng(seed), normalize_rows(vectors), len(vectors)
    total, count = 0.0, 0
    for _ in range(1000):  # a bounded number of draws: a pool of almost one word may give few pairs
        a, b = rng.integers(0, n, size=n_pairs), rng.integers(0, n, size=n_pairs)
        keep = (word_of[a] != word_of[b]) & (text_of[a] != text_of[b])
        a, b = a[keep][: n_pairs - count], b[keep][: n_pairs - count]
        total += float(np.einsum("ij,ij->i", u[a], u[b]).sum())
        count += len(a)
        if count >= n_pairs:
            break
    return total / count if count else float("nan")


def corpus_contextuality(
    folder: Path, min_contexts: int = 50, seed: int = 0, sentences: Path | None = None
) -> ctx.ContextualityResult:
    """The metrics per layer on the words of ``folder`` with at least ``min_contexts`` contexts.

    ``sentences``: a folder (same model and layers) holding every word of some sentences, used for
    intra-sentence similarity and the random-word baselines; without it, ``folder``'s own rows are.
    """
    check_min_contexts(min_contexts)
    words_rows = _Rows.read(folder)
    manifest = words_rows.manifest
    by_word = words_rows.first_per_context()
    words = {w: np.array(r) for w, r in by_word.items() if len(r) >= min_contexts}
    if not words:
        raise InputError(too_few_message(f"no word in {folder}", {w: len(r) for w, r in by_word.items()}, min_contexts))
    pool_rows = words_rows
    if sentences is not None:
        pool_rows = _Rows.read(sentences)
        if (pool_rows.manifest.model, pool_rows.manifest.layers) != (manifest.model, manifest.layers):
            raise InputError(f"{sentences} was extracted with another model or layers than {folder}")
    groups = pool_rows.sentences()
    context_id = {k: n for n, k in enumerate(dict.fromkeys(pool_rows.contexts))}
    texts_of = [context_id[k] for k in pool_rows.contexts]
    result = ctx.ContextualityResult(
        "contextuality", manifest.model, meta=_corpus_meta(manifest, words, groups, min_contexts, sentences is not None)
    )
    result.meta["warnings"] = support_warnings(pool_rows, groups, sentences is not None)
    for layer in manifest.layers:
        vectors = words_rows.vectors(layer)
        pool_vectors = pool_rows.vectors(layer) if sentences is not None else vectors
        baseline = different_words_baseline(pool_vectors, pool_rows.words, texts_of, 2000, seed)
        metrics = _layer_metrics([vectors[r] for r in words.values()], vectors, pool_vectors, texts_of, baseline, seed)
        if groups:
            intra = float(np.mean([ctx.intra_sentence_similarity(pool_vectors[g]) for g in groups]))
            metrics += [("intra_sentence", intra), ("intra_sentence_adjusted", intra - baseline)]
        for metric, value in metrics:
            result.add(system=manifest.model, layer=layer, split="corpus", metric=metric, value=value)
    return result


def _corpus_meta(
    manifest: Manifest, words: dict[str, np.ndarray], groups: list[np.ndarray], min_contexts: int, sampled: bool
) -> dict[str, object]:
    """What the numbers were measured on (counts, words, pools) and the paper they are set beside."""
    counts = sorted(len(r) for r in words.values())
    return {
        "counts": {
            "words": len(words),
            "word_occurrences": int(sum(counts)),
            "min_contexts": min_contexts,
            "contexts_per_word": {"min": counts[0], "median": counts[len(counts) // 2], "max": counts[-1]},
            "sentences": len(groups),
            "sentence_words": int(sum(len(g) for g in groups)),
        },
        "words": {w: len(r) for w, r in sorted(words.items())},
        "corpus": manifest.corpus,
        "intra_sentence_words": (
            "every word of sampled sentences"
            if sampled
            else "the folder's targets only, one row per target, in sentences holding 3 or more different targets"
        ),
        "baseline_words": "every word of sampled sentences"
        if sampled
        else "the folder's targets (pairs of two different ones)",
        **manifest.backend.to_dict(),
        "paper": "Ethayarajh 2019, EMNLP, Figures 1-4 (BERT-base, ELMo, GPT-2)",
        "paper_findings": ctx.PAPER_FINDINGS,
        "paper_mev_bound": ctx.PAPER_MEV_BOUND,
        "mev_definitions": ctx.MEV_DEFINITIONS,
        "published": published(),
        "baseline_pairs": "random pairs of different words from different sentences",
        "self_similarity_words": "each form its own word (a --forms folder)" if manifest.forms else "targets",
    }


def _layer_metrics(
    mats: list[np.ndarray],
    vectors: np.ndarray,
    pool_vectors: np.ndarray,
    texts_of: list[int],
    baseline: float,
    seed: int,
) -> list[tuple[str, float]]:
    """Self-similarity and the three MEVs of each word's matrix at one layer, each beside the same
    measure of random words' matrices of the same sizes (drawn from the pool, with the words when
    the pool is small)."""
    self_sim = float(np.mean([ctx.self_similarity(m) for m in mats]))
    mev = float(np.mean([ctx.max_explainable_variance(m) for m in mats]))
    mev_centred = float(np.mean([ctx.max_explainable_variance(m, centred=True) for m in mats]))
    biggest = max(len(m) for m in mats)
    draw_from = pool_vectors if len(pool_vectors) >= biggest else np.concatenate([pool_vectors, vectors])
    rng = np.random.default_rng(seed + 1)
    random_mats = [draw_from[rng.choice(len(draw_from), len(m), False)] for m in mats]
    random_mev = float(np.mean([ctx.max_explainable_variance(m) for m in random_mats]))
    random_centred = float(np.mean([ctx.max_explainable_variance(m, centred=True) for m in random_mats]))
    mev_paper = float(np.mean([ctx.paper_mev(m) for m in mats]))
    random_paper = float(np.mean([ctx.paper_mev(m) for m in random_mats]))
    random_1000 = ctx.paper_random_mev(pool_vectors, texts_of, seed + 2)
    return [
        ("anisotropy", baseline),
        ("self_similarity", self_sim),
        ("self_similarity_adjusted", self_sim - baseline),
        ("mev", mev),
        ("mev_baseline", random_mev),
        ("mev_adjusted", mev - random_mev),
        ("mev_centred", mev_centred),
        ("mev_centred_baseline", random_centred),
        ("mev_centred_adjusted", mev_centred - random_centred),
        ("mev_paper", mev_paper),
        ("mev_paper_baseline", random_paper),
        ("mev_paper_adjusted", mev_paper - random_paper),
        ("mev_paper_baseline_1000", random_1000),
        ("mev_paper_1000_adjusted", mev_paper - random_1000),
    ]


MIN_SENTENCES = 20  # fewer sentences of 3+ different words: the intra-sentence mean is not reported as such


def support_warnings(pool: _Rows, groups: list[np.ndarray], sampled: bool) -> list[str]:
    """What the folder cannot support, said beside the numbers (a measure it cannot make is NaN)."""
    out = []
    if len(set(pool.words)) < 2:
        out.append(
            "one word only: no pair of different words, so no anisotropy baseline (NaN) and no adjusted values; "
            "extract two or more words, or give the corpus itself (`--corpus CORPUS`) to sample every word"
        )
    if not sampled and len(groups) < MIN_SENTENCES:
        out.append(
            f"{len(groups)} sentence(s) hold 3 or more different targets (fewer than {MIN_SENTENCES}): an "
            "extraction folder holds only its targets, not the other tokens of a sentence, so its intra-sentence "
            "similarity is not the paper's; give the corpus itself for every word of sampled sentences"
        )
    if not sampled:
        out.append(
            f"the MEV baselines are matrices of the folder's own {len(set(pool.words))} word(s) mixed: their first "
            "component is mostly which word a row is, so `mev_*_baseline` is high and `mev_*_adjusted` may be "
            "negative; give the corpus itself for random matrices of every word"
        )
    return out


def check_min_contexts(min_contexts: int) -> None:
    if min_contexts < 2:
        raise InputError(f"`min_contexts` {min_contexts}: give at least 2 (self-similarity needs two contexts)")


def extraction_folder(source: str) -> Manifest | None:
    """The manifest when ``source`` is an extraction folder (``corpus extract``), else None (a corpus)."""
    return read_manifest(Path(source).expanduser()) if str(source).strip() else None


def check_folder_backend(manifest: Manifest, source: str, model: str | None, precision: str, runtime: str) -> None:
    """An extraction folder is measured with its own vectors: a request for another model or backend is
    refused, never answered with the folder's numbers under the requested name."""
    from contextlens.core.resources import REGISTRY

    spec = REGISTRY.get(model) if model is not None else None
    if model is not None and (spec.name if spec is not None else model) != manifest.model:
        raise InputError(
            f"{source} was extracted with {manifest.model}, not {model}; pass `model` {manifest.model} "
            "(an extraction folder is measured with its own vectors)"
        )
    asked = Backend(precision, runtime)
    if asked != manifest.backend:
        raise InputError(
            f"{source} was extracted at {manifest.backend.label}, not {asked.label}; pass `precision` "
            f"{manifest.precision} and `runtime` {manifest.runtime} (an extraction folder is measured as it is)"
        )


def too_few_message(where: str, counts: dict[str, int], min_contexts: int) -> str:
    best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    shown = ", ".join(f"{w!r} {n}" for w, n in best) or "none"
    lower = max(2, min(best[-1][1], min_contexts - 1)) if best else 2
    return (
        f"{where} has {min_contexts} contexts (sentences); the best: {shown}; "
        f"try `min_contexts` {lower} or a larger corpus"
    )


# --- a corpus by name or path: choose the words, extract them into the cache ------------------


@dataclass(frozen=True)
class WordChoice:
    """The counting pass: the chosen words, their context counts, and the sampled sentences."""

    words: dict[str, int]
    eligible: int
    best: dict[str, int]  # the most-context words overall (for error messages)
    sentences: list[str]
    scanned: int

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def choose_words(
    source: str,
    min_contexts: int,
    max_words: int,
    n_sentences: int,
    seed: int = 0,
    progress: Progress | None = None,
) -> WordChoice:
    """One pass over ``source``: words by :data:`WORD_RULE`, and a seeded sample of sentences."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    contexts: Counter[str] = Counter()
    stats = ExtractStats()
    rng = random.Random(seed)
    sample: list[str] = []
    seen = 0  # sentences eligible for the sample (reservoir sampling)
    for sentence in (s for doc in read_corpus(source, stats.read) for s in document_sentences(doc.pieces)):
        stats.sentences += 1
        words = _words(sentence)
        contexts.update({w for w in words if len(w) >= 3 and w not in ENGLISH_STOP_WORDS})
        if 3 <= len(words) <= MAX_SENTENCE_WORDS:
            seen += 1
            if len(sample) < n_sentences:
                sample.append(sentence)
            elif (j := rng.randrange(seen)) < n_sentences:
                sample[j] = sentence
        if progress and stats.sentences % 500 == 0:
            progress("counting words", stats)
    if stats.sentences == 0:
        raise InputError(f"corpus {source!r} is empty: no sentence to read")
    eligible = sorted(w for w, n in contexts.items() if n >= min_contexts)
    chosen = (
        sorted(random.Random(f"{seed}|words").sample(eligible, max_words)) if len(eligible) > max_words else eligible
    )
    best = dict(sorted(contexts.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
    return WordChoice({w: contexts[w] for w in chosen}, len(eligible), best, sample, stats.sentences)


def cache_folder(source: str, min_contexts: int, max_words: int, n_sentences: int, seed: int) -> Path:
    """The job's folder under the contextlens cache: one per corpus (and its files' size and time) and rule."""
    from contextlens.core.disk_cache import cache_key
    from contextlens.core.resources import cache_dir

    name = describe(source)
    stamp: object = name
    if name not in INSTALLED:
        path = Path(name)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        stamp = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files if p.exists()]
    key = cache_key(CHOICE_VERSION, name, stamp, min_contexts, max_words, n_sentences, seed)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", Path(name).name).strip("-")[:40] or "corpus"
    return cache_dir() / "corpus-contextuality" / f"{slug}-{key[:16]}"


def contextuality_of_corpus(
    source: str,
    model: str | None = None,
    min_contexts: int = 50,
    max_words: int = 100,
    n_sentences: int = 200,
    seed: int = 0,
    progress: Progress | None = None,
    precision: str = "fp32",
    threads: int | None = None,
    runtime: str = "torch",
) -> ctx.ContextualityResult:
    """Choose the words of ``source``, extract them (and the sampled sentences) into the cache, measure.

    ``source`` may also be an extraction folder (``corpus extract``): it is measured as it is, with
    its own model (``model`` None, or the folder's; another is refused). ``model`` None on a corpus:
    mpnet. Every step is reused when its output is in the cache: the counting pass
    (``choice.json``) and each extraction (a complete folder is not opened again, so nothing is
    re-encoded). The cache holds one extraction per model, precision and runtime.
    """
    from contextlens.core.onnx_runtime import check_runtime
    from contextlens.core.precision import check_precision

    precision, runtime = check_precision(precision), check_runtime(runtime)
    check_min_contexts(min_contexts)
    extracted = extraction_folder(source)
    if extracted is not None:  # the same test the CLI makes
        check_folder_backend(extracted, source, model, precision, runtime)
        return corpus_contextuality(Path(source).expanduser(), min_contexts, seed)
    model = model or DEFAULT_CONTEXTUAL
    if max_words < 1 or n_sentences < 1:
        raise InputError("`max_words` and `n_sentences` must be at least 1")
    check_readable(source)  # a missing, unreadable or empty corpus: one line, before counting
    folder = cache_folder(source, min_contexts, max_words, n_sentences, seed)
    choice = _cached_choice(folder, source, min_contexts, max_words, n_sentences, seed, progress)
    # torch fp32 folders keep their old names: minilm, minilm-int8, minilm-onnx, minilm-onnx-int8
    space = "-".join([model] + [runtime] * (runtime != "torch") + [precision] * (precision != "fp32"))
    jobs = (
        (f"words-{space}", source, sorted(choice.words)),
        (f"sentences-{space}", str(folder / "sentences.txt"), sorted({w for s in choice.sentences for w in _words(s)})),
    )
    job = {"model": model, "precision": precision, "runtime": runtime, "threads": threads}
    reused = [sub for sub, corpus, targets in jobs if _extract_once(folder / sub, corpus, targets, job, progress)]
    result = corpus_contextuality(
        folder / f"words-{space}", min_contexts, seed, sentences=folder / f"sentences-{space}"
    )
    result.meta["corpus"] = describe(source)
    result.meta["word_rule"] = WORD_RULE
    result.meta["choice"] = {
        "sentences_scanned": choice.scanned,
        "eligible_words": choice.eligible,
        "max_words": max_words,
        "sampled_sentences": len(choice.sentences),
        "seed": seed,
    }
    result.meta["cache"] = {"folder": str(folder), "reused": reused}
    return result


def _cached_choice(
    folder: Path, source: str, min_contexts: int, max_words: int, n_sentences: int, seed: int, progress: Progress | None
) -> WordChoice:
    """The counting pass, read from ``folder`` when it ran before; its sentences written beside it."""
    from contextlens.core.atomic_files import write_text as atomic_write_text

    choice_file = folder / "choice.json"
    if choice_file.is_file():
        choice = WordChoice(**json.loads(choice_file.read_text()))
    else:
        choice = choose_words(source, min_contexts, max_words, n_sentences, seed, progress)
        atomic_write_text(choice_file, json.dumps(choice.to_dict(), indent=1) + "\n")
    if not choice.words:
        raise InputError(too_few_message(f"no content word of {source!r}", choice.best, min_contexts))
    sentences_file = folder / "sentences.txt"
    if not sentences_file.is_file():
        atomic_write_text(sentences_file, "".join(" ".join(s.split()) + "\n" for s in choice.sentences))
    return choice


def _extract_once(out: Path, corpus: str, targets: list[str], job: dict, progress: Progress | None) -> bool:
    """Extract ``targets`` of ``corpus`` into ``out`` unless a complete extraction is there; whether it
    was. ``job``: the model, precision, runtime and threads of :func:`extract_corpus`."""
    existing = read_manifest(out)
    if existing is not None and existing.complete:
        return True
    label = out.name.split("-")[0]

    def step(stats: ExtractStats) -> None:
        if progress:
            progress(f"extracting {label}", stats)

    extract_corpus(corpus, targets, out, **job, progress=step)
    return False
