"""Which occurrences in an extraction folder are most like this one? Search by an example occurrence.

Contextual vectors have no vocabulary, so a word has no neighbours; an *occurrence* does. The
example (``"The river [bank] flooded."``) is encoded by the folder's own model at the folder's
precision, runtime and pooling, at one of its layers: vectors of another model (or of int8 or
ONNX Runtime against torch fp32) live in another space, so a model that is not the folder's is
refused. The folder's vectors of that layer go once into an exact FAISS index (inner product of
unit vectors = cosine, :mod:`contextlens.analyses.search.index_config`) kept beside the shards as
``search-layer_<L>.faiss`` with ``search-layer_<L>.json`` (the shards it was built from, the
index's size and sha256); both are written atomically, the description last, so a kill leaves
the old index or none, and an index whose shards changed (or that does not read back whole, with
its size, count and dimension) is rebuilt. A process keeps the index it opened while the files
stay the same.

Beside each cosine: its percentile among the model's random-word cosines at that layer (the
baseline ``compare`` shows, :func:`contextlens.analyses.measures.word_baseline.random_word_baseline`:
a cosine of 0.6 means little in a layer where unrelated words already reach 0.5), and with
``senses`` the hit's induced sense (:mod:`.hit_senses`); ``sense=K`` searches only the occurrences
of the example's word that were induced into sense K.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from contextlens.analyses.corpus.chunks import layer_column
from contextlens.analyses.corpus.folder import (
    clean_search_temporaries,
    layer_matrix,
    read_table,
    shard_schema,
    shards,
    shards_fingerprint,
)
from contextlens.analyses.corpus.folder_check import FIX, checked_folder
from contextlens.analyses.corpus.hit_senses import WordSenses, senses_or_none, word_senses
from contextlens.analyses.corpus.manifest import Manifest, pick_layer
from contextlens.analyses.corpus.targets import form_table
from contextlens.core import atomic_files
from contextlens.core.arguments import flag, path_argument, whole_number
from contextlens.core.devices import check_device_choice, devices_agree, reading_device
from contextlens.errors import DataFileError, InputError, ProvenanceMismatchError

INDEX_FORMAT = "contextlens-occurrence-index/1"
HIT_COLUMNS = ("doc_id", "paragraph_index", "sentence_index", "sentence", "start", "end", "target", "form")


def index_paths(folder: Path, layer: int) -> tuple[Path, Path]:
    """(FAISS index, its description) of one layer, beside the shards."""
    return folder / f"search-{layer_column(layer)}.faiss", folder / f"search-{layer_column(layer)}.json"


@dataclass
class OccurrenceIndex:
    """One layer's vectors of a folder in a FAISS index; ``rows[k]``: rows of the k-th shard."""

    folder: Path
    layer: int
    index: Any
    shard_names: list[str]
    rows: list[int]
    built: bool  # built by this call (False: read from beside the shards)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return int(self.index.ntotal)


# (folder, layer) -> the index last opened there, kept while its shards stay the same (a server
# answering many searches reads the index once)
_CACHE: dict[tuple[Path, int], tuple[list[list[Any]], OccurrenceIndex]] = {}


def clear_cache() -> None:
    _CACHE.clear()


def open_index(folder: Path | str, layer: int | None = None, rebuild: bool = False) -> OccurrenceIndex:
    """The folder's index at ``layer`` (default: its top extracted layer), built once and kept."""
    folder = path_argument(folder, "folder")
    layer = pick_layer(checked_folder(folder), layer, folder)
    key = (folder.resolve(), layer)
    kept = _CACHE.get(key)
    if not rebuild and kept is not None and kept[0] == _state(folder, layer):
        return replace(kept[1], built=False, seconds=0.0)
    found = _open_index(folder, layer, rebuild)
    _CACHE[key] = (_state(folder, layer), found)
    return found


def _state(folder: Path, layer: int) -> list[list[Any]]:
    """The shards and the index files as they are now: a change to any of them reopens the index."""
    files = [p for p in index_paths(folder, layer) if p.is_file()]
    return shards_fingerprint(folder) + [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in files]


