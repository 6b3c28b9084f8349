"""WordNet 3.0, read offline from Debian's ``wordnet-base`` and ``wordnet-sense-index``.

NLTK's :class:`WordNetCorpusReader` expects a ``corpora/wordnet`` folder holding a
``lexnames`` file, which Debian does not ship. :func:`wordnet` builds that folder once under
the contextlens cache (copies of the files in ``/usr/share/wordnet`` plus the fixed list of
lexicographer files written here) and returns a cached reader. The helpers expose what the
benchmarks need: usage examples with the target word located (inflections included), glosses,
and the SemCor sense counts that WordNet ships (``cntlist.rev``).

Set ``CONTEXTLENS_WORDNET_DIR`` to read the dictionary files from another folder.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contextlens.core.atomic_files import atomic_path, write_text
from contextlens.core.occurrences import ALPHA_WORD_RE, Occurrence
from contextlens.core.resources import cache_dir, note_rebuild
from contextlens.core.wordnet_files import SynsetEntry, read_synsets
from contextlens.errors import ContextlensError

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
INSTALL_HINT = "run scripts/install-system-deps.sh (Debian packages wordnet-base and wordnet-sense-index)"

# WordNet's lexicographer files, in file-number order (lexnames(5WN)): number, name, part of speech
# (1 noun, 2 verb, 3 adjective, 4 adverb). The Debian packages omit this file; NLTK needs it.
LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3),
    ("adj.pert", 3),
    ("adv.all", 4),
    ("noun.Tops", 1),
    ("noun.act", 1),
    ("noun.animal", 1),
    ("noun.artifact", 1),
    ("noun.attribute", 1),
    ("noun.body", 1),
    ("noun.cognition", 1),
    ("noun.communication", 1),
    ("noun.event", 1),
    ("noun.feeling", 1),
    ("noun.food", 1),
    ("noun.group", 1),
    ("noun.location", 1),
    ("noun.motive", 1),
    ("noun.object", 1),
    ("noun.person", 1),
    ("noun.phenomenon", 1),
    ("noun.plant", 1),
    ("noun.possession", 1),
    ("noun.process", 1),
    ("noun.quantity", 1),
    ("noun.relation", 1),
    ("noun.shape", 1),
    ("noun.state", 1),
    ("noun.substance", 1),
    ("noun.time", 1),
    ("verb.body", 2),
    ("verb.change", 2),
    ("verb.cognition", 2),
    ("verb.communication", 2),
    ("verb.competition", 2),
    ("verb.consumption", 2),
    ("verb.contact", 2),
    ("verb.creation", 2),
    ("verb.emotion", 2),
    ("verb.motion", 2),
    ("verb.perception", 2),
    ("verb.possession", 2),
    ("verb.social", 2),
    ("verb.stative", 2),
    ("verb.weather", 2),
    ("adj.ppl", 3),
)

# Files NLTK opens, and which Debian package ships each of them.
REQUIRED_FILES: dict[str, str] = {
    **{f"{kind}.{pos}": "wordnet-base" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")},
    **{f"{pos}.exc": "wordnet-base" for pos in ("noun", "verb", "adj", "adv")},
    "index.sense": "wordnet-sense-index",
    "cntlist.rev": "wordnet-sense-index",
}

# Bump when the extraction of usage examples below changes, so cached copies are rebuilt
# (2: the examples file also holds their counts, so the counts never need a second scan).
EXAMPLES_VERSION = 2


class WordNetNotInstalledError(ContextlensError):
    """The WordNet dictionary files are not installed on this machine."""


def source_dir() -> Path:
    """The folder holding WordNet's dictionary files (Debian's by default)."""
    return Path(os.environ.get("CONTEXTLENS_WORDNET_DIR") or DEBIAN_WORDNET_DIR)


def check_installed(folder: Path | None = None) -> Path:
    """The dictionary folder, or a one-line error naming the missing package and the fix."""
    folder = folder or source_dir()
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        packages = sorted({REQUIRED_FILES[name] for name in missing})
        raise WordNetNotInstalledError(
            f"WordNet 3.0 files missing in {folder} ({', '.join(missing[:3])}"
            f"{'...' if len(missing) > 3 else ''}; package {' and '.join(packages)}); {INSTALL_HINT}"
        )
    return folder


def nltk_root() -> Path:
    """Build (once) ``<cache>/nltk_data/corpora/wordnet``: the dictionary files plus ``lexnames``.

    The files are copied (~35 MB, once; refreshed when size or mtime change): NLTK 3.10's path
    sandbox refuses symlinks that resolve outside its corpus root and multiply-linked files. So a
    file with a second hard link (a cache copied with ``cp -al``) is copied again, which leaves
    the other link's file as it was.
    """
    folder = check_installed()
    root = cache_dir() / "nltk_data" / "corpora" / "wordnet"
    root.mkdir(parents=True, exist_ok=True)
    for name in REQUIRED_FILES:
        _mirror(folder / name, root / name)
    lexnames = "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(LEXNAMES))
    lex_path = root / "lexnames"
    if not _sole_file(lex_path) or lex_path.read_text() != lexnames:
        write_text(lex_path, lexnames)
    return root


def _mirror(source: Path, dest: Path) -> None:
    """Put an up-to-date copy of ``source`` at ``dest``, atomically."""
    src_stat = source.stat()
    if _sole_file(dest):
        dst_stat = dest.stat()
        if (dst_stat.st_size, dst_stat.st_mtime_ns) == (src_stat.st_size, src_stat.st_mtime_ns):
            return
    with atomic_path(dest) as tmp:
        shutil.copy2(source, tmp)


def _sole_file(path: Path) -> bool:
    """A regular file, not a symlink, with no other hard link: what NLTK's sandbox opens."""
    return path.is_file() and not path.is_symlink() and path.stat().st_nlink == 1


