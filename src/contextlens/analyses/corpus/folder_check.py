"""A finished extraction folder checked against its manifest, once, where a reader opens it.

Every reader of an extraction folder (``corpus search``, ``corpus export``, ``senses induce``, the
sense map, ``eval contextuality --corpus``, ``serve --corpus`` at start-up) opens it with
:func:`checked_folder`, which gives its manifest only when the folder holds what the manifest says:

- the manifest is a finished job's, its fields of their types (:func:`.manifest.read_manifest`),
  its dtype a known one, and its model, where that model's config is on disk, of the manifest's
  hidden size with the layers listed (``"model": "mpnet"`` over minilm's 384-d vectors is refused
  here, not by FAISS's ``assert``);
- the shards are the ones the job wrote: ``counts.shards`` of them, none missing, each a whole
  Parquet file whose footer holds a vector column per listed layer of the manifest's width and
  dtype, ``counts.rows`` rows in all;
- every vector is finite and not all zeros (a zero vector has no direction: a cosine with it is
  meaningless, and the search ranked it at 0.000 as if it were an answer).

What it costs: each shard is read once, footer and vectors: a shard that passed is recorded in
``vectors-checked.json`` beside the shards by its name, size and modification time (its entry of
:func:`.folder.shards_fingerprint`), the columns checked with their width and dtype, and its rows,
so another process reads it again only when it changed (a footer alone takes about 150 us here:
1 s an open for a folder of 6,448 shards); a folder that cannot be written is read again by each
process. Within a process, a folder whose manifest and shards are as they were when it last
passed is not looked at again beyond their sizes and times (kept in memory, as the search index
is). Each refusal is one line naming the shard and what is wrong. A finished extraction is not
continued (a re-run refuses a folder with a shard missing), so the fix is a new extraction into a
new folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from contextlens.analyses.corpus.chunks import DTYPES, layer_column
from contextlens.analyses.corpus.folder import shard_path, shards, shards_fingerprint
from contextlens.analyses.corpus.manifest import MANIFEST, Manifest, require_manifest
from contextlens.core import atomic_files
from contextlens.core.arguments import path_argument
from contextlens.errors import ContextlensError, DataFileError

CHECKED = "vectors-checked.json"  # beside the shards: the shards whose footers and vectors passed
CHECK_FORMAT = "contextlens-vector-check/1"
FIX = "extract the corpus again into a new `--out` folder (`corpus extract` with the same settings)"

# resolved folder -> (manifest and shards as they were, the manifest's fields) when it last passed
_PASSED: dict[Path, tuple[list[Any], dict[str, Any]]] = {}


def checked_folder(folder: Path | str) -> Manifest:
    """The manifest of a finished extraction folder whose shards are the ones it describes;
    otherwise a one-line :class:`DataFileError` (or the manifest's own :class:`InputError`)."""
    folder = path_argument(folder, "folder")
    manifest = require_manifest(folder)
    key, state = folder.resolve(), _state(folder)
    kept = _PASSED.get(key)
    if kept is not None and kept == (state, manifest.to_dict()):
        return manifest
    if manifest.dtype not in DTYPES:
        raise DataFileError(f"{folder / MANIFEST} says dtype {manifest.dtype!r}, not one of {', '.join(DTYPES)}; {FIX}")
    check_model(manifest, folder)
    rows = _check_shards(folder, manifest, _check_shard_set(folder, manifest))
    expected = manifest.counts.get("rows")
    if expected is not None and rows != expected:
        raise DataFileError(
            f"the shards of {folder} hold {rows:,} rows where its finished extraction wrote {expected:,}; {FIX}"
        )
    _PASSED[key] = (state, manifest.to_dict())  # as it was before the check: a change meanwhile checks again
    return manifest


def clear_cache() -> None:
    """Forget the folders that passed in this process (the file beside the shards stays)."""
    _PASSED.clear()


def _state(folder: Path) -> list[Any]:
    stat = (folder / MANIFEST).stat()
    return [[MANIFEST, stat.st_size, stat.st_mtime_ns], *shards_fingerprint(folder)]


def check_model(manifest: Manifest, folder: Path) -> None:
    """The manifest's width and layers against its model's config, when that config is here (a
    model not installed, or a hub id not downloaded, is not checked: its load will say)."""
    from contextlens.core.model_facts import model_facts

    try:
        facts = model_facts(manifest.model)
    except ContextlensError:
        return
    if facts is None:
        return
    where = folder / MANIFEST
    if facts.hidden_size != manifest.hidden_size:
        raise DataFileError(
            f"{where} says model {manifest.model} with hidden_size {manifest.hidden_size}, but {manifest.model}'s "
            f"vectors are {facts.hidden_size}-d: the manifest does not describe these shards; {FIX}"
        )
    if manifest.layers[-1] > facts.num_layers:
        raise DataFileError(
            f"{where} lists layer {manifest.layers[-1]}, but {manifest.model} has layers 0..{facts.num_layers}: "
            f"the manifest does not describe these shards; {FIX}"
        )


def _check_shard_set(folder: Path, manifest: Manifest) -> list[Path]:
    """The folder's shards, refused when one the job wrote is missing or one it did not is there."""
    found = shards(folder)
    wanted = manifest.counts.get("shards")
    if wanted is None or (len(found) == wanted and all(p == shard_path(folder, i) for i, p in enumerate(found))):
        if not found:
            raise DataFileError(f"{folder} holds no shards; {FIX}")
        return found
    names = {p.name for p in found}
    missing = [shard_path(folder, i).name for i in range(wanted) if shard_path(folder, i).name not in names]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise DataFileError(
            f"{folder} is missing shard {missing[0]}{more} of the {wanted} its finished extraction wrote; {FIX}"
        )
    extra = sorted(names - {shard_path(folder, i).name for i in range(wanted)})
    raise DataFileError(
        f"{folder} holds {len(found)} shards where its finished extraction wrote {wanted} ({extra[0]} is not one "
        f"of them); move {extra[0]} away, or {FIX}"
    )


def _refused(path: Path, why: str) -> DataFileError:
    return DataFileError(f"shard {path} is damaged or not from this job ({why}); {FIX}")


def _check_footer(path: Path, manifest: Manifest) -> int:
    """A shard's row count, after its footer is checked: whole, a vector column per listed layer
    of the manifest's width and dtype."""
    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except (pa.ArrowException, OSError) as exc:
        raise _refused(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    value = pa.float16() if manifest.dtype == "float16" else pa.float32()
    for layer in manifest.layers:
        name = layer_column(layer)
        if name not in schema.names:
            raise _refused(path, f"it has no column {name}, and the manifest lists layer {layer}")
        kind = schema.field(name).type
        if not pa.types.is_fixed_size_list(kind) or kind.value_type != value or kind.list_size != manifest.hidden_size:
            raise _refused(
                path, f"its {name} is {_shown(kind)}, where the manifest says {manifest.hidden_size} x {manifest.dtype}"
            )
    return int(meta.num_rows)


def _shown(kind: pa.DataType) -> str:
    if not pa.types.is_fixed_size_list(kind):
        return str(kind)
    named = {pa.float16(): "float16", pa.float32(): "float32", pa.float64(): "float64"}
    return f"{kind.list_size} x {named.get(kind.value_type, str(kind.value_type))}"


def _check_shards(folder: Path, manifest: Manifest, found: list[Path]) -> int:
    """Each shard's footer and vectors checked, unless ``vectors-checked.json`` says it passed as
    it is now (same size and modification time, the same columns of the same width and dtype);
    the rows of all of them."""
    columns = [layer_column(layer) for layer in manifest.layers]
    record, fresh, total = _read_record(folder), {}, 0
    for path in found:
        stat = path.stat()
        entry = record.get(path.name)
        vouched = {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "width": manifest.hidden_size,
                   "dtype": manifest.dtype}  # fmt: skip
        if not (
            isinstance(entry, dict)
            and all(entry.get(k) == v for k, v in vouched.items())
            and isinstance(entry.get("columns"), list)
            and set(columns) <= set(entry["columns"])
            and _count(entry.get("rows"))
        ):
            entry = {**vouched, "columns": columns, "rows": _check_footer(path, manifest)}
            scan_vectors(path, columns)
        fresh[path.name] = entry
        total += entry["rows"]
    if fresh != record:
        try:
            document = {"format": CHECK_FORMAT, "shards": fresh}
            atomic_files.write_text(folder / CHECKED, json.dumps(document) + "\n")
        except OSError:
            pass  # a folder that cannot be written: checked again by the next process
    return total


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _read_record(folder: Path) -> dict[str, Any]:
    """The shards ``vectors-checked.json`` vouches for (nothing when it is missing or not ours)."""
    try:
        document = json.loads((folder / CHECKED).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(document, dict) or document.get("format") != CHECK_FORMAT:
        return {}
    found = document.get("shards")
    return found if isinstance(found, dict) else {}


def scan_vectors(path: Path, columns: list[str]) -> None:
    """Read a shard's vector columns; refuse a missing, NaN, infinite or all-zero vector."""
    try:
        table = pq.read_table(path, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise _refused(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    for name in columns:
        col = table.column(name).combine_chunks()
        if not len(col):
            continue
        if col.null_count:
            raise _refused(path, f"{col.null_count} of its {len(col)} {name} vectors are missing (null)")
        values = col.flatten()
        if values.null_count:
            raise _refused(path, f"its {name} vectors hold {values.null_count} missing (null) values")
        x = np.asarray(values.to_numpy(zero_copy_only=False)).reshape(len(col), -1)
        bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
        if len(bad):
            raise _refused(path, f"its {name} {_rows(bad, len(col))} NaN or infinite values")
        zero = np.flatnonzero(~(x != 0).any(axis=1))
        if len(zero):
            raise _refused(path, f"its {name} {_rows(zero, len(col))} only zeros: no direction, no cosine")


def _rows(which: np.ndarray, total: int) -> str:
    """Which vectors, and the verb: 'vector of row 4 holds' or 'vectors of 3 of 9 rows, from row 0, hold'."""
    if len(which) == 1:
        return f"vector of row {int(which[0])} holds"
    return f"vectors of {len(which)} of {total} rows, from row {int(which[0])}, hold"