def _open_index(folder: Path, layer: int, rebuild: bool) -> OccurrenceIndex:
    import time

    import faiss

    from contextlens.analyses.search.index_config import IndexConfig, build_faiss_index, serialized_bytes

    manifest = checked_folder(folder)  # kept from open_index's check: no shard is read again
    faiss_path, meta_path = index_paths(folder, layer)
    fingerprint = shards_fingerprint(folder)
    started = time.perf_counter()
    if not rebuild and meta_path.is_file() and faiss_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
            if (
                isinstance(meta, dict)
                and meta.get("format") == INDEX_FORMAT
                and meta.get("shards") == fingerprint
                and meta.get("bytes") == faiss_path.stat().st_size
            ):
                index = faiss.read_index(str(faiss_path))  # read in place (no copy of the bytes)
                if index.ntotal == sum(meta["rows"]) and index.d == manifest.hidden_size:
                    names = [s[0] for s in fingerprint]
                    return OccurrenceIndex(folder, layer, index, names, list(meta["rows"]), False)
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            pass  # an unreadable or foreign index is rebuilt, never trusted
    vectors, rows = [], []
    for path in shards(folder):
        vectors.append(layer_matrix(read_table(path, [layer_column(layer)]), layer_column(layer)))
        rows.append(len(vectors[-1]))
    if not sum(rows):
        raise InputError(f"{folder} holds no occurrences to search")
    index = build_faiss_index(np.concatenate(vectors), IndexConfig())
    blob = serialized_bytes(index)
    clean_search_temporaries(folder)  # what killed builds left, any layer (a live build's are kept)
    atomic_files.write_bytes(faiss_path, blob)
    meta = {
        "format": INDEX_FORMAT,
        "layer": layer,
        "index": "flat (exact inner product of unit vectors = cosine)",
        "model": manifest.model,
        "shards": fingerprint,
        "rows": rows,
        "bytes": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
    }
    atomic_files.write_text(meta_path, json.dumps(meta, indent=1) + "\n")  # last: it vouches for the index
    names = [s[0] for s in fingerprint]
    return OccurrenceIndex(folder, layer, index, names, rows, True, time.perf_counter() - started)


@dataclass(frozen=True)
class OccurrenceHit:
    rank: int
    cosine: float
    doc_id: str
    paragraph_index: int | None
    sentence_index: int
    sentence: str
    start: int
    end: int
    target: str
    form: str | None
    baseline_percentile: float | None = None  # share (0-100) of random-word cosines at or below
    sense: int | None = None  # the hit's induced sense (cluster of its word), with ``senses``

    @property
    def marked(self) -> str:
        return f"{self.sentence[: self.start]}[{self.sentence[self.start : self.end]}]{self.sentence[self.end :]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "cosine": round(self.cosine, 6),
            "doc_id": self.doc_id,
            "paragraph_index": self.paragraph_index,
            "sentence_index": self.sentence_index,
            "sentence": self.sentence,
            "start": self.start,
            "end": self.end,
            "marked": self.marked,
            "target": self.target,
            "form": self.form,
            "baseline_percentile": None if self.baseline_percentile is None else round(self.baseline_percentile, 1),
            "sense": self.sense,
        }


@dataclass(frozen=True)
class OccurrenceSearch:
    """The nearest occurrences of a folder to an example occurrence, at one layer."""

    folder: Path
    like: str
    model: str
    backend_label: str
    layer: int
    searched: int  # occurrences in the index
    hits: list[OccurrenceHit] = field(repr=False)
    index_built: bool = False
    index_seconds: float = 0.0
    search_seconds: float = 0.0
    baseline: dict[str, Any] | None = None  # the random-word baseline at the layer (None: no WordNet)
    senses: dict[str, Any] = field(default_factory=dict)  # word -> its induced senses (with ``senses``)
    sense: int | None = None  # the sense the search was restricted to

    def to_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "like": self.like,
            "model": self.model,
            "backend": self.backend_label,
            "layer": self.layer,
            "similarity": "cosine of the example's vector and each occurrence's, at the folder's layer",
            "searched": self.searched,
            "index": {"built": self.index_built, "seconds": round(self.index_seconds, 3), "type": "flat (exact)"},
            "search_seconds": round(self.search_seconds, 4),
            "baseline": self.baseline,
            "sense": self.sense,
            "senses": self.senses,
            "hits": [h.to_dict() for h in self.hits],
        }


def check_model_is_the_folders(manifest: Manifest, model, folder: Path) -> None:
    """Refuse a loaded model whose vectors are not the folder's: another name or precision, or
    another runtime unless both are fp32 (ONNX Runtime's fp32 graph is checked within 1e-4 of torch;
    int8 on two runtimes is two quantizers)."""
    from contextlens.analyses.search.encoders import runtimes_agree

    same = (manifest.model, manifest.precision) == (model.name, model.precision)
    if not (same and runtimes_agree(manifest.precision, manifest.runtime, model.precision, model.runtime)):
        raise ProvenanceMismatchError(
            f"{folder} holds vectors of {manifest.model} ({manifest.backend.label}); the `model` given is "
            f"{model.name} ({model.backend.label}): vectors of two models (or backends) are not comparable; "
            "search with the folder's own model"
        )
    width = getattr(model, "hidden_size", manifest.hidden_size)
    if width != manifest.hidden_size:  # a model whose config was not on disk when the folder was checked
        raise DataFileError(
            f"{folder} holds {manifest.hidden_size}-d vectors, but its model {manifest.model} makes {width}-d ones: "
            f"the manifest does not describe these shards; {FIX}"
        )


