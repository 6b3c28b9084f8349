"""Which induced sense is each of a folder's occurrences? For labelling and restricting search hits.

``corpus search --sense K`` and the sense label beside each hit use the same induction as
``senses induce`` (:func:`.senses.induce_senses`: k-means on the word's unit vectors at the
layer, k by silhouette, each cluster named by its nearest WordNet sense), run once per
(folder, word, layer) and kept in this process while the shards stay the same. A hit is placed
in its word's induction by its row number: a folder's rows in chunk order, and a word's rows in
that same order (:func:`.folder.read_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextlens.analyses.corpus.folder import read_table, shards, shards_fingerprint
from contextlens.analyses.corpus.senses import MIN_OCCURRENCES, SenseInduction, induce_senses


@dataclass(frozen=True)
class WordSenses:
    """One word's induced senses in a folder: ``rows[j]`` (a row number of the folder, chunk order)
    is in cluster ``induction.labels[j]``."""

    word: str
    layer: int
    induction: SenseInduction
    rows: np.ndarray

    def label_of(self, row: int) -> int | None:
        j = int(np.searchsorted(self.rows, row))
        return int(self.induction.labels[j]) if j < len(self.rows) and self.rows[j] == row else None

    def rows_of(self, sense: int) -> np.ndarray:
        return self.rows[self.induction.labels == sense]

    def describe(self, sense: int) -> dict[str, Any]:
        """A cluster's name: its nearest WordNet sense (when the word has some) and its words."""
        c = self.induction.clusters[sense]
        gloss = c.gloss or {}
        return {
            "cluster": sense,
            "size": c.size,
            "synset": gloss.get("synset"),
            "definition": gloss.get("definition"),
            "distinctive_words": c.distinctive_words,
        }

    def name(self, sense: int) -> str:
        """A cluster as one readable label: its number (as ``senses induce`` numbers them) and its
        nearest WordNet sense with the definition, or its distinctive words when the word has no
        WordNet sense: ``"0: bank.n.01 (sloping land ...)"``, ``"1: river, water, muddy"``."""
        d = self.describe(sense)
        named = f"{d['synset']} ({d['definition']})" if d["synset"] else ", ".join(d["distinctive_words"][:3])
        return f"{sense}: {named or '-'}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "word": self.word,
            "layer": self.layer,
            "k": self.induction.k,
            "criterion": self.induction.criterion,
            "pos": self.induction.pos,
            "clusters": [self.describe(c) for c in range(self.induction.k)],
        }


# (folder, layer) -> (shards' fingerprint, the target of every row); (folder, word, layer) -> senses
_TARGETS: dict[Path, tuple[list[Any], np.ndarray]] = {}
_SENSES: dict[tuple[Path, str, int], tuple[list[Any], WordSenses]] = {}


def row_targets(folder: Path) -> np.ndarray:
    """The target of every row of the folder, in chunk order (one string column read)."""
    key, state = Path(folder).resolve(), shards_fingerprint(folder)
    kept = _TARGETS.get(key)
    if kept is not None and kept[0] == state:
        return kept[1]
    parts = [read_table(p, ["target"]).column("target").to_numpy(zero_copy_only=False) for p in shards(folder)]
    targets = np.concatenate(parts) if parts else np.array([], dtype=object)
    _TARGETS[key] = (state, targets)
    return targets


def word_senses(folder: Path, word: str, layer: int) -> WordSenses:
    """``word``'s senses induced in ``folder`` at ``layer`` (k auto), kept while the shards stay."""
    key, state = (Path(folder).resolve(), word, layer), shards_fingerprint(folder)
    kept = _SENSES.get(key)
    if kept is not None and kept[0] == state:
        return kept[1]
    induction = induce_senses(Path(folder), word, layer)
    rows = np.flatnonzero(row_targets(folder) == word)
    found = WordSenses(word, layer, induction, rows)
    _SENSES[key] = (state, found)
    return found


def senses_or_none(folder: Path, word: str, layer: int) -> WordSenses | None:
    """:func:`word_senses`, or None where the word has too few occurrences in the folder to induce
    (under :data:`.senses.MIN_OCCURRENCES`)."""
    if int(np.count_nonzero(row_targets(folder) == word)) < MIN_OCCURRENCES:
        return None
    return word_senses(folder, word, layer)


def clear_cache() -> None:
    _TARGETS.clear()
    _SENSES.clear()
