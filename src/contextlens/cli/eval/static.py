"""`contextlens eval static`: static models beside their teachers - similarity, word in context,
Lee retrieval, encode speed and memory - in one table."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.cli.common import JsonOpt, PlotOpt, ThreadsOpt, console, contextual_option, fmt, note, print_json
from contextlens.cli.eval import QuickOpt, eval_app, plot_after, size_name


def _with_coverage(result: BenchmarkResult, system: str, task: str) -> str:
    rho = result.value(system=system, task=task, metric="spearman")
    cov = result.value(system=system, task=task, metric="coverage")
    if rho is None:
        return "-"
    return fmt(rho, 3) if cov is None or cov == 1 else f"{fmt(rho, 3)} ({cov:.0%})"


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
    from contextlens.cli.common import check_model
    from contextlens.core.static_models import load_static

    for name in model or ["minilm"]:
        check_model(name)  # a wrong teacher fails without torch
    statics = [load_static(s) for s in (static or ["glove-50d"])]  # a wrong name fails before any weights
    teachers = [contextual_option(m, threads=threads) for m in (model or ["minilm"])]
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
    note(result.meta["wic_note"])


def _table(result: BenchmarkResult) -> None:
    table = Table(title=f"static models vs teachers ({result.meta['size']})")
    for col, just in (("system", "left"), ("kind", "left"), ("SimLex", "right"), ("WS353", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for col in ("WiC", "Lee rho", "nDCG@10", "docs/s", "MB"):
        table.add_column(col, justify="right")
    for system in dict.fromkeys(r["system"] for r in result.rows):
        kind = next(r["kind"] for r in result.rows if r["system"] == system)
        speed = result.value(system=system, task="speed", metric="documents_per_s")
        nbytes = result.value(system=system, task="memory", metric="bytes")
        table.add_row(
            system,
            kind,
            _with_coverage(result, system, "simlex999"),
            _with_coverage(result, system, "wordsim353"),
            fmt(result.value(system=system, task="wic", metric="accuracy"), 3),
            fmt(result.value(system=system, task="lee", metric="spearman"), 3),
            fmt(result.value(system=system, task="lee", metric="ndcg@10"), 3),
            "-" if speed is None else f"{speed:,.1f}",
            "-" if nbytes is None else f"{nbytes / 1e6:,.0f}",
        )
    console.print(table)
    lee = result.meta["lee"]
    note(
        "SimLex / WS353: Spearman (share of pairs scored, where not all; --json also has spearman_common, on "
        f"the pairs every static model scores); speed: the {lee['timed_documents']} Lee documents "
        f"({lee['words']:,} words) encoded one system after another in this run, {result.meta['threads']} "
        "torch thread(s); MB: vectors or weights"
    )
