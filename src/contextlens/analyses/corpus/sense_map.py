"""A sense map: one word's occurrences in an extraction folder, projected per layer and coloured by sense.

Context Atlas's view (one word across a corpus, a dot per occurrence, colour = sense) built from
the folder's own vectors: at every extracted layer the occurrences' unit vectors are clustered by
:func:`contextlens.analyses.corpus.senses.induce_senses` (k chosen by silhouette, clusters named by
their distinctive words and nearest WordNet sense) and projected to two dimensions by the same
call's PCA. The projection is PCA, not UMAP: PCA is deterministic, linear (distances along its
axes mean something) and needs no extra dependency; its axes' signs are arbitrary, so a layer's
picture may be mirrored against the next one's. The nearest occurrences of one point come from
``corpus search`` (:mod:`contextlens.analyses.corpus.occurrence_search`), by its marked sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contextlens.analyses.corpus.folder import read_rows
from contextlens.analyses.corpus.folder_check import checked_folder
from contextlens.analyses.corpus.sense_labels import label_text
from contextlens.analyses.corpus.senses import SenseInduction, induce_senses
from contextlens.core.arguments import one_word, path_argument, whole_number
from contextlens.errors import InputError, TargetNotFoundError

MAX_OCCURRENCES = 5000  # points on one map: beyond, a browser redraw per layer is no longer instant
PROJECTION = "PCA of the unit vectors (2 components, per layer; axis signs arbitrary)"


@dataclass(frozen=True)
class SenseMap:
    """One word of one folder at every extracted layer."""

    corpus: str
    word: str
    model: str
    backend: str
    rows: list[dict[str, object]]  # doc_id, sentence, start, end of each occurrence (point order)
    layers: list[SenseInduction]

    def to_dict(self) -> dict[str, object]:
        return {
            "corpus": self.corpus,
            "word": self.word,
            "model": self.model,
            "backend": self.backend,
            "projection": PROJECTION,
            "occurrences": [{**r, "marked": marked(r)} for r in self.rows],
            "layers": [_layer_dict(s) for s in self.layers],
        }


def marked(row: dict[str, object]) -> str:
    """The occurrence in marker syntax, as ``corpus search`` takes it: ``The river [bank] flooded.``"""
    s, a, b = str(row["sentence"]), int(row["start"]), int(row["end"])  # type: ignore[call-overload]
    return f"{s[:a]}[{s[a:b]}]{s[b:]}"


def _layer_dict(s: SenseInduction) -> dict[str, object]:
    chosen = s.silhouettes.get(s.k)
    return {
        "layer": s.layer,
        "k": s.k,
        "criterion": s.criterion,
        "silhouette": None if chosen is None else round(chosen, 4),
        "silhouettes": {str(k): round(v, 4) for k, v in s.silhouettes.items()},
        "pos": s.pos,
        "senses": [
            {
                "cluster": c.cluster,
                "size": c.size,
                "distinctive_words": c.distinctive_words,
                "gloss": c.gloss,  # null: unlabelled (no sense led by the margin); see candidates
                "candidates": c.candidates,
                "label": label_text(c.gloss, c.candidates),  # what the page shows: the candidates when unlabelled
                "forms": c.forms,
            }
            for c in s.clusters
        ],
        "warnings": s.warnings,
        "labels": [int(x) for x in s.labels],
        "x": [round(float(v), 5) for v in s.coords[:, 0]],
        "y": [round(float(v), 5) for v in s.coords[:, 1]],
    }


def sense_map(
    folder: Path | str, word: str, k: str | int = "auto", seed: int = 0, corpus: str | None = None
) -> SenseMap:
    """``word``'s occurrences in ``folder`` at each of its extracted layers, clustered and projected.

    ``corpus`` names the folder in the result (a served name; default the folder's own name).
    Raises TargetNotFoundError for a word the folder did not extract, InputError for fewer than 3
    occurrences (no clusters) or more than :data:`MAX_OCCURRENCES`.
    """
    folder = path_argument(folder, "folder")
    word = one_word(word, "word").strip().lower()
    manifest = checked_folder(folder)
    if word not in manifest.targets:
        name = corpus or folder.name
        raise TargetNotFoundError(f"{word!r} was not extracted in {name}; its words: {', '.join(manifest.targets)}")
    seed = whole_number(seed, "seed", minimum=0)
    rows = read_rows(folder, word, ["doc_id", "sentence", "start", "end"]).to_pylist()  # induce_senses' order
    if len(rows) > MAX_OCCURRENCES:
        raise InputError(f"{word!r} has {len(rows)} occurrences; a sense map shows at most {MAX_OCCURRENCES}")
    layers = [induce_senses(folder, word, layer, k, seed, examples=1) for layer in manifest.layers]
    for s in layers:  # one order for every layer: the points are the same occurrences throughout
        if len(s.sentences) != len(rows) or not np.all(np.isfinite(s.coords)):
            raise InputError(f"the shards of {corpus or folder.name} changed while they were read; try again")
    return SenseMap(corpus or folder.name, word, manifest.model, manifest.backend.label, rows, layers)
