"""`contextlens capacity`: memory and disk for N vectors in a FAISS index, or in PostgreSQL with pgvector."""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer
from rich.table import Table

from contextlens.cli import app
from contextlens.cli.common import JsonOpt, console, print_json
from contextlens.cli.index import DsnOpt, EngineOpt, IndexTypeOpt, NlistOpt, PqMOpt
from contextlens.errors import InputError


@app.command("capacity")
def capacity_cmd(
    count: Annotated[int, typer.Option("--count", "-n", help="Number of vectors.")],
    dim: Annotated[int, typer.Option("--dim", "-d", help="Dimensions per vector.")],
    dtype: Annotated[
        str | None, typer.Option("--dtype", help="float32, float16, int8 or binary (default: the index's own).")
    ] = None,
    index: IndexTypeOpt = "flat",
    m: Annotated[int | None, typer.Option("--m", help="HNSW: neighbors per node (default 32; pgvector 16).")] = None,
    nlist: NlistOpt = None,
    pq_m: PqMOpt = None,
    nbits: Annotated[int, typer.Option("--nbits", help="IVF-PQ: bits per sub-code.")] = 8,
    measure: Annotated[bool, typer.Option("--measure", help="Also build the real FAISS index and measure it.")] = False,
    max_measure: Annotated[
        int, typer.Option(help="Build on at most this many vectors; above it, two samples are extrapolated.")
    ] = 100_000,
    engine: EngineOpt = "faiss",
    dsn: DsnOpt = None,
    lists: Annotated[int | None, typer.Option(help="pgvector IVFFlat: inverted lists (default 100).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Memory and disk for N vectors in a FAISS index or pgvector: the formula, and with --measure the real size."""
    from contextlens.analyses.search.capacity import estimate
    from contextlens.analyses.search.capacity import measure as measure_size
    from contextlens.analyses.search.index_config import DEFAULT_PARAMS, IndexConfig
    from contextlens.analyses.search.pg_index import check_engine

    if check_engine(engine) == "pgvector":
        _pgvector_capacity(count, dim, dtype, index, m, lists, measure, dsn, json_out)
        return
    if dsn is not None or lists is not None:
        raise InputError("--dsn and --lists are for --engine pgvector")
    if index not in DEFAULT_PARAMS:
        raise InputError(f"unknown --index {index!r}; use one of {', '.join(DEFAULT_PARAMS)}")
    given = {"m": 32 if m is None else m, "nlist": nlist, "pq_m": pq_m, "nbits": nbits}
    config = IndexConfig(index, {k: v for k, v in given.items() if k in DEFAULT_PARAMS[index]}, dtype)
    if measure:
        with contextlib.nullcontext() if json_out else console.status("building the FAISS index to measure it..."):
            result = measure_size(config, count, dim, max_measure=max_measure)
    else:
        result = estimate(config, count, dim)
    if json_out:
        print_json(result.to_dict())
        return
    extra = ", ".join(f"{k}={v}" for k, v in result.params.items())
    console.print(
        f"[bold]{result.count:,}[/bold] vectors x {result.dim} dims, {result.dtype}, "
        f"[bold]{result.index}[/bold] index{f' ({extra})' if extra else ''}"
    )
    table = Table(show_header=True)
    table.add_column("part")
    table.add_column("bytes", justify="right")
    table.add_column("", justify="right")
    for part, size in result.parts.items():
        table.add_row(part, f"{size:,}", human_bytes(size))
    table.add_row("[bold]total (formula)[/bold]", f"[bold]{result.bytes:,}[/bold]", human_bytes(result.bytes))
    if result.measured_bytes is not None:
        err = f"{100 * result.relative_error:+.2f}%"
        table.add_row(
            "measured (faiss.serialize_index)", f"{result.measured_bytes:,}", human_bytes(result.measured_bytes)
        )
        table.add_row("formula vs measured", err, "")
    console.print(table)
    console.print(f"formula: {result.formula}")
    console.print("[dim]memory ~= disk: FAISS keeps the same arrays in RAM that it serializes[/dim]")
    if result.measured_on:
        console.print(f"[dim]measured: {result.measured_on} in {result.measure_seconds:.1f} s[/dim]")


def _pgvector_capacity(
    count: int, dim: int, dtype: str | None, index: str, m: int | None, lists: int | None, measure: bool,
    dsn: str | None, json_out: bool,
) -> None:  # fmt: skip
    from contextlens.analyses.search.pg_capacity import pg_estimate, pg_measure
    from contextlens.analyses.search.pg_index import PgIndexConfig

    given = {"hnsw": {"m": m}, "ivfflat": {"lists": lists}}.get(index, {})
    params = {k: v for k, v in given.items() if v is not None}
    config = PgIndexConfig(index, params, dtype or "float32")
    if measure:
        with contextlib.nullcontext() if json_out else console.status("building the table and index in PostgreSQL..."):
            result = pg_measure(config, count, dim, dsn=dsn)
    else:
        result = pg_estimate(config, count, dim)
    if json_out:
        print_json(result.to_dict())
        return
    extra = ", ".join(f"{k}={v}" for k, v in result.params.items())
    console.print(
        f"[bold]{result.count:,}[/bold] vectors x {result.dim} dims, {result.dtype} "
        f"({config.column(dim)}), pgvector [bold]{result.index}[/bold]{f' ({extra})' if extra else ''}"
    )
    measured = result.measured or {}
    table = Table(show_header=True)
    table.add_column("part")
    table.add_column("predicted bytes", justify="right")
    table.add_column("", justify="right")
    if measure:
        table.add_column("measured bytes", justify="right")
        table.add_column("measured by")
    rows = [(f"index ({result.index_pages:,} pages)", result.index_bytes, measured.get("index_bytes"),
             "pg_relation_size(index)")]  # fmt: skip
    rows += [(f"table: {part}", size, None, "") for part, size in result.table.items()]
    rows.append(("table (heap + TOAST)", result.table_bytes, measured.get("table_bytes"), "pg_table_size"))
    total = result.table_bytes + result.index_bytes
    rows.append(("[bold]total[/bold]", total, measured.get("total_bytes"), "pg_total_relation_size"))
    if result.build_memory_bytes is not None:
        rows.append(("build memory (maintenance_work_mem)", result.build_memory_bytes,
                     measured.get("build_memory_bytes"), "NOTICE point of a smaller budget"))  # fmt: skip
    for part, size, got, how in rows:
        cells = [part, f"{size:,}", human_bytes(size)]
        if measure:
            cells += [f"{got:,}" if got is not None else "", how if got is not None else ""]
        table.add_row(*cells)
    console.print(table)
    console.print(f"index: {result.index_formula}" + ("" if result.exact else " [dim](an estimate)[/dim]"))
    if result.build_memory_formula:
        console.print(f"build memory: {result.build_memory_formula}")
    for note in result.notes:
        console.print(f"[dim]{note}[/dim]")
    if measured.get("memory_probe_notices"):
        console.print(f"[dim]with maintenance_work_mem = {measured['memory_probe_kb']:,} kB: "
                      f"{'; '.join(measured['memory_probe_notices'])}[/dim]")  # fmt: skip


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"
