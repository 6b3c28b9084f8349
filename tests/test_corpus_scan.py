"""Find before splitting: the scan splits only paragraphs that hold a target, and finds exactly
what splitting every paragraph finds (the rows of format 2, re-keyed by paragraph)."""

from __future__ import annotations

import itertools

import pytest

from contextlens.analyses.corpus.readers import read_corpus
from contextlens.analyses.corpus.sentences import split_sentences
from contextlens.analyses.corpus.targets import Matcher, form_table, scan_documents
from contextlens.core.occurrences import find_all


def split_everything(docs, matcher):
    """The scan before issue 21: every paragraph split, then each sentence searched."""
    sentences, found = 0, []
    for doc_id, pieces in docs:
        for p, piece in enumerate(pieces):
            split = split_sentences(piece)
            sentences += len(split)
            for s, sentence in enumerate(split):
                for occ in find_all(sentence, matcher.pattern):
                    found.append((doc_id, p, s, occ.text, occ.start, occ.end, *matcher.target_of(occ.word)))
    return sentences, found


def rows(found):
    return [(f.doc_id, f.paragraph_index, f.sentence_index, f.occurrence.text, f.occurrence.start,
             f.occurrence.end, f.target, f.form) for f in found]  # fmt: skip


def test_tricky_paragraphs_give_what_splitting_everything_gives():
    matcher = Matcher(form_table(("bank", "spring", "state"), forms=False))
    docs = [
        ("a", ("The river bank flooded. Mr. Bank (sic) said so.", "Nothing to see here. At all.",
               "   ", "Banking is not a bank; BANK! e.g. bank.Then bank", "Café bank. Ünited States.")),
        ("b", ("state-of-the-art springs spring's Spring.", "It was the U.S. state dept. Next.",
               "bank", "", "no match at all")),
    ]  # fmt: skip
    counts, found = scan_documents(docs, matcher)
    everything, expected = split_everything(docs, matcher)
    assert rows(found) == expected
    assert counts.paragraphs == 8 and counts.paragraphs_split == 6 and counts.paragraphs_skipped == 2
    assert counts.sentences < everything


def test_lee_with_forms_is_found_the_same_without_splitting_most_paragraphs():
    """Real text (the first 120 Lee documents), inflected forms on: the same rows, fewer splits."""
    matcher = Matcher(form_table(("fire", "government", "police"), forms=True))
    docs = [(d.doc_id, d.pieces) for d in itertools.islice(read_corpus("lee"), 120)]
    counts, found = scan_documents(docs, matcher)
    everything, expected = split_everything(docs, matcher)
    assert rows(found) == expected and len(expected) > 50
    assert counts.paragraphs == 120 and 0 < counts.paragraphs_split < counts.paragraphs
    assert counts.sentences < everything


def test_counts_are_recorded_and_survive_a_resume(tmp_path, minilm):
    """The manifest records paragraphs read and skipped; a resumed job counts the shards it skips."""
    import json

    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.analyses.corpus.folder import read_rows, shards
    from contextlens.errors import InputError

    lines = [f"Line {i}: the bank opened. It rained." if i % 3 == 0 else f"Line {i} has nothing." for i in range(30)]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    first = extract_corpus(str(corpus), ["bank"], out, model="minilm", layers=[6], chunk_chars=100, line_breaks="lines")
    counts = first.manifest.counts
    assert counts["paragraphs"] == 30 and counts["paragraphs_skipped"] == 20 and counts["sentences"] == 20
    assert (first.stats.paragraphs, first.stats.paragraphs_skipped, first.stats.sentences) == (30, 20, 20)
    table = read_rows(out)
    assert table.column("paragraph_index").to_pylist() == [0] * 10
    assert table.column("sentence_index").to_pylist() == [0] * 10
    # a job killed after some shards: the re-run skips them and still counts what they read
    written = shards(out)
    for path in written[len(written) // 2 :]:
        path.unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest | {"complete": False, "counts": {}}))
    again = extract_corpus(str(corpus), ["bank"], out, model="minilm", layers=[6], chunk_chars=100, line_breaks="lines")
    assert again.stats.chunks_skipped == len(written) // 2 and again.manifest.counts == counts
    assert (again.stats.paragraphs, again.stats.sentences) == (30, 20)
    # a format-2 folder (sentence_index within the document) is never continued with format-3 rows
    (out / "manifest.json").write_text(json.dumps(manifest | {"format": "contextlens-corpus/2", "complete": False}))
    try:
        extract_corpus(str(corpus), ["bank"], out, model="minilm", layers=[6], chunk_chars=100, line_breaks="lines")
    except InputError as exc:
        assert "format='contextlens-corpus/2'" in str(exc)
    else:
        raise AssertionError("a format-2 folder was continued")


