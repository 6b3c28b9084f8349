"""The manifest of an extraction folder: what was extracted, by which model, how far it got.

``manifest.json`` is written (atomically) before the first shard and again when the job is
complete. A job may only continue in a folder whose manifest has the same job settings; any
difference (another model, revision, precision, runtime, layer set, pooling, dtype, targets,
inflected forms or not, corpus, chunking) is refused, so one folder never mixes vectors of two
models. Format 3 (rows keyed by paragraph and sentence within it, only paragraphs holding a
target split) reads format-1 and format-2 folders for the analyses but does not continue them.
``runtime`` came later within format 2: a manifest without it was written on torch and reads as
torch. ``line_breaks`` came later within format 3: a manifest without it was read line by line
(every line its own paragraph), and reads, and continues, as ``lines``. A manifest is read only
when each field has its type (a list of layer numbers, a whole hidden size...): a hand-edited
one is refused in one line, naming the field.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from contextlens.core.arguments import path_argument
from contextlens.core.atomic_files import write_text as atomic_write_text
from contextlens.core.backend import Backend
from contextlens.core.devices import devices_agree
from contextlens.core.folder_files import own_file
from contextlens.errors import InputError

MANIFEST = "manifest.json"
FORMAT = "contextlens-corpus/3"
DEFAULT_CHUNK_CHARS = 32_000  # characters of text per shard: about 250 sentences of news text
# readable, not continued: 1 (rows without `form`), 2 (sentence_index within the document, every
# paragraph split, no `paragraph_index`)
OLD_FORMATS = ("contextlens-corpus/1", "contextlens-corpus/2")
# The settings that define a job: a different value in an existing folder is refused.
JOB_KEYS = (
    "format",
    "corpus",
    "targets",
    "forms",
    "line_breaks",
    "model",
    "revision",
    "weights_sha256",
    "precision",
    "runtime",
    "device",
    "layers",
    "pooling",
    "dtype",
    "chunk_chars",
)


@dataclass
class Manifest:
    corpus: str
    targets: list[str]
    model: str
    revision: str | None
    weights_sha256: str | None
    layers: list[int]
    pooling: str
    dtype: str
    chunk_chars: int | None  # None in format-1 folders (they were chunked by sentences)
    hidden_size: int
    forms: bool = False  # targets also matched their inflected forms (WordNet)
    precision: str = "fp32"
    runtime: str = "torch"  # torch, or onnx (ONNX Runtime; see core/onnx_runtime.py)
    # cpu or cuda:N; written only when not cpu (a folder made before devices were recorded ran on
    # the CPU, and its manifest stays byte for byte what it was). Part of the job, compared as
    # core.devices.devices_agree compares it: a folder continues on another device only where the
    # vectors agree within fp32's printed check (fp32 on either; fp16/bf16 on its own kind of
    # device), the device of the job's first run staying here and the others in `continued_on`
    device: str = "cpu"
    # how a file's line breaks were read (readers.LINE_BREAKS); absent in folders made before the
    # choice existed, which read every line as its own paragraph
    line_breaks: str = "lines"
    format: str = FORMAT
    complete: bool = False
    counts: dict[str, object] = field(default_factory=dict)
    # where the job's last run encoded (not part of the job: a job may be finished elsewhere): None
    # for the local engine; on Ray the cluster's address, its nodes (id, address, CPUs, GPUs, the
    # actors that answered from each) and what each actor asked for (ray_engine.run_ray)
    cluster: dict[str, object] | None = None
    # the other devices that encoded shards of this folder, in order (absent when none)
    continued_on: list[str] = field(default_factory=list)

    @property
    def backend(self) -> Backend:
        """How the vectors were made (the JSON keys as one value)."""
        return Backend(self.precision, self.runtime, self.device)

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        if self.device == "cpu":
            del out["device"]
        if not self.continued_on:
            del out["continued_on"]
        return out

    def write(self, folder: Path) -> None:
        atomic_write_text(folder / MANIFEST, json.dumps(self.to_dict(), indent=2) + "\n")

    def check_same_job(self, other: Manifest, folder: Path) -> None:
        """Refuse to continue ``other`` (the folder's) with different job settings."""
        check_settings(other, {key: getattr(self, key) for key in JOB_KEYS}, folder)

    def continue_from(self, existing: Manifest) -> None:
        """This run continues ``existing`` (checked the same job): the folder keeps the device of
        its first run, and a run on another device is recorded in ``continued_on``."""
        devices = [*existing.continued_on]
        if self.device != existing.device and self.device not in devices:
            devices.append(self.device)
        self.device, self.continued_on = existing.device, devices


def check_settings(existing: Manifest, settings: dict[str, object], folder: Path) -> None:
    """Refuse a folder whose job differs in any of ``settings`` (checked before a model loads with
    the settings known from the arguments, then again with all of them)."""
    for key, mine in settings.items():
        theirs = getattr(existing, key)
        if key == "device" and devices_agree(existing.precision, str(theirs), str(mine)):
            continue  # (another device whose vectors agree within the printed check: continue_from records it)
        if key == "device" and mine != theirs:
            raise InputError(
                f"{folder} holds an extraction with device={theirs!r}, not {mine!r}: {existing.precision} vectors of "
                "a GPU and of the CPU differ by more than fp32's check, and one folder never mixes them; continue "
                f"it on {str(theirs).split(':')[0]} or use another `out` folder"
            )
        if mine != theirs:
            raise InputError(
                f"{folder} holds an extraction with {key}={theirs!r}, not {mine!r}; "
                "use another `out` folder or the same settings"
            )


def read_manifest(folder: Path) -> Manifest | None:
    """The folder's manifest, or None when there is none (a fresh folder)."""
    path = own_file(Path(folder), Path(folder) / MANIFEST)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__ if data is not None else 'null'}, not an object")
        if data.get("format") == OLD_FORMATS[0]:
            data["chunk_chars"] = data.pop("chunk_sentences", None)
        elif data.get("format") not in (FORMAT, *OLD_FORMATS):
            raise ValueError(f"format {data.get('format')!r}")
        manifest = Manifest(**data)
        check_fields(manifest)
        return manifest
    except (ValueError, TypeError, OSError, RecursionError) as exc:
        raise InputError(f"{path} is not a contextlens corpus manifest ({exc}); use another folder") from None


