"""`contextlens eval contextuality`: Ethayarajh (2019) per layer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    MODEL_NAMES,
    DeviceOpt,
    JsonOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    console,
    fmt,
    load_model,
    model_choice,
    note,
    plain_lines_too,
    print_json,
    status_line,
)
from contextlens.cli.eval import (
    QuickOpt,
    chosen_models,
    eval_app,
    eval_output,
    eval_results,
    lazy,
    size_name,
    timing_footer,
)
from contextlens.cli.params import as_flags
from contextlens.errors import InputError

if TYPE_CHECKING:  # numpy comes with it: `--help` must not pay for it
    from contextlens.analyses.benchmarks.contextuality import ContextualityResult

CORPUS_FLAGS = {
    "source": "--corpus",
    "model": "--model",
    "precision": "--precision",
    "runtime": "--runtime",
    "min_contexts": "--min-contexts",
    "max_words": "--max-words",
    "n_sentences": "--sentences",
    "threads": "--threads",
}


@eval_app.command("contextuality")
def contextuality_cmd(  # noqa: PLR0913 - a command: one parameter per option
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help=f"Contextual model: {MODEL_NAMES}, a folder or HF id; "
            "with an extraction folder as --corpus: the folder's own model.",
        ),
    ] = None,
    also: Annotated[
        list[str] | None, typer.Option("--also", help="Another model to measure and draw on the same figure.")
    ] = None,
    quick: QuickOpt = False,
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus",
            help="enwiki, lee, wordnet, a text file/folder (words chosen and extracted into the cache), "
            "or an extraction folder (`corpus extract`).",
        ),
    ] = None,
    min_contexts: Annotated[
        int | None,
        typer.Option("--min-contexts", help="With --corpus: sentences a word needs to be measured (default 50)."),
    ] = None,
    max_words: Annotated[
        int | None,
        typer.Option("--max-words", help="With --corpus NAME/PATH: at most this many words (seeded sample; 100)."),
    ] = None,
    sentences: Annotated[
        int | None,
        typer.Option("--sentences", help="With --corpus NAME/PATH: sampled sentences for intra-sentence (200)."),
    ] = None,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Ethayarajh (2019) per layer: anisotropy, self-similarity, intra-sentence similarity, MEV."""
    _check_corpus_flags(corpus, plot, min_contexts, max_words, sentences, device)
    if corpus is not None:
        ask = CorpusAsk(
            50 if min_contexts is None else min_contexts, 100 if max_words is None else max_words,
            200 if sentences is None else sentences, precision, threads, runtime,
        )  # fmt: skip
        _corpus_command(corpus, [model, *(also or [])], ask, json_out)
        return
    run = lazy("contextlens.analyses.benchmarks.suite", "run_contextuality")
    results = eval_results(
        chosen_models([model or DEFAULT_MODEL, *(also or [])], precision, runtime, device), threads,
        lambda loaded, progress: run()(loaded, size_name(quick), progress),
    )  # fmt: skip
    combine = lazy("contextlens.analyses.benchmarks.contextuality", "combine")
    eval_output(
        results, plot, lazy("contextlens.reports.benchmark_figures", "contextuality_figure"), json_out,
        lambda: combine()(results).to_dict(), lambda: _contextuality_tables(results),
    )  # fmt: skip


@dataclass(frozen=True)
class CorpusAsk:
    """What `--corpus` runs with: the contexts a word needs, at most how many words, the sentences
    sampled for intra-sentence similarity, and the model's precision, threads and runtime."""

    min_contexts: int
    max_words: int
    sentences: int
    precision: str
    threads: int | None
    runtime: str


def _corpus_on_the_cpu(device: str) -> None:
    """--corpus extracts through the corpus engine, which runs on the CPU for now: a GPU asked for
    by name is refused rather than quietly not used."""
    from contextlens.core.devices import check_device_choice

    if check_device_choice(device) not in ("auto", "cpu"):
        raise InputError(f"--device {device} with --corpus: corpus extraction runs on the CPU for now; drop --device")


def _check_corpus_flags(
    corpus: str | None,
    plot: Path | None,
    min_contexts: int | None,
    max_words: int | None,
    sentences: int | None,
    device: str = "auto",
) -> None:
    """The corpus options only with --corpus; no --plot with it (the figure assumes WordNet
    examples), nor a GPU named (corpus extraction runs on the CPU for now)."""
    if corpus is not None:
        _corpus_on_the_cpu(device)
    for flag, value in (("--min-contexts", min_contexts), ("--max-words", max_words), ("--sentences", sentences)):
        if corpus is None and value is not None:
            raise InputError(f"{flag} is for --corpus (the WordNet benchmark has its own contexts); drop it")
    if corpus is not None and plot is not None:
        raise InputError("--plot is not drawn with --corpus yet (the figure assumes WordNet examples); drop it")


def _corpus_command(corpus: str, models: list[str | None], ask: CorpusAsk, json_out: bool) -> None:
    """Each model measured on the corpus; one combined JSON document (warnings on stderr) or a table each."""
    corpus_results = [_corpus_result(corpus, name, ask) for name in models]
    if json_out:
        from contextlens.analyses.benchmarks.contextuality import combine

        print_json(combine(corpus_results).to_dict())
        for result in corpus_results:
            warn_of(result)
    else:
        for result in corpus_results:
            _corpus_table(result)