def search_occurrences(
    folder: Path | str,
    like: str,
    layer: int | None = None,
    top: int = 20,
    model=None,
    loader=None,
    *,
    sense: int | None = None,
    senses: bool = False,
    baseline: bool = True,
    runtime: str | None = None,
    device: str | None = None,
) -> OccurrenceSearch:
    """The ``top`` occurrences of ``folder`` nearest (cosine) to the example ``like`` (marker syntax:
    ``"The river [bank] flooded."``), encoded by the folder's model (``model``: an already loaded
    one, refused unless it is the folder's; ``loader``: how to load it, default the core's).
    ``sense``: only the occurrences of the example's word induced into that sense (0..k-1, as
    ``senses induce`` numbers them); ``senses``: each hit's induced sense; ``baseline``: each
    cosine's percentile among the model's random-word cosines at the layer. ``runtime``: the
    example's (default: ``auto``, the lean path, for an fp32 folder; the folder's own at int8).
    ``device``: the example's (:func:`example_device`)."""
    import time

    from contextlens.core.occurrences import parse_marked

    folder = path_argument(folder, "folder")
    senses, baseline = flag(senses, "senses"), flag(baseline, "baseline")
    manifest = checked_folder(folder)
    top = whole_number(top, "top", minimum=1)
    layer = pick_layer(manifest, layer, folder)
    example = parse_marked(like)  # checked before a model loads
    word = _example_word(manifest, example, folder) if sense is not None else None
    if sense is not None:
        sense = whole_number(sense, "sense", minimum=0)
    if model is None:  # (where the example runs is checked against the folder before it loads)
        model = _load_folder_model(manifest, loader, runtime, example_device(manifest, device, folder))
    check_model_is_the_folders(manifest, model, folder)
    found = open_index(folder, layer)
    labelled: dict[str, Any] = {}
    allowed = None
    if word is not None:
        labelled[word] = word_senses(folder, word, layer)
        allowed = _rows_of_sense(labelled[word], word, sense, folder, layer)
    started = time.perf_counter()
    enc = model.encode_occurrences([example], layers=[layer], pooling=manifest.pooling)[0]
    ids, scores = _nearest(found, enc.hidden[:1], top, allowed)
    hits = _hits(found, ids, scores)
    seconds = time.perf_counter() - started  # the encoding and the search (the baseline is cached on disk)
    base = _baseline(model, manifest.pooling, layer) if baseline else None
    if base is not None:
        hits = [replace(h, baseline_percentile=base.beside(layer, h.cosine)["percentile"]) for h in hits]
    if senses or word is not None:
        hits = _with_senses(folder, layer, hits, ids, labelled)
    return OccurrenceSearch(
        folder, like, manifest.model, manifest.backend.label, layer, found.total, hits,
        found.built, found.seconds, seconds,
        None if base is None else {**_rounded(base.layer(layer).to_dict()), "about": base.describe()},
        {w: s.to_dict() for w, s in labelled.items()}, sense,
    )  # fmt: skip


def example_device(manifest: Manifest, device: str | None, folder: Path) -> str:
    """Where the example is encoded: ``device``, else :func:`reading_device`'s choice for the
    folder (the CPU for an fp32 or int8 folder, else the folder's own); one whose vectors would not
    agree with the folder's within fp32's check (fp16/bf16 across a GPU and the CPU) is refused
    before any model loads."""
    chosen = reading_device(manifest.precision, manifest.device) if device is None else check_device_choice(device)
    if chosen != "auto" and not devices_agree(manifest.precision, manifest.device, chosen):
        raise InputError(
            f"{folder} holds {manifest.precision} vectors made on {manifest.device}, but the example would run on "
            f"{chosen}: {manifest.precision} results of a GPU and of the CPU differ by more than fp32's check; give "
            f"`device` {manifest.device.split(':')[0]} (or leave it out)"
        )
    return chosen