def test_vector_values_are_arrow_arrays_over_the_same_bytes(monkeypatch):
    """The shard's vector columns are built over the matrix's bytes, equal to pa.array's values:
    never through pa.array, which goes value by value through Python on float16 (0.76 s for 300 x
    384 values, against 60 us over the bytes)."""
    import numpy as np
    import pyarrow as pa

    from contextlens.analyses.corpus.chunks import _values

    for dtype in (np.float16, np.float32):
        m = np.random.default_rng(0).standard_normal((300, 7, 384)).astype(dtype)[:, 3, :]  # a strided slice
        want = pa.array(np.ascontiguousarray(m).reshape(-1))
        with monkeypatch.context() as patch:
            patch.setattr(pa, "array", lambda *_a, **_k: pytest.fail("the values went through pa.array"))
            got = _values(m)
            flat = np.ascontiguousarray(m[:10])
            assert _values(flat).buffers()[1].address == flat.ctypes.data  # no copy of contiguous rows
        assert got.equals(want)
    assert len(_values(np.zeros((0, 384), dtype=np.float16))) == 0


def test_the_fast_markup_filter_gives_gensims_text_on_every_enwiki_page():
    """wiki_markup.filter_wiki is gensim's filter_wiki, faster: the same text on all 206 pages of
    the installed sample, and the same template removal on nested, unbalanced and tripled braces."""
    import bz2

    from gensim.corpora import wikicorpus as gensim_wiki

    from contextlens.analyses.corpus import wiki_markup
    from contextlens.analyses.corpus.readers import ENWIKI_FILE, _gensim_data

    with bz2.open(_gensim_data(ENWIKI_FILE), "rb") as fh:
        pages = [text for _, text, _ in gensim_wiki.extract_pages(fh)]
    assert len(pages) == 206
    for text in pages:
        assert wiki_markup.filter_wiki(text) == gensim_wiki.filter_wiki(text)
    for s in ("{{a}}", "{{{a}}}", "x{{a{{b}}c}}y", "{{", "}}{{x", "a{b}c{{d}", "{{a}}}}{{b}}", "{{{{a}}}}z", "{"):
        assert wiki_markup.remove_template(s) == gensim_wiki.remove_template(s), s


def test_the_local_engine_encodes_a_few_hundred_occurrences_in_one_call(tmp_path, minilm, monkeypatch):
    """300 occurrences over 9 chunks go to the core in ONE extraction call, sorted by length
    together: in groups of 256 (8 batches) Lee's forward padded 39% more tokens (24,940 vs 17,940)."""
    import contextlens.core.extraction as extraction
    from contextlens.analyses.corpus.extract import extract_corpus

    calls: list[int] = []
    bare = extraction.extract_targets

    def counted(model, toks, *args, **kwargs):
        calls.append(len(toks))
        return bare(model, toks, *args, **kwargs)

    monkeypatch.setattr(extraction, "extract_targets", counted)
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"Line {i}: the bank {'opened' if i % 2 else 'closed early'}.\n" for i in range(300)))
    done = extract_corpus(
        str(corpus), ["bank"], tmp_path / "out", model="minilm", layers=[1], chunk_chars=1000, line_breaks="lines"
    )
    assert done.manifest.counts["rows"] == 300 and done.manifest.counts["shards"] == 9
    assert calls == [300]
