"""`contextlens eval static`: static models beside their teachers - similarity, word in context,
Lee retrieval, encode speed and memory - in one table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from contextlens.cli.common import JsonOpt, PlotOpt, ThreadsOpt, console, fmt, note, print_json
from contextlens.cli.eval import QuickOpt, eval_app, plot_after, size_name

if TYPE_CHECKING:  # numpy comes with it: `--help` must not pay for it
    from contextlens.analyses.benchmarks.result import BenchmarkResult
    from contextlens.analyses.static.evaluate import StaticEvalResult


def _with_coverage(result: BenchmarkResult, system: str, task: str) -> str:
    """Spearman, then how its out-of-vocabulary pairs were handled: ``0.223 (35 skipped)``, ``0.161
    (35 composed)`` (a distilled model skips a word none of whose pieces it kept); a teacher has no
    vocabulary to miss."""
    rho = result.value(system=system, task=task, metric="spearman")
    if rho is None:
        return "-"
    oov = result.value(system=system, task=task, metric="oov_pairs")
    skipped = result.value(system=system, task=task, metric="skipped_pairs")
    if not oov:
        return fmt(rho, 3)
    how = [f"{int(skipped)} skipped"] if skipped else []
    how += [f"{int(oov - skipped)} composed"] if oov - (skipped or 0) else []
    return f"{fmt(rho, 3)} ({', '.join(how)})"


def _common(result: BenchmarkResult, system: str, task: str) -> str:
    return fmt(result.value(system=system, task=task, metric="spearman_common"), 3)


def _wic(result: BenchmarkResult, system: str) -> str:
    rows = result.select(system=system, task="wic", metric="accuracy")
    if not rows:
        return "-"
    layer = rows[0].get("layer")
    return fmt(rows[0]["value"], 3) + (f" (L{layer})" if layer is not None else "")


@eval_app.command("static")
def static_cmd(
    static: Annotated[
        list[str] | None,
        typer.Option("--static", "-s", help="A static model (repeat): glove-50d, a made one, a file."),
    ] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", "-m", help="A contextual teacher (repeat); default minilm.")
    ] = None,
    no_wic_teacher: Annotated[
        bool, typer.Option("--no-wic-teacher", help="Skip the teachers' WiC (it encodes the benchmark suite).")
    ] = False,
    quick: QuickOpt = False,
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Static models vs their teachers: what a static model loses (word in context) and keeps."""
    from contextlens.cli.common import load_model, model_choice
    from contextlens.core.arguments import distinct
    from contextlens.core.static_models import load_static

    distinct(model or ["minilm"], "--model", "teacher")  # a repeated teacher would repeat its rows
    chosen = [model_choice(name) for name in model or ["minilm"]]  # a wrong teacher fails without torch
    statics = [load_static(s) for s in (static or ["glove-50d"])]  # a wrong name fails before any weights
    teachers = [load_model(one, threads) for one in chosen]
    from contextlens.analyses.static.evaluate import evaluate_static, kept_share
    from contextlens.cli.params import as_flags

    with as_flags(statics="--static", teachers="--model"), console.status("encoding..."):
        result = evaluate_static(statics, teachers, size_name(quick), wic_teachers=not no_wic_teacher)
    from contextlens.reports.static_figures import static_figure

    with plot_after(result, plot, static_figure):
        if json_out:
            print_json(result.to_dict())
        else:
            _table(result)
    if json_out:
        return
    for s in statics:
        teacher = s.provenance.get("teacher")
        if teacher in [t.name for t in teachers]:
            kept = kept_share(result, s.name, str(teacher))
            note(f"{s.name} keeps of {teacher}: " + ", ".join(f"{k} {v:.0%}" for k, v in kept.items()))
    note(result.wic_note)


def _table(result: StaticEvalResult) -> None:
    table = Table(title=f"static models vs teachers ({result.size})")
    for col, just in (("system", "left"), ("kind", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    n_simlex, n_ws = (c.common if (c := result.common_pairs.get(ds)) else "" for ds in ("simlex999", "wordsim353"))
    for col in ("SimLex", f"SimLex, {n_simlex} common", "WS353", f"WS353, {n_ws} common"):
        table.add_column(col, justify="right")
    for col in ("WiC", "Lee rho", "nDCG@10", "docs/s", "words/s", "MB"):
        table.add_column(col, justify="right")
    for system, kind in result.systems.items():
        speed = result.value(system=system, task="speed", metric="documents_per_s")
        words = result.value(system=system, task="speed", metric="words_per_s")
        nbytes = result.value(system=system, task="memory", metric="bytes")
        table.add_row(
            system,
            kind,
            _with_coverage(result, system, "simlex999"),
            _common(result, system, "simlex999"),
            _with_coverage(result, system, "wordsim353"),
            _common(result, system, "wordsim353"),
            _wic(result, system),
            fmt(result.value(system=system, task="lee", metric="spearman"), 3),
            fmt(result.value(system=system, task="lee", metric="ndcg@10"), 3),
            "-" if speed is None else f"{speed:,.1f}",
            "-" if words is None else f"{words:,.0f}",
            "-" if nbytes is None else f"{nbytes / 1e6:,.0f}",
        )
    if console.is_terminal:
        console.print(table)
    else:  # piped output defaults to 80 columns, too narrow for this table
        Console(emoji=False, highlight=False, width=170).print(table)
    lee = result.lee
    note(
        "SimLex / WS353: Spearman over the pairs each model scores, with its pairs out of vocabulary skipped "
        "(word2vec, GloVe) or composed (fastText from n-grams, a distilled model from word pieces); 'common': "
        "over the pairs every static model covers, so skipping is not rewarded; WiC: the teacher's layer (L) "
        f"chosen on dev; speed: the {lee.timed_documents} Lee documents ({lee.words:,} words) encoded one "
        f"system after another in this run, {result.threads} torch thread(s); MB: vectors or weights"
    )
