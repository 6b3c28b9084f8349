"""A folder's own files: a symbolic link in a served or given folder that points outside it is refused.

Whoever can write into a folder the server reads (an extraction shared between users, an unpacked
archive) could otherwise leave ``part-000001.parquet -> /etc/shadow`` there and have the server open
a file the writer could not read. A link that stays inside the folder is the folder's own file.
"""

from __future__ import annotations

from pathlib import Path

from contextlens.errors import DataFileError


def own_file(folder: Path, path: Path) -> Path:
    """``path``, refused with :class:`DataFileError` if it is a link that leads out of ``folder``."""
    if path.is_symlink():
        target = path.resolve()
        if not target.is_relative_to(Path(folder).resolve()):
            raise DataFileError(
                f"{path.name} in {folder} is a link to a file outside the folder; contextlens reads only "
                "the folder's own files: put the file itself there"
            )
    return path
