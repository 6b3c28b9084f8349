"""The documents of `index build`, in every format the corpus commands read.

`index build` reads a text file (a document per line), a folder of ``.txt`` and JSONL itself
(:func:`contextlens.analyses.search.index.load_documents`); a Parquet file with a ``text`` column
and a ``.gz``/``.bz2`` file come through the corpus readers here (search sits below corpus, so
it cannot call them), so that one file is read the same by `corpus extract` and `index build`.
"""

from __future__ import annotations

from pathlib import Path

from contextlens.analyses.corpus.readers import ReadStats, read_corpus
from contextlens.analyses.search.index import Document, load_documents, unique_ids
from contextlens.errors import DataFileError


def index_documents(path: Path | str) -> list[Document]:
    """The documents of ``path``: ids as :func:`load_documents` gives them, or for a Parquet row
    its ``id`` (``name:row`` when absent) and for a compressed file's line ``name:line``."""
    path = Path(path)
    if not (path.is_file() and _by_corpus_reader(path)):
        return load_documents(path)
    docs = [
        Document(doc.doc_id, "\n\n".join(p.strip() for p in doc.pieces if p.strip()))
        for doc in read_corpus(str(path), ReadStats(), on_error="stop", line_breaks="lines")
    ]
    docs = [d for d in docs if d.text]
    if not docs:
        raise DataFileError(f"{path} holds no documents; give one document per line or row")
    return unique_ids(path, docs)


def _by_corpus_reader(path: Path) -> bool:
    """Parquet and compressed files: the corpus readers' formats that a plain read cannot take."""
    suffixes = [x.lower() for x in path.suffixes]
    return bool(suffixes) and suffixes[-1] in (".gz", ".bz2", ".parquet")
