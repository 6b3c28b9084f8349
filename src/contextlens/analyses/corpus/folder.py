"""The extraction folder: ``manifest.json`` (:mod:`.manifest`) and one Parquet shard per chunk.

Chunk ``i`` becomes ``part-<i>.parquet``, written under a temporary name and renamed into place,
so a shard is either absent or whole, whatever kills the job. A resumed job counts a shard as
done only when its footer reads back with the job's own columns: a shard damaged or replaced
afterwards (truncated, zero bytes, another program's file) is refused with its name, never
counted as done nor read half-way. A folder without a manifest is a fresh one: it must be empty
(or the caller says ``force``), and Parquet shards in it without a manifest are never ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from contextlens.analyses.corpus.chunks import table_counts
from contextlens.analyses.corpus.manifest import MANIFEST
from contextlens.analyses.corpus.targets import ScanCounts
from contextlens.core.atomic_files import atomic_path
from contextlens.core.cache_folders import clean_leftovers
from contextlens.core.folder_files import own_file
from contextlens.errors import DataFileError, InputError

SHARD_GLOB = "part-*.parquet"
TEMP_GLOB = ".part-*.parquet.*tmp-*"  # core.atomic_files names: .<name>.<random>.tmp-<pid>
SEARCH_TEMP_GLOB = ".search-*.tmp-*"  # a search index's files (.faiss, .json) half-written


def shard_path(folder: Path, chunk: int) -> Path:
    return folder / f"part-{chunk:06d}.parquet"


def shard_number(name: str) -> int:
    """The chunk number of a shard's file name (``part-000012.parquet`` -> 12)."""
    return int(name[len("part-") : -len(".parquet")])


def shards(folder: Path) -> list[Path]:
    """The folder's shards in chunk order (a link that leaves the folder is refused)."""
    return [own_file(Path(folder), p) for p in sorted(Path(folder).glob(SHARD_GLOB))]


def shards_fingerprint(folder: Path) -> list[list[Any]]:
    """The folder's shards as they are now: name, bytes, modification time, in chunk order (what
    an index or an induction built from them remembers, to tell when they changed)."""
    return [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in shards(folder)]


def write_shard(folder: Path, chunk: int, table: pa.Table) -> None:
    """Write a shard whole or not at all (temporary name, then an atomic rename). The vector
    columns are written plain: no dictionary (every float differs, so pyarrow hashes them all and
    falls back) and no min/max statistics (no reader filters on a vector element). On Lee's
    312 rows of 7 float16 layers in 11 shards that writes 2.7x faster and 29% smaller than
    pyarrow's defaults (``benchmarks/corpus.py --write``)."""
    described = [field.name for field in table.schema if not _is_vector(field.type)]
    with atomic_path(shard_path(folder, chunk)) as tmp:
        pq.write_table(table, tmp, use_dictionary=described, write_statistics=described)


def _is_vector(kind: pa.DataType) -> bool:
    return pa.types.is_fixed_size_list(kind) or pa.types.is_list(kind)


def clean_temporaries(folder: Path) -> None:
    """Remove the half-written shards a killed job left (never renamed into place), and what a
    killed search-index build left."""
    for tmp in folder.glob(TEMP_GLOB):
        tmp.unlink(missing_ok=True)
    clean_search_temporaries(folder)


def clean_search_temporaries(folder: Path) -> None:
    """Remove the temporaries of search indexes (any layer) whose writer is dead; a live build's
    (another process searching this folder now) are kept."""
    for tmp in Path(folder).glob(SEARCH_TEMP_GLOB):
        name = tmp.name[1:].rsplit(".", 2)[0]  # .<name>.<random>.tmp-<pid> -> <name>
        clean_leftovers(Path(folder) / name)


def _damaged(path: Path, why: object) -> DataFileError:
    return DataFileError(
        f"shard {path} is damaged or not from this job ({why}); delete it and run the same "
        "`corpus extract` again to re-extract its chunk"
    )