def _load_folder_model(manifest: Manifest, loader, runtime: str | None, device: str = "cpu"):
    """The folder's model at its precision on ``device``; at fp32 on ``runtime`` or the lean path
    (fp32 runtimes agree within 1e-4), at int8 on the folder's own runtime unless one is asked for."""
    if loader is None:
        from contextlens.core.contextual_models import load_contextual as loader
    lean = "auto" if manifest.precision == "fp32" else manifest.runtime
    return loader(manifest.model, manifest.precision, runtime or lean, device)


def _rows_of_sense(labelled: WordSenses, word: str, sense: int, folder: Path, layer: int) -> np.ndarray:
    """The rows of ``word`` induced into ``sense``; a sense it does not have is refused."""
    k = labelled.induction.k
    if sense >= k:
        raise InputError(
            f"`sense` {sense}: {word!r} has {k} induced sense(s) in {folder} at layer {layer} (0..{k - 1}); "
            "see `contextlens senses induce`"
        )
    return labelled.rows_of(sense)


def _rounded(values: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in values.items()}


def _example_word(manifest: Manifest, example, folder: Path) -> str:
    """The folder's target the example's bracketed word is (itself or, with forms, one of its forms)."""
    said = example.text[example.start : example.end].lower()
    owner = dict(form_table(manifest.targets, manifest.forms)) if manifest.forms else {}
    word = said if said in manifest.targets else owner.get(said)
    if word is None:
        raise InputError(
            f"`sense` needs the example's word to be a target of {folder}; {said!r} is not "
            f"(targets: {', '.join(manifest.targets)})"
        )
    return word


def _nearest(found: OccurrenceIndex, query: np.ndarray, top: int, allowed: np.ndarray | None):
    """(row numbers, cosines) of the ``top`` nearest rows, among ``allowed`` rows when given
    (their vectors read back from the exact index: the same unit vectors, the same cosines)."""
    from contextlens.analyses.search.index_config import IndexConfig, normalize, search_faiss

    if allowed is None:
        scores, ids = search_faiss(found.index, IndexConfig("flat", {}, "float32"), query, top)
        kept = [(int(i), float(x)) for i, x in zip(ids[0], scores[0], strict=True) if i >= 0]
        return [i for i, _ in kept], [x for _, x in kept]
    if not len(allowed):
        return [], []
    cos = found.index.reconstruct_batch(allowed.astype(np.int64)) @ normalize(query)[0]
    order = np.argsort(-cos, kind="stable")[:top]
    return [int(allowed[i]) for i in order], [float(cos[i]) for i in order]


def _baseline(model, pooling: str, layer: int):
    """The model's random-word baseline (cached on disk); None when WordNet is not installed."""
    from contextlens.analyses.measures.word_baseline import random_word_baseline
    from contextlens.core.wordnet import WordNetNotInstalledError

    try:
        return random_word_baseline(model, pooling)
    except WordNetNotInstalledError:
        return None


def _with_senses(folder: Path, layer: int, hits: list[OccurrenceHit], ids: list[int], labelled: dict) -> list:
    """Each hit with its induced sense (a word with under 3 occurrences has none)."""
    out = []
    for hit, row in zip(hits, ids, strict=True):
        if hit.target not in labelled:
            labelled[hit.target] = senses_or_none(folder, hit.target, layer)
        found = labelled[hit.target]
        out.append(replace(hit, sense=None if found is None else found.label_of(row)))
    for w in [w for w, s in labelled.items() if s is None]:
        del labelled[w]
    return out


def _hits(found: OccurrenceIndex, ids: list[int], scores: list[float]) -> list[OccurrenceHit]:
    """Each hit's row, read from its own shard only (positions are rows in chunk order)."""
    bounds = np.cumsum([0, *found.rows])
    wanted: dict[int, list[tuple[int, int]]] = {}
    for rank, i in enumerate(ids):
        shard = int(np.searchsorted(bounds, i, side="right") - 1)
        wanted.setdefault(shard, []).append((rank, i - int(bounds[shard])))
    rows: dict[int, dict[str, Any]] = {}
    for shard, picks in wanted.items():
        path = found.folder / found.shard_names[shard]
        names = [c for c in HIT_COLUMNS if c in shard_schema(path).names]  # format 1 and 2: fewer
        part = read_table(path, names).take([local for _, local in picks]).to_pylist()
        for (rank, _), row in zip(picks, part, strict=True):
            rows[rank] = row
    return [
        OccurrenceHit(
            rank + 1,
            scores[rank],
            r["doc_id"],
            r.get("paragraph_index"),
            r["sentence_index"],
            r["sentence"],
            r["start"],
            r["end"],
            r["target"],
            r.get("form"),
        )  # fmt: skip
        for rank, r in sorted(rows.items())
    ]
