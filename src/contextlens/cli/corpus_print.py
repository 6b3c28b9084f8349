"""How `contextlens corpus` prints its results: the corpora, an extraction, a price, a search, an export.

Printing only: every number comes computed from :mod:`contextlens.analyses.corpus`; a module of its
own so that :mod:`contextlens.cli.corpus` holds the commands and nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import console, note, print_json

if TYPE_CHECKING:
    from contextlens.analyses.corpus.catalogue import CorpusInfo
    from contextlens.analyses.corpus.estimate import ExtractEstimate
    from contextlens.analyses.corpus.extract import ExtractResult, ExtractStats
    from contextlens.analyses.corpus.occurrence_search import OccurrenceSearch
    from contextlens.analyses.corpus.projector import ProjectorExport


def print_corpora(infos: list[CorpusInfo], json_out: bool) -> None:
    """The installed corpora with their sizes, and what else can be read."""
    if json_out:
        print_json([i.to_dict() for i in infos])
        return
    table = Table(title="installed corpora")
    for col, just in (
        ("name", "left"),
        ("documents", "right"),
        ("sentences", "right"),
        ("words", "right"),
        ("what", "left"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for i in infos:
        if i.installed:
            table.add_row(i.name, f"{i.documents:,}", f"{i.sentences:,}", f"{i.words:,}", i.description)
        else:
            table.add_row(i.name, "-", "-", "-", f"[red]not installed[/red]: {i.problem}")
    console.print(table)
    console.print(
        "[dim]also readable: a text file (a document per paragraph: blank lines separate them, wrapped lines are "
        "joined; --line-breaks lines: per line), a folder of .txt, JSONL with 'text', Parquet with 'text'; "
        ".gz/.bz2 transparently[/dim]"
    )


def print_extraction(result: ExtractResult, json_out: bool) -> None:
    """An extraction's rows, shards and time, or that the folder was already complete."""
    m, s = result.manifest, result.stats
    if json_out:
        print_json(
            {
                "folder": str(result.folder),
                "already_complete": result.already_complete,
                "manifest": m.to_dict(),
                "seconds": round(s.seconds, 2),
            }
        )
        return
    if result.already_complete:
        console.print(
            f"{result.folder}: already complete ({m.counts['rows']:,} rows in {m.counts['shards']} shards); "
            "nothing to do"
        )
        return
    per = ", ".join(f"{w} {n:,}" for w, n in m.counts["per_target"].items())  # type: ignore[union-attr]
    console.print(
        f"{m.counts['rows']:,} rows ({per}) from {s.sentences:,} sentences of {s.paragraphs_split:,} paragraphs "
        f"(of {s.paragraphs:,} read; the rest held no target) into {result.folder} "
        f"({m.counts['shards']} shards, {s.chunks_skipped} were already there) in {s.seconds:.1f} s"
    )
    if m.forms:
        top = ", ".join(f"{f} {n:,}" for f, n in list(m.counts["per_form"].items())[:12])  # type: ignore[union-attr]
        console.print(f"forms matched: {top}")
    console.print(
        f"[dim]model {m.model} ({m.backend.label}), layers {m.layers}, {m.pooling} pooling, {m.dtype}"
        f"{', inflected forms' if m.forms else ''}[/dim]"
    )
    if s.read.skipped:
        note(f"skipped {s.read.skipped} non-UTF-8 line(s), first at {', '.join(s.read.skipped_where)}")
    long = s.read.long_message()
    if long:
        note(long.replace("line breaks `lines`", "--line-breaks lines"))


def scan_line(s: ExtractStats) -> str:
    """One progress line of a running extraction."""
    rate = s.paragraphs / max(s.seconds, 1e-9)
    return (
        f"{s.paragraphs:,} paragraphs scanned ({s.paragraphs_skipped:,} without a target, not split), "
        f"{s.occurrences:,} occurrences, {s.rows_written:,} rows written, "
        f"{s.chunks_skipped} shards already done, {rate:,.0f} paragraphs/s"
    )


def print_price(e: ExtractEstimate, json_out: bool) -> None:
    """A job's price (analyses/corpus/estimate.py), every number with its basis."""
    if json_out:
        print_json(e.to_dict())
        return
    sample, counted, f = e.sample, e.counts_in_sample, e.forward
    scaled = "" if sample["whole"] else f" (the sample's {counted['occurrences']:,} x {sample['factor']:.3g})"
    per = ", ".join(f"{w} {n:,}" for w, n in e.per_target.items())
    console.print(f"sample: {escape(sample['basis'])}")
    console.print(
        f"  read {counted['paragraphs']:,} paragraphs, {counted['paragraphs_split']:,} held a target "
        f"({counted['sentences_split']:,} sentences split), in {counted['scan_seconds']:.1f} s"
    )
    console.print(f"occurrences expected: {e.occurrences:,}{scaled}: {per}")
    console.print(
        f"shards: {e.rows:,} rows x {e.row_bytes:,} bytes = {e.shard_bytes / 1e6:,.1f} MB "
        f"[dim]({escape(e.basis['row_bytes'])})[/dim]"
    )
    if f["seconds_per_padded_token"] is None:
        console.print(f"time: nothing to encode in the sample; the read alone {e.seconds_scan:.1f} s")
        return
    _print_price_time(e)


