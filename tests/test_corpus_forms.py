"""--forms: targets also match their inflected forms (WordNet 3.0), on real corpus text."""

from __future__ import annotations

import json
import re

import pytest

from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.folder import read_rows
from contextlens.analyses.corpus.readers import read_corpus
from contextlens.analyses.corpus.targets import Matcher, form_table
from contextlens.cli import main
from contextlens.core.wordnet import inflected_forms, wordnet
from contextlens.errors import InputError


def test_inflected_forms_come_from_wordnet():
    assert {"bank", "banks", "banked", "banking"} <= set(inflected_forms("bank"))
    run = inflected_forms("run")
    assert {"runs", "ran", "running"} <= set(run) and not {"runned", "runing", "runed"} & set(run)
    assert "mice" in inflected_forms("mouse")
    spring = inflected_forms("spring")
    assert {"springs", "sprang", "sprung"} <= set(spring) and "springed" not in spring
    assert {"better", "best"} <= set(inflected_forms("good"))
    assert inflected_forms("zzyzxq") == ("zzyzxq",)  # unknown to WordNet: itself only
    reader = wordnet()  # every form really has the lemma as a base, by WordNet's own morphy
    for form in inflected_forms("carry")[1:]:
        assert any("carry" in reader._morphy(form, pos) for pos in "nvar"), form


def test_a_shared_form_goes_to_one_target():
    table = dict(form_table(("see", "saw"), forms=True))
    assert table["saw"] == "saw" and table["seen"] == "see"  # the target spelled so wins
    m = Matcher(form_table(("bank",), forms=True))
    assert m.target_of("BANKING") == ("bank", "banking")


def _lee_bank_lines(path):
    """Real news text: the Lee corpus' documents that hold an inflected form of 'bank' (8 of the 28
    that hold any form; most hold 'bank' too): every form the test counts, at a third of the encoding."""
    inflected = re.compile(r"\bbank(s|ed|ing)\b", re.IGNORECASE)
    lines = [" ".join(d.pieces) for d in read_corpus("lee") if inflected.search(" ".join(d.pieces))]
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_forms_find_banks_and_banking_in_lee(tmp_path, minilm, capsys):
    lines = _lee_bank_lines(tmp_path / "lee-bank.txt")
    corpus = str(tmp_path / "lee-bank.txt")
    plain = extract_corpus(corpus, ["bank"], tmp_path / "plain", model="minilm", layers=[6], chunk_chars=4000)
    forms = extract_corpus(
        corpus, ["bank"], tmp_path / "forms", model="minilm", layers=[6], chunk_chars=4000, forms=True
    )
    text = "\n".join(lines)
    expected = {f: len(re.findall(rf"\b{f}\b", text, re.IGNORECASE)) for f in ("bank", "banks", "banking")}
    assert expected["bank"] > 0 and expected["banks"] > 0 and expected["banking"] > 0
    without, with_forms = read_rows(tmp_path / "plain"), read_rows(tmp_path / "forms")
    assert without.num_rows == plain.manifest.counts["rows"] == expected["bank"]
    assert set(without.column("form").to_pylist()) == {"bank"}
    per_form = forms.manifest.counts["per_form"]
    assert {f: per_form.get(f, 0) for f in expected} == expected
    assert set(with_forms.column("target").to_pylist()) == {"bank"}  # the lemma asked for
    for row in with_forms.select(["sentence", "start", "end", "form"]).to_pylist():
        assert row["sentence"][row["start"] : row["end"]].lower() == row["form"]
    manifest = json.loads((tmp_path / "forms" / "manifest.json").read_text())
    assert manifest["forms"] is True and manifest["complete"]

    # a folder extracted without forms is not continued with --forms: one line, exit 2
    with pytest.raises(SystemExit) as stop:
        main(["corpus", "extract", corpus, "--words", "bank", "--forms", "--out", str(tmp_path / "plain"),
              "--model", "minilm", "--layers", "6", "--chunk", "4000"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "forms=False" in err[0], err


def test_another_precision_in_the_folder_is_refused(tmp_path, minilm):
    corpus = tmp_path / "c.txt"
    corpus.write_text("The bank was closed.\n")
    extract_corpus(str(corpus), ["bank"], tmp_path / "o", model="minilm", layers=[6])
    with pytest.raises(InputError, match="precision='fp32', not 'int8'"):
        extract_corpus(str(corpus), ["bank"], tmp_path / "o", model="minilm", layers=[6], precision="int8")
