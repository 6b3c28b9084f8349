"""An extraction folder's vectors for the TensorFlow Embedding Projector (projector.tensorflow.org).

The Projector loads two tab-separated files: ``vectors.tsv`` (one row of numbers per point, no
header) and ``metadata.tsv`` (a header, then one row of labels per point, in the same order).
Here a point is one occurrence at one layer; its labels are the sentence with the occurrence in
brackets, the target, the form matched, the document and the occurrence's induced sense at that
layer: the same induction as ``corpus search --sense`` (:mod:`.hit_senses`, k-means with k by
silhouette, each cluster named by its nearest WordNet sense), written ``"K: synset (definition)"``
so the Projector can colour the points by it; ``-`` where the word has too few occurrences in
the folder to induce (:data:`.senses.MIN_OCCURRENCES`). Parquet stays the native format: this
is a copy for looking at, written atomically (core/atomic_files.py), metadata last.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contextlens.analyses.corpus.chunks import layer_column
from contextlens.analyses.corpus.folder import layer_matrix, read_rows
from contextlens.analyses.corpus.folder_check import checked_folder
from contextlens.analyses.corpus.hit_senses import senses_or_none
from contextlens.analyses.corpus.manifest import pick_layer
from contextlens.core import atomic_files
from contextlens.core.arguments import flag, path_argument

FORMATS = ("projector",)
METADATA_COLUMNS = ("occurrence", "target", "form", "document", "sense")
NO_SENSE = "-"  # the sense cell of a word with too few occurrences to induce


@dataclass(frozen=True)
class ProjectorExport:
    vectors: Path
    metadata: Path
    rows: int
    dim: int
    layer: int
    model: str
    senses: dict[str, dict[str, object] | None]  # word -> its induced senses (None: too few occurrences)
    columns: tuple[str, ...] = METADATA_COLUMNS

    def to_dict(self) -> dict[str, object]:
        return {
            "vectors": str(self.vectors), "metadata": str(self.metadata), "rows": self.rows,
            "dim": self.dim, "layer": self.layer, "model": self.model, "format": "projector",
            "columns": list(self.columns), "senses": self.senses,
        }  # fmt: skip


def _cell(text: str) -> str:
    """A TSV cell: tabs and line breaks would shift the Projector's columns and rows."""
    return " ".join(str(text).split())


def export_projector(
    folder: Path | str, out: Path | str | None = None, layer: int | None = None, senses: bool = True
) -> ProjectorExport:
    """Write ``vectors.tsv`` and ``metadata.tsv`` of ``folder``'s occurrences at ``layer`` (default:
    the top extracted layer) into ``out`` (default: ``<folder>/projector-layer_<L>``). ``senses``:
    the sense column (it induces each word's senses, which loads the folder's model; without it
    the metadata stops at the document)."""
    from contextlens.errors import InputError

    folder = path_argument(folder, "folder")
    senses = flag(senses, "senses")  # 'no' is a true str
    manifest = checked_folder(folder)
    layer = pick_layer(manifest, layer, folder)
    if out is not None and not str(out).strip():
        raise InputError("`out` is empty; give a folder for vectors.tsv and metadata.tsv")
    out = Path(folder / f"projector-{layer_column(layer)}" if out is None else out)
    if out.exists() and not out.is_dir():
        raise InputError(f"`out` {out} is a file; give a folder for vectors.tsv and metadata.tsv")
    names = ["doc_id", "sentence", "start", "end", "target", layer_column(layer)]
    table = read_rows(folder, columns=names + (["form"] if manifest.format != "contextlens-corpus/1" else []))
    if table.num_rows == 0:
        raise InputError(f"{folder} holds no occurrences to export")
    x = layer_matrix(table, layer_column(layer))
    lines = ["\t".join(f"{v:.6g}" for v in row) for row in x]
    rows = table.drop_columns([layer_column(layer)]).to_pylist()
    words = sorted({r["target"] for r in rows}) if senses else []
    induced = {w: senses_or_none(folder, w, layer) for w in words}
    columns = METADATA_COLUMNS if senses else METADATA_COLUMNS[:-1]
    meta = ["\t".join(columns)]
    for row_number, r in enumerate(rows):  # the folder's rows in chunk order, as the induction numbers them
        s, a, b = r["sentence"], r["start"], r["end"]
        marked = f"{s[:a]}[{s[a:b]}]{s[b:]}"
        cells = [marked, r["target"], r.get("form") or r["target"], r["doc_id"]]
        if senses:
            found = induced[r["target"]]
            sense = found.label_of(row_number) if found is not None else None
            cells.append(NO_SENSE if sense is None else found.name(sense))
        meta.append("\t".join(_cell(v) for v in cells))
    vectors = atomic_files.write_text(Path(out) / "vectors.tsv", "\n".join(lines) + "\n")
    metadata = atomic_files.write_text(Path(out) / "metadata.tsv", "\n".join(meta) + "\n")
    described = {w: None if f is None else f.to_dict() for w, f in induced.items()}
    return ProjectorExport(vectors, metadata, len(rows), x.shape[1], layer, manifest.model, described, columns)