def _print_price_time(e: ExtractEstimate) -> None:
    f = e.forward
    on = f"{f['device']}, {f['threads']} threads" if f.get("device", "cpu") == "cpu" else f["device"]
    console.print(
        f"time here: {e.seconds_here:,.0f} s (measured here on {on}) = read and scan {e.seconds_scan:,.1f} s + "
        f"forward {e.seconds_forward:,.0f} s ({e.occurrences:,} occurrences in about {f['job_sentences']:,.0f} "
        f"sentences, each encoded once: {f['job_padded_tokens']:,.0f} tokens in the job's batches, padding included, "
        f"at {f['seconds_per_padded_token'] * 1e6:,.0f} us a token, measured on {f['sentences']} of the sample's "
        f"sentences: {f['model']} {f['precision']} {f['runtime']}); model load not counted"
    )
    for n, seconds in e.actors.items():
        if n > 1:
            console.print(
                f"on {n} Ray actors like this machine: {seconds:,.0f} s [dim]({escape(e.basis['actors'])})[/dim]"
            )
    if e.rate is not None:
        r = e.rate
        console.print(
            f"at {r['tokens_per_s']:,.0f} tokens/s (stated, not measured here): {r['seconds']:,.0f} s for "
            f"{r['tokens']:,.0f} tokens [dim]({escape(e.basis['rate'])})[/dim]"
        )
        for n, seconds in r["actors"].items():
            if n > 1:
                rate = f"{r['tokens_per_s']:,.0f} tokens/s"
                console.print(f"  on {n} Ray actors at {rate} each (stated): {seconds:,.0f} s")


def print_search(result: OccurrenceSearch, like: str, json_out: bool) -> None:
    """The nearest occurrences with their cosines, baseline percentiles and (asked for) senses."""
    if json_out:
        print_json(result.to_dict())
        return
    built = f"index built in {result.index_seconds:.1f} s" if result.index_built else "index read from the folder"
    console.print(
        f"[bold]{escape(like)}[/bold]: the {len(result.hits)} nearest of {result.searched:,} occurrences, "
        f"{escape(result.model)} ({result.backend_label}) layer {result.layer}, cosine; {built}, "
        f"search {result.search_seconds * 1000:.0f} ms",
        soft_wrap=True,
    )
    if result.baseline is not None:
        b = result.baseline
        console.print(
            f"[dim]baseline: random different-word pairs at layer {result.layer}: mean {b['mean']:.3f}, "
            f"5-95% {b['p5']:.3f}-{b['p95']:.3f}; 'pct' = the share of them at or below the cosine[/dim]",
            soft_wrap=True,
        )
    if result.sense is not None:
        console.print(f"only the occurrences induced into sense {result.sense} of the example's word")
    for word, found in result.senses.items():
        named = "; ".join(
            f"{c['cluster']}: {c['synset'] or ', '.join(c['distinctive_words'][:3]) or '-'} ({c['size']})"
            for c in found["clusters"]
        )
        console.print(f"[dim]senses of {escape(word)} (induced, k={found['k']}): {escape(named)}[/dim]", soft_wrap=True)
    console.print(_hits_table(result))


def _hits_table(result: OccurrenceSearch) -> Table:
    labelled = bool(result.senses)
    table = Table(show_edge=False, pad_edge=False)
    columns = [("#", "right"), ("cosine", "right"), ("pct", "right")] + ([("sense", "right")] if labelled else [])
    for col, justify in columns + [("occurrence", "left"), ("document", "left")]:
        table.add_column(col, justify=justify)
    for h in result.hits:
        pct = "-" if h.baseline_percentile is None else f"{h.baseline_percentile:.1f}"
        sense_cell = ["-" if h.sense is None else str(h.sense)] if labelled else []
        table.add_row(str(h.rank), f"{h.cosine:.3f}", pct, *sense_cell, escape(h.marked), escape(h.doc_id))
    return table


def print_export(result: ProjectorExport, json_out: bool) -> None:
    """Where the exported files are and how to load them."""
    if json_out:
        print_json(result.to_dict())
        return
    console.print(
        f"{result.rows:,} occurrences of {result.model} layer {result.layer} ({result.dim} dimensions): "
        f"{result.vectors} and {result.metadata}; load both at https://projector.tensorflow.org (Load)",
        soft_wrap=True,
        markup=False,
    )
    if result.senses:
        named = ", ".join(f"{w} {'-' if s is None else s['k']}" for w, s in result.senses.items())
        line = f"induced senses (k) in the sense column: {named}; '-': too few occurrences"
        console.print(line, markup=False, soft_wrap=True)
