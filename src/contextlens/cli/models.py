"""`contextlens models`: what is installed and usable offline."""

from __future__ import annotations

from rich.table import Table

from contextlens.cli.common import (
    JsonOpt,
    console,
    print_json,
)
from contextlens.cli.registry import app
from contextlens.core.resources import cache_dir, model_status
from contextlens.core.tuned_store import tuned_models


def made_here_rows() -> list[dict]:
    """The contextual models tuned here (`contextlens tune`), in the rows' shape, with their provenance."""
    return [
        {"name": r["name"], "kind": "contextual (made here)", "installed": True, "path": r["path"],
         "source": f"tuned from {r['base']}", "sha256": r.get("weights_sha256"), "optional": False, "install": None,
         "description": f"made here: {r['base']} tuned for word senses (layer {r['settings']['layer']}, seed "
                        f"{r['seed']}, {r['steps']} steps, split {r['split_hash'][:12]})", "provenance": r}
        for r in tuned_models(cache_dir())
    ]  # fmt: skip


@app.command("models")
def models_cmd(json_out: JsonOpt = False) -> None:
    """What is installed and usable offline, and how to install the rest."""
    rows = model_status() + made_here_rows()
    for r in rows:
        r["onnx"] = _exports(r)
    if json_out:
        print_json({"models": rows})
        return
    table = Table(title="contextlens models")
    for col in ("name", "kind", "installed", "lean path (ONNX)", "description"):
        # a figure stays beside its graph ("fp32 ±1.1e-05") however many made-here rows narrow the table
        table.add_column(col, min_width=16 if col.startswith("lean") else None)
    for r in rows:
        mark = (
            "[green]yes[/green]"
            if r["installed"]
            else ("[dim]no (optional)[/dim]" if r["optional"] else "[red]no[/red]")
        )
        table.add_row(str(r["name"]), str(r["kind"]), mark, _exports_cell(r), str(r["description"]))
    console.print(table)
    for r in rows:
        if not r["installed"]:
            console.print(f"install {r['name']}: [bold]{r['install']}[/bold]")
    console.print("Any Hugging Face model folder (--model PATH) or word-vector file (--static PATH) works too.")
    console.print(
        "[dim]lean path: ONNX graphs exported and checked against torch on this machine (± the largest "
        "difference in hidden states or attention weights, cos the least cosine); commands on --runtime auto "
        "(compare, explore, trace, serve, ...) run them without torch[/dim]"
    )


def _exports(row: dict) -> dict | None:
    """The model's ONNX exports on this machine (None for a static model, a decoder or one not installed)."""
    from contextlens.core.model_facts import model_facts
    from contextlens.core.onnx_graphs import export_summary
    from contextlens.core.resources import resolve_contextual

    if not str(row["kind"]).startswith("contextual") or not row["installed"]:
        return None
    facts = model_facts(str(row["name"]))
    if facts is None or facts.is_decoder:
        return None
    name, source, _revision = resolve_contextual(str(row["name"]))
    return export_summary(name, str(source))


def _exports_cell(row: dict) -> str:
    exports = row["onnx"]
    if exports is None:
        decoder = str(row["kind"]).startswith("contextual") and row["installed"]
        return "[dim]torch only (a decoder)[/dim]" if decoder else "[dim]-[/dim]"
    if exports["fp32"] is None and exports["int8"] is None:
        return "[dim]not yet (the first ONNX use exports it, 10-60 s)[/dim]"
    parts = []
    if exports["fp32"] is not None:
        parts.append(f"fp32 ±{exports['fp32']['max_abs_diff']:.1e}")
    if exports["int8"] is not None:
        parts.append(f"int8 cos {exports['int8']['min_cosine']:.3f}")
    if exports["attention"] is not None:
        parts.append(f"attention ±{exports['attention']['max_abs_diff']:.1e}")
    return ", ".join(parts)