@functools.cache
def wordnet() -> WordNetCorpusReader:
    """NLTK's WordNet 3.0 reader over the Debian files (built once, then cached in-process)."""
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    root = nltk_root()
    if str(root.parent.parent) not in nltk.data.path:  # NLTK only opens files under its data roots
        nltk.data.path.append(str(root.parent.parent))

    class _DebianWordNet(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            """No mapping: these files are WordNet 3.0, NLTK's own "wordnet" (skips ~10 s at start)."""
            return None

    with warnings.catch_warnings():  # no Open Multilingual Wordnet here; English needs none
        warnings.simplefilter("ignore")
        try:
            return _DebianWordNet(str(root), None)
        except PermissionError as exc:  # NLTK's path sandbox refused a file of the copy
            raise WordNetNotInstalledError(
                f"NLTK refuses the WordNet copy in {root} ({str(exc).splitlines()[0]}); remove that folder "
                "and rerun: it is rebuilt from the dictionary files"
            ) from exc


# --- usage examples -----------------------------------------------------------------------


@dataclass(frozen=True)
class UsageExample:
    """One WordNet usage example with the lemma it illustrates located in the text."""

    synset: str  # e.g. "bank.n.01"
    lemma: str  # the lemma found in the text, e.g. "bank"
    pos: str  # n, v, a, r (satellites "s" are folded into "a")
    text: str
    start: int
    end: int

    @property
    def word(self) -> str:
        """The form written in the text ("banks" for the lemma "bank")."""
        return self.text[self.start : self.end]

    def occurrence(self) -> Occurrence:
        return Occurrence(self.text, self.start, self.end)


def find_lemma(text: str, lemma: str, pos: str) -> tuple[int, int] | None:
    """Character span of the first word in ``text`` whose base form (WordNet morphy) is ``lemma``.

    Handles inflections ("banks", "ran" for "run") through WordNet's own rules and exception
    lists. Only single-word lemmas are located; multi-word lemmas return None.
    """
    if "_" in lemma or " " in lemma:
        return None
    wn_pos = "a" if pos == "s" else pos
    target = lemma.lower()
    for m in ALPHA_WORD_RE.finditer(text):
        form = m.group().lower()
        if form == target or target in _morphy(form, wn_pos):
            return m.start(), m.end()
    return None


@functools.lru_cache(maxsize=1 << 17)
def _morphy(form: str, pos: str) -> tuple[str, ...]:
    """WordNet's base forms of ``form``, memoised: the usage-example scan asks 223,000 times about
    31,000 (form, pos) pairs ("the", "was" again and again). Bounded: a server asks about any word."""
    return tuple(wordnet()._morphy(form, pos))


def usage_examples() -> list[UsageExample]:
    """Every WordNet usage example whose synset has a single-word lemma found in the text.

    When several lemmas of the synset occur, the first in WordNet's order is taken. The list
    is deterministic (synsets in file order) and cached on disk after the first build (~2 CPU s
    of scan after ~3.5 s building NLTK's reader, whose morphy locates the lemmas),
    with the counts :func:`usage_example_stats` reports (made in the same scan).
    """
    cached = _read_cached_json(_examples_path())
    if isinstance(cached, dict) and isinstance(cached.get("examples"), list):
        return [UsageExample(**r) for r in cached["examples"]]
    examples, stats = _scan_usage_examples()
    write_text(_examples_path(), json.dumps({"examples": [asdict(e) for e in examples], "stats": stats}))
    write_text(_stats_path(), json.dumps(stats))
    return examples


def usage_example_stats() -> dict[str, int]:
    """How many examples WordNet has, and how many had a locatable single-word lemma. Cached in a
    small file of its own; a missing or damaged one is rebuilt from the examples file's copy."""
    cached = _read_cached_json(_stats_path())
    if isinstance(cached, dict):
        return cached
    examples = _read_cached_json(_examples_path())
    if not (isinstance(examples, dict) and isinstance(examples.get("stats"), dict)):
        usage_examples()  # scans WordNet once and writes both files
        examples = _read_cached_json(_examples_path())
    stats = examples["stats"]  # type: ignore[index]
    write_text(_stats_path(), json.dumps(stats))
    return stats


def _examples_path() -> Path:
    return cache_dir() / "wordnet" / f"usage-examples-v{EXAMPLES_VERSION}.json"


def _stats_path() -> Path:
    return cache_dir() / "wordnet" / f"usage-example-stats-v{EXAMPLES_VERSION}.json"


def _read_cached_json(path: Path) -> object | None:
    """A cached JSON file, or None when it is missing or damaged (then it is rebuilt, said in one line)."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (ValueError, OSError) as exc:
        note_rebuild(path, type(exc).__name__)
        return None


def synset_entries() -> Iterator[SynsetEntry]:
    """Every synset in NLTK's ``all_synsets`` order, with NLTK's names, lemma names, definitions
    and examples, read straight from the data files (:mod:`.wordnet_files`: ~1 CPU s, not ~15)."""
    return read_synsets(check_installed(), wordnet()._lemma_pos_offset_map)


def _scan_usage_examples(synsets: Iterable[SynsetEntry] | None = None) -> tuple[list[UsageExample], dict[str, int]]:
    """One pass over every synset (``synsets``: another reader's, for benchmarks/wordnet_scan.py):
    the located usage examples, and the counts of all examples."""
    examples: list[UsageExample] = []
    total = synsets_with_examples = 0
    for synset in synset_entries() if synsets is None else synsets:
        pos = "a" if synset.pos == "s" else synset.pos
        lemmas = synset.lemma_names
        texts = synset.examples
        total += len(texts)
        synsets_with_examples += bool(texts)
        for text in texts:
            text = text.strip()
            if not text:
                continue
            for lemma in lemmas:
                span = find_lemma(text, lemma, pos)
                if span is not None:
                    examples.append(UsageExample(synset.name, lemma.lower(), pos, text, span[0], span[1]))
                    break
    located = len(examples)
    stats = {"examples": total, "located": located, "not_located": total - located, "synsets": synsets_with_examples}
    return examples, stats


# --- glosses and sense counts -------------------------------------------------------------


def glosses() -> Iterator[tuple[str, str]]:
    """``(synset name, definition)`` for every synset, in file order."""
    for synset in synset_entries():
        yield synset.name, synset.definition


def sense_count(synset: str, lemma: str) -> int:
    """SemCor tag count of ``lemma`` in ``synset`` (from ``cntlist.rev``; 0 when untagged)."""
    reader = wordnet()
    for candidate in reader.synset(synset).lemmas():
        if candidate.name().lower() == lemma.lower():
            return int(candidate.count())
    raise ContextlensError(f"{lemma!r} is not a lemma of {synset}; pick one of its lemmas")


def sense_counts(lemma: str, pos: str) -> dict[str, int]:
    """SemCor counts of every sense of ``lemma`` with part of speech ``pos``, by synset name."""
    reader = wordnet()
    counts: dict[str, int] = {}
    for synset in reader.synsets(lemma, pos=pos):
        if pos == "a" and synset.pos() not in ("a", "s"):
            continue
        if pos != "a" and synset.pos() != pos:
            continue
        for candidate in synset.lemmas():
            if candidate.name().lower() == lemma.lower():
                counts[synset.name()] = int(candidate.count())
    return counts


# --- inflected forms ----------------------------------------------------------------------

_SIBILANT_ENDS = ("s", "x", "z", "ch", "sh")
_VOWELS = "aeiou"


def _plural_s(word: str, verb: bool) -> list[str]:
    """The regular -s form: boxes, carries; -o takes -es for verbs (goes, echoes), -s for nouns."""
    if word.endswith(_SIBILANT_ENDS):
        return [word + "es"]
    if len(word) > 1 and word.endswith("y") and word[-2] not in _VOWELS:
        return [word[:-1] + "ies"]
    if verb and len(word) > 1 and word.endswith("o") and word[-2] not in _VOWELS:
        return [word + "es"]
    if not verb and word.endswith("man") and (word.endswith("woman") or word[:-3] in wordnet()._lemma_pos_offset_map):
        return [word[:-3] + "men"]  # fire+man -> firemen; human -> humans
    return [word + "s"]


def _regular_slots(word: str, pos: str) -> dict[str, list[str]]:
    """Regular inflection candidates by slot; WordNet's exception lists replace a slot they fill."""
    if pos == "n":
        return {"plural": _plural_s(word, verb=False)}
    if pos == "v":
        if word.endswith("e"):
            past = [word + "d"]
        elif len(word) > 1 and word.endswith("y") and word[-2] not in _VOWELS:
            past = [word[:-1] + "ied"]
        else:
            past = [word + "ed"]
        if word.endswith("ie"):
            gerund = [word[:-2] + "ying"]
        elif word.endswith("e") and len(word) > 2 and not word.endswith(("ee", "ye", "oe")):
            gerund = [word[:-1] + "ing"]
        else:
            gerund = [word + "ing"]
        return {"third": _plural_s(word, verb=True), "past": past, "gerund": gerund}
    if pos == "a":
        vowel = [ch in _VOWELS + "y" for ch in word]
        syllables = sum(1 for i, v in enumerate(vowel) if v and (i == 0 or not vowel[i - 1]))
        if syllables != 1:  # longer adjectives compare with more/most
            return {}
        stem = word[:-1] if word.endswith("e") else word
        return {"comparative": [stem + "er"], "superlative": [stem + "est"]}
    return {}


def _exception_slot(form: str, pos: str) -> str:
    if pos == "n":
        return "plural"
    if pos == "v":
        return "gerund" if form.endswith("ing") else "third" if form in ("is", "has", "does") else "past"
    return "superlative" if form.endswith("st") else "comparative"


@functools.cache
def _exceptions_by_base() -> dict[tuple[str, str], tuple[str, ...]]:
    """WordNet's ``*.exc`` lists turned around: (base, pos) -> its irregular forms."""
    out: dict[tuple[str, str], list[str]] = {}
    for pos, table in wordnet()._exception_map.items():
        if pos == "s":  # satellites share the adjective list
            continue
        for form, bases in table.items():
            for base in bases:
                out.setdefault((base, pos), []).append(form)
    return {key: tuple(forms) for key, forms in out.items()}


@functools.cache
def inflected_forms(lemma: str) -> tuple[str, ...]:
    """The lemma and its inflected forms in WordNet 3.0 ("bank" -> bank, banks, banked, banking).

    For each part of speech the lemma has in WordNet, candidates come from the exception lists
    (``mice``, ``ran``, ``sprang``; an irregular form replaces the regular one of its slot, so no
    ``runned``) and from regular English endings (``-s/-es/-ies``, ``-ed/-d``, ``-ing``, and
    ``-er/-est`` for one-syllable adjectives); a candidate is kept only when WordNet's own
    ``morphy`` gives the lemma back as its base. A word WordNet does not know keeps only itself.
    """
    reader = wordnet()
    word = lemma.lower()
    if not word or "_" in word or " " in word:
        return (word,)
    forms = [word]
    known = reader._lemma_pos_offset_map.get(word, {})
    for pos in ("n", "v", "a", "r"):
        if pos not in known and not (pos == "a" and "s" in known):
            continue
        irregular = _exceptions_by_base().get((word, pos), ())
        slots = _regular_slots(word, pos)
        for form in irregular:
            slots.pop(_exception_slot(form, pos), None)
        candidates = [*irregular, *(c for cands in slots.values() for c in cands)]
        for form in candidates:
            if form not in forms and word in reader._morphy(form, pos):
                forms.append(form)
    return tuple(forms)


def base_forms(word: str) -> frozenset[str]:
    """The word (lowercase, a possessive ``'s`` dropped) and every base form WordNet's ``morphy``
    gives it in any part of speech: ``banks`` -> {banks, bank}, ``ran`` -> {ran, run}. Two words
    that share one can be forms of one lemma; a word WordNet does not know has only itself."""
    form = word.lower().removesuffix("'s").rstrip("'")
    if not form or not ALPHA_WORD_RE.fullmatch(form):
        return frozenset({form})
    reader = wordnet()
    return frozenset({form, *(base for pos in ("n", "v", "a", "r") for base in reader._morphy(form, pos))})