def _contextuality_tables(results: list[ContextualityResult]) -> None:
    from contextlens.analyses.benchmarks.contextuality import table_rows

    for result in results:
        rows = table_rows(result)
        centred = _contextuality_table(result, rows, f"how contextual? (Ethayarajh 2019) — {result.model}")
        if centred:
            _mev_note()
        c = result.counts
        console.print(
            f"{c.words} words x up to {c.max_contexts_per_word} contexts ({c.word_occurrences} occurrences); "
            f"{c.sentences} sentences ({c.sentence_words} words) for intra-sentence similarity. "
            "Adjusted = raw minus the anisotropy baseline (MEV: minus the MEV of random words)."
        )
        timing_footer(result)
    for metric, finding in results[0].paper_findings.items():
        console.print(f"[dim]paper ({metric}): {finding}[/dim]")


def _contextuality_table(result: ContextualityResult, rows: list[dict], title: str) -> bool:
    """The per-layer table (the MEV pca and MEV paper columns where the result has them), then the
    result's warnings (what its data cannot support); True when it has the centred MEV."""
    from contextlens.analyses.benchmarks.contextuality import CENTRED_METRICS, PAPER_MEV_METRICS, TABLE_METRICS

    centred = bool(rows) and all(m in rows[0] for m in CENTRED_METRICS)
    paper = bool(rows) and all(m in rows[0] for m in PAPER_MEV_METRICS)
    table = Table(title=title)
    headers = ("layer", "anisotropy", "self-sim", "adjusted", "intra-sent", "adjusted", "MEV raw", "adjusted")
    headers += ("MEV pca", "adjusted") * centred + ("MEV paper", "adjusted") * paper
    for col in headers:
        table.add_column(col, justify="right")
    metrics = TABLE_METRICS + CENTRED_METRICS * centred + PAPER_MEV_METRICS * paper
    for r in rows:
        table.add_row(str(r["layer"]), *(fmt(r.get(m), 3) for m in metrics))
    console.print(table)
    warn_of(result)
    return centred


def warn_of(result: ContextualityResult) -> None:
    """Each of the result's warnings as one line on stderr (also under --json: stdout stays the JSON)."""
    for warning in result.warnings:
        note(f"warning: {warning}")


def _mev_note() -> None:
    """What the MEV columns are (the WordNet and the corpus table)."""
    console.print(
        "[dim]MEV paper = what the paper's released per-word files hold (its analyze.py @84d2f97: "
        "TruncatedSVD's ratio, the variance along the uncentred first direction over the centred variance; "
        "its BERT means are 0.020-0.040 at layers 3-12); adjusted: minus random words' matrices of the same "
        "sizes. MEV pca = a PCA of the word's occurrences centred on their mean (at least 1/(n-1) with n "
        "contexts); MEV raw = sigma_1^2/sum sigma^2 of the uncentred matrix, which counts the shared mean "
        "direction as explained (at least 1/n).[/dim]",
        soft_wrap=True,
    )


def _corpus_result(corpus: str, model: str | None, ask: CorpusAsk) -> ContextualityResult:
    """Contextuality on a corpus (words chosen and extracted, cached) or an extraction folder, with a spinner."""
    from contextlens.analyses.corpus.contextuality import contextuality_of_corpus, extraction_folder

    runtime = ask.runtime
    with as_flags(**CORPUS_FLAGS):
        if extraction_folder(corpus) is None:  # a corpus, not a finished extraction: a model runs
            model = model or DEFAULT_MODEL
            chosen = model_choice(model, ask.precision, ask.runtime)  # resolved once (auto too), passed down
            load_model(chosen, ask.threads)  # threads set, drift shown
            runtime = chosen.backend.runtime

    progress, live = status_line(f"{model or 'its model'}: {corpus}")
    show = plain_lines_too(live)  # a stderr that is no terminal (a log) gets a plain line now and then

    def update(stage: str, s) -> None:
        rate = s.sentences / max(s.seconds, 1e-9)
        found = f", {s.occurrences:,} occurrences, {s.rows_written:,} rows written" if stage != "counting words" else ""
        show(f"{model or 'its model'}: {stage}: {s.sentences:,} sentences{found}, {rate:,.0f} sentences/s")

    with progress, as_flags(**CORPUS_FLAGS):
        return contextuality_of_corpus(
            corpus,
            model,
            ask.min_contexts,
            ask.max_words,
            ask.sentences,
            progress=update,
            precision=ask.precision,
            threads=ask.threads,
            runtime=runtime,
        )


def _corpus_table(result: ContextualityResult) -> None:
    from contextlens.analyses.benchmarks.contextuality import table_rows

    c = result.counts
    rows = table_rows(result)
    centred = _contextuality_table(result, rows, f"how contextual on a corpus? (Ethayarajh 2019) — {result.model}")
    if centred:
        _mev_note()
    per = c.contexts_per_word
    console.print(
        f"{c.words} words with >= {c.min_contexts} contexts (min {per.min}, median {per.median}, "
        f"max {per.max}; {c.word_occurrences} occurrences) from {result.corpus}; "
        f"intra-sentence: {c.sentences} sentences, {result.intra_sentence_words}.",
        soft_wrap=True,
    )
    if result.word_rule is not None:
        ch = result.choice
        console.print(
            f"[dim]words: {ch.eligible_words} qualify in {ch.sentences_scanned:,} sentences, "
            f"{c.words} measured ({result.word_rule}); cache {result.cache_folder}[/dim]",
            soft_wrap=True,
        )
    console.print(f"[dim]paper (MEV): {result.paper_findings['mev']}[/dim]", soft_wrap=True)