def check_fields(manifest: Manifest) -> None:
    """Raise ValueError naming the first field whose value is not of its type (a hand-edited
    manifest: ``"layers": "3,6"`` was a TypeError deep inside a reader)."""
    m, text = manifest, "a string"
    counts = m.counts if isinstance(m.counts, dict) else {}
    checks: list[tuple[str, object, bool, str]] = [
        *((key, getattr(m, key), _text(getattr(m, key)), text) for key in _STRINGS),
        *((key, getattr(m, key), getattr(m, key) is None or _text(getattr(m, key)), text) for key in _NAMES),
        ("targets", m.targets, isinstance(m.targets, list) and all(map(_text, m.targets)), "a list of words"),
        ("layers", m.layers, _layer_list(m.layers), "a list of layer numbers (0 or more, increasing)"),
        ("hidden_size", m.hidden_size, _count(m.hidden_size) and m.hidden_size > 0, "a positive whole number"),
        ("chunk_chars", m.chunk_chars, m.chunk_chars is None or _count(m.chunk_chars), "a whole number"),
        ("forms", m.forms, isinstance(m.forms, bool), "true or false"),
        ("complete", m.complete, isinstance(m.complete, bool), "true or false"),
        ("counts", m.counts, isinstance(m.counts, dict), "an object"),
        ("cluster", m.cluster, m.cluster is None or isinstance(m.cluster, dict), "an object or null"),
        ("continued_on", m.continued_on, isinstance(m.continued_on, list) and all(map(_text, m.continued_on)),
         "a list of devices"),
        *((f"counts.{k}", counts[k], _count(counts[k]), "a whole number") for k in ("rows", "shards") if k in counts),
    ]  # fmt: skip
    for key, value, ok, what in checks:
        if not ok:
            shown = repr(value)
            # the JSON key in double quotes: a name in backticks is a parameter's, which faces rename
            raise ValueError(f'"{key}" is {shown if len(shown) <= 40 else shown[:37] + "..."}, not {what}')


_STRINGS = ("corpus", "model", "pooling", "dtype", "precision", "runtime", "device", "format", "line_breaks")
_NAMES = ("revision", "weights_sha256")  # a string, or null for a model the registry does not pin


def _text(value: object) -> bool:
    return isinstance(value, str)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _layer_list(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(map(_count, value)) and value == sorted(set(value))


def require_manifest(folder: Path) -> Manifest:
    """The manifest of a finished extraction, its shards unread: a reader opens the folder with
    :func:`contextlens.analyses.corpus.folder_check.checked_folder`, which also checks them."""
    manifest = read_manifest(path_argument(folder, "folder"))
    if manifest is None:
        raise InputError(
            f"{folder} is not a corpus extraction folder (no {MANIFEST}); run `contextlens corpus extract`"
        )
    if not manifest.complete:
        raise InputError(
            f"the extraction in {folder} is not finished; run the same `corpus extract` again to finish it"
        )
    return manifest


def pick_layer(manifest: Manifest, layer: int | str | None, folder: Path) -> int:
    """An extracted layer of the folder: ``layer`` (negative counts from the top), default the top;
    ``"auto"``: the layer `eval wic` chooses on dev lemmas for the folder's model at its precision
    and runtime (:func:`auto_layer`), which must be one the folder extracted."""
    from contextlens.analyses.measures.layer_choice import layer_request

    wanted = None if layer is None else layer_request(layer)
    if wanted == "auto":
        choice = auto_layer(manifest)
        if choice.layer not in manifest.layers:
            raise InputError(
                f"`layer` auto is {choice.label()} for {manifest.model}, which {folder} did not extract "
                f"(extracted layers: {manifest.layers}); extract it, or give one of those layers"
            )
        return choice.layer
    top = manifest.layers[-1]
    number = top if wanted is None else (top + 1 + wanted if wanted < 0 else wanted)  # type: ignore[operator]
    if number not in manifest.layers:
        raise InputError(f"layer {number} is not in {folder}; extracted layers: {manifest.layers}")
    return number


def auto_layer(manifest: Manifest):  # -> LayerChoice (benchmarks: imported when asked, it loads torch)
    """The sense layer `--layer auto` stands for, for the folder's own model, precision and runtime."""
    from contextlens.analyses.measures.layer_choice import choose_layer
    from contextlens.core.contextual_models import load_contextual

    return choose_layer(load_contextual(manifest.model, manifest.precision, manifest.runtime), "sense")
