"""Two lesson sections as HTML: the three kinds of embedding for one text, and the cost of a dimension.

The numbers come from the analyses (``analyses/lesson/kinds.py``; ``analyses/search/dimension_cost.py``
for the memory by dimension, by ``capacity.py``'s FAISS formulas and ``pg_capacity.py``'s pgvector
ones, whose HNSW page formula matched the
page counts measured on a real PostgreSQL at 384, 768, 1024 and 1536 dimensions, docs/search.md);
this module only lays them out.
"""

from __future__ import annotations

import html

from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.reports.card_tables import cells

TEXTS = ("We walked along the river [bank].", "I opened a [bank] account.")
STATIC = "glove-50d"
WIDE = '<div style="overflow-x:auto;max-width:100%">'  # a safety net: on a phone the rows are cards
KINDS_HEAD = ("kind", "model", "one vector stands for", "dimensions", "vectors per text", "bytes per vector (float32)",
              "norm (text 1)", "cosine text 1 vs 2", "random different words (mean; percentile)",
              "what the cosine says")  # fmt: skip
COST_HEAD = ("dimensions", "FAISS flat", "FAISS sq8", "FAISS HNSW", "pgvector HNSW, vector", "pgvector HNSW, halfvec")
MEASURED_HEAD = ("dimensions", "stored as", "pgvector HNSW bytes/vector", "FAISS HNSW bytes/vector",
                 "index pages, measured", "pages, predicted", "table MiB")  # fmt: skip


def _head(names: tuple[str, ...]) -> str:
    return '<tr class="head">' + "".join(f"<th>{html.escape(n)}</th>" for n in names) + "</tr>"


def kinds_section(model: ContextualModel | str) -> str:
    """The table of :func:`~contextlens.analyses.lesson.kinds.three_kinds` for the lesson's two texts."""
    from contextlens.analyses.lesson.kinds import three_kinds

    result = three_kinds(list(TEXTS), as_contextual(model), STATIC)
    rows = "".join(
        "<tr>"
        + cells(
            KINDS_HEAD,
            [
                f"<b>{html.escape(k.kind)}</b>",
                html.escape(k.source),
                html.escape(k.unit),
                str(k.dimensions),
                " / ".join(map(str, k.vectors_per_text)),
                f"{4 * k.dimensions:,}",
                f"{k.norm:.3f}",
                f"<b>{k.cosine:.4f}</b>",
                _baseline(k),
                html.escape(k.context),
            ],
        )
        + "</tr>"
        for k in result.kinds
    )
    texts = " and ".join(f"“{html.escape(t)}”" for t in TEXTS)
    return (
        f'<p id="kinds-what">The same two texts, {texts}, through each kind. “vectors per text” is how many '
        "vectors each text yields (words for the static table, tokens for the model, one for the sentence); the "
        "cosine is between the two texts' vectors (for the word kinds, of “bank”); beside the hidden state, the "
        "mean cosine of random pairs of different words at that layer, and where this pair falls among them.</p>"
        f"{WIDE}<table id='kinds' class='cards'>{_head(KINDS_HEAD)}{rows}</table></div>"
    )


def _baseline(k) -> str:
    if k.baseline is None:
        return "—"
    return f"{k.baseline:.4f}; this pair at p{k.percentile:.1f}"


def width_label(d: int, loaded: ContextualModel) -> str:
    """A width of the cost table, with the model it belongs to (glove-50d's 50, the served model's)."""
    return f"{d}{f' ({STATIC})' if d == 50 else ''}{f' ({loaded.name})' if d == loaded.hidden_size else ''}"


def cost_section(model: ContextualModel | str) -> str:
    """A table beside the cost figure: memory grows with vectors x dimensions, and by the engine's rule."""
    from contextlens.analyses.search.dimension_cost import COLUMNS, COUNT, index_memory

    loaded = as_contextual(model)
    served = loaded.hidden_size
    gib = 2**30
    rows = "".join(
        "<tr>"
        + cells(
            COST_HEAD,
            [html.escape(width_label(r["dimensions"], loaded))]
            + [f"{r[c] / gib:.2f}" if r[c] is not None else "refused (over 2,000)" for c in COLUMNS],
        )
        + "</tr>"
        for r in index_memory(served)
    )
    return (
        f'<p id="cost-what">In production the memory of an index is about vectors × dimensions × bytes per value: '
        f"{COUNT:,} vectors of {served} float32 dimensions ({html.escape(loaded.name)}) take "
        f"{COUNT * served * 4 / gib:.2f} GiB before any index structure. Below, GiB for {COUNT:,} vectors by the "
        "project's capacity formulas: FAISS (flat = the raw vectors; sq8 = one byte per dimension; HNSW adds the "
        "graph) and PostgreSQL with pgvector (HNSW index plus table; its page formula matched the measured "
        "page counts exactly at 384–1536 dimensions, docs/search.md). pgvector keeps whole tuples on 8 KiB pages, "
        "so there an HNSW index of 1024 dimensions is as big as one of 1536 (one element per page).</p>"
        f"{WIDE}<table id='cost' class='cards'>{_head(COST_HEAD)}{rows}</table></div>" + measured_section()
    )


def measured_section() -> str:
    """The dimension dial as measured in a real PostgreSQL (analyses/search/pg_measured.py): HNSW
    bytes per vector on vector, halfvec and bit beside FAISS's for the same vectors, and the pages
    the formula predicted for each build."""
    from contextlens.analyses.search.pg_measured import dimension_dial

    dial = dimension_dial()
    on = dial["measured_on"]

    def predicted(r: dict) -> str:
        if r["predicted_exactly"]:
            return f"{r['index_pages_predicted']:,} (exact)"
        low, high = r["index_pages_range"]
        return f"{r['index_pages_predicted']:,} ({low:,}–{high:,}: random levels)"

    rows = "".join(
        "<tr>"
        + cells(
            MEASURED_HEAD,
            [
                str(r["dim"]),
                r["type"],
                f"{r['index_bytes_per_vector']:,}",
                f"{r['faiss_hnsw_bytes_per_vector']:,}",
                f"{r['index_pages']:,}",
                predicted(r),
                f"{r['table_mib']:.1f}",
            ],
        )
        + "</tr>"
        for r in dial["rows"]
        if r["index"] == "hnsw"
    )
    return (
        f'<p id="cost-measured-what">Measured in the database: {on["vectors"]:,} random unit vectors per '
        f"dimension in {html.escape(on['server'])}, HNSW m={on['hnsw']['m']}, beside FAISS's serialized HNSW "
        "for the same vectors and m (bytes per vector), with the pages the formula predicted. The steps are "
        "the pages: 4 elements of 384 dimensions fit on a page, 2 of 768, 1 of 1024 or 1536 — so halfvec is "
        "3× smaller than vector at 1024 dimensions, not 2×. The table (heap + TOAST) keeps the full vectors "
        "even when the index holds bits.</p>"
        f"{WIDE}<table id='cost-measured' class='cards'>{_head(MEASURED_HEAD)}{rows}</table></div>"
    )
