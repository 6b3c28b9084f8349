"""The public reader of an extraction folder: its rows and their vectors as arrays.

``pq.read_table(DIR)`` fails on an extraction folder (``manifest.json`` and the check record sit
beside the shards), and the readers the commands use are internal. :func:`open_folder` checks the
folder as every command does (:func:`.folder_check.checked_folder`: finished, shards as the
manifest says, finite vectors) and gives::

    folder = contextlens.open_folder("runs/bank")
    folder.rows("bank")              # pyarrow Table: doc_id, sentence, start, end, target, form, ...
    folder.vectors("bank")           # float32 (n, len(layers), hidden_size), rows in the same order
    folder.to_pandas("bank")         # the rows as a DataFrame (no vector columns)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from contextlens.analyses.corpus.chunks import layer_column
from contextlens.analyses.corpus.folder import layer_matrix, read_rows
from contextlens.analyses.corpus.folder_check import checked_folder
from contextlens.analyses.corpus.manifest import Manifest
from contextlens.core.arguments import path_argument
from contextlens.errors import InputError, TargetNotFoundError


@dataclass(frozen=True)
class ExtractionFolder:
    """A checked extraction folder: its manifest, rows and vectors (read when asked)."""

    path: Path
    manifest: Manifest

    @property
    def layers(self) -> list[int]:
        return list(self.manifest.layers)

    @property
    def targets(self) -> list[str]:
        return list(self.manifest.targets)

    def rows(self, target: str | None = None, vectors: bool = False) -> pa.Table:
        """The rows (of one ``target``, or all), in extraction order; the ``layer_N`` vector
        columns too with ``vectors``."""
        table = read_rows(self.path, self._target(target))
        if vectors:
            return table
        return table.drop_columns([layer_column(n) for n in self.manifest.layers])

    def vectors(self, target: str | None = None, layers: Sequence[int] | None = None) -> np.ndarray:
        """float32 ``(n, len(layers), hidden_size)`` in the order of :meth:`rows` (default every
        extracted layer), like ``encode_occurrences(..., as_array=True)``."""
        wanted = self.layers if layers is None else [int(n) for n in layers]
        missing = [n for n in wanted if n not in self.manifest.layers]
        if missing or not wanted:
            raise InputError(f"layers {missing or wanted} are not in {self.path}; extracted layers: {self.layers}")
        table = read_rows(self.path, self._target(target), [layer_column(n) for n in wanted])
        if table.num_rows == 0:
            return np.zeros((0, len(wanted), self.manifest.hidden_size), dtype=np.float32)
        return np.stack([layer_matrix(table, layer_column(n)) for n in wanted], axis=1)

    def to_pandas(self, target: str | None = None):  # -> pandas.DataFrame
        """The rows without vectors as a pandas DataFrame."""
        return self.rows(target).to_pandas()

    def _target(self, target: str | None) -> str | None:
        if target is None:
            return None
        word = str(target).strip().lower()
        if word not in self.manifest.targets:
            raise TargetNotFoundError(
                f"{target!r} was not extracted in {self.path}; its targets: {', '.join(self.manifest.targets)}"
            )
        return word


def open_folder(folder: Path | str) -> ExtractionFolder:
    """A finished extraction folder, checked; a one-line error for anything else."""
    path = path_argument(folder, "folder")
    return ExtractionFolder(path, checked_folder(path))