def shard_schema(path: Path) -> pa.Schema:
    """A shard's schema, read from its footer; a file that is not a whole Parquet file is refused."""
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise _damaged(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def shard_scan_counts(path: Path) -> ScanCounts:
    return table_counts(shard_schema(path))


def done_shards(folder: Path, expected: pa.Schema) -> set[str]:
    """Names of the shards already written, each checked to have the job's columns."""
    done = set()
    for path in shards(folder):
        found = shard_schema(path)
        if not found.remove_metadata().equals(expected.remove_metadata()):
            raise _damaged(path, "its columns are not the job's")
        done.add(path.name)
    return done


def check_fresh_folder(out: Path, force: bool = False) -> None:
    """A folder without a manifest is used only when it is empty, or with ``force`` (its files are
    left alone); Parquet shards there without a manifest are refused either way."""
    if not out.is_dir() or (out / MANIFEST).exists():
        return
    # a kill while the first manifest was written leaves its temporary: still a fresh folder
    entries = sorted(p.name for p in out.iterdir() if not p.name.startswith(f".{MANIFEST}.tmp-"))
    if not entries:
        return
    foreign = [n for n in entries if Path(n).match(SHARD_GLOB)]
    if foreign:
        raise InputError(
            f"`out` {out} holds {foreign[0]} but no {MANIFEST}: those shards are not from a contextlens job; "
            "move them away or choose another `out` folder"
        )
    if not force:
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        raise InputError(
            f"`out` {out} is not empty ({shown}) and holds no extraction; choose a new or empty folder, "
            "or pass `force` to write beside those files (they are left alone)"
        )


def read_table(path: Path, columns: Sequence[str] | None = None, filters=None) -> pa.Table:
    """One shard's rows; a damaged shard (or one without the columns) is one line naming it."""
    try:
        return pq.read_table(path, columns=list(columns) if columns else None, filters=filters)
    except (pa.ArrowException, OSError) as exc:
        raise _damaged(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def shard_counts(folder: Path, targets: Sequence[str]) -> dict[str, object]:
    """Rows per target and per form, shards, paragraphs and sentences, read back from the shards
    themselves: ``paragraphs`` read, ``paragraphs_skipped`` (no match: never split), ``sentences``
    (of the paragraphs split)."""
    per: dict[str, int] = dict.fromkeys(targets, 0)
    per_form: dict[str, int] = {}
    scanned = ScanCounts()
    found = shards(folder)
    for path in found:
        table = read_table(path, columns=["target", "form"])
        scanned.add(table_counts(table.schema))
        for t, f in zip(table.column("target").to_pylist(), table.column("form").to_pylist(), strict=True):
            per[t] = per.get(t, 0) + 1
            per_form[f] = per_form.get(f, 0) + 1
    return {
        "rows": sum(per.values()),
        "shards": len(found),
        "paragraphs": scanned.paragraphs,
        "paragraphs_skipped": scanned.paragraphs_skipped,
        "sentences": scanned.sentences,
        "per_target": per,
        "per_form": dict(sorted(per_form.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def read_rows(folder: Path, target: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
    """All rows of an extraction folder (optionally one target's), in chunk order."""
    filters = [("target", "==", target)] if target is not None else None
    tables = [read_table(path, columns, filters) for path in shards(folder)]
    if not tables:
        raise InputError(f"{folder} holds no shards; run `contextlens corpus extract` into it first")
    try:
        return pa.concat_tables(tables)
    except pa.ArrowException as exc:
        raise DataFileError(f"the shards of {folder} do not share their columns ({exc}); extract it again") from None


def layer_matrix(table: pa.Table, column: str) -> np.ndarray:
    """A vector column of rows as one float32 matrix (rows x hidden size), without Python lists."""
    col = table.column(column).combine_chunks()
    width = col.type.list_size if pa.types.is_fixed_size_list(col.type) else -1  # a shard may hold no row
    return np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(col), width)
