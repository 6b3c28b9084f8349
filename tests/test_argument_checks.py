"""Number arguments out of range are refused in one line that names what the user typed:
the API's ParameterError names the Python parameter, the CLI says the flag."""

from __future__ import annotations

import pickle

import pytest

from contextlens.analyses.representations.cka import compare_layers
from contextlens.analyses.search.cost import measure_cost
from contextlens.analyses.search.index_config import IndexConfig
from contextlens.cli import flag_of
from contextlens.core.arguments import whole_number
from contextlens.errors import InputError, ParameterError
from tests.helpers import run_cli

NO_MODEL = ["-m", "no-such-model"]  # a check that ran after loading would report the model instead


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["cost", "--count", "nan"], "error: --count must be a whole number, got float nan"),
        (["cost", "--count", "inf"], "error: --count must be a whole number, got float inf"),
        (["cost", "-n", "2.5"], "error: --count must be a whole number, got float 2.5"),
        (["cost", "--limit", "-1"], "error: --limit must be at least 1, got -1"),
        (["cost", "--repeats", "0"], "error: --repeats must be at least 1, got 0"),
        (["cka", "--limit", "-1"], "error: --limit must be at least 0, got -1"),
    ],
)
def test_cost_and_cka_refuse_bad_numbers_in_one_line_before_loading(args, line):
    proc = run_cli(*args, *NO_MODEL)
    assert proc.returncode == 2 and proc.stderr.strip() == line, proc.stderr


@pytest.mark.parametrize(
    ("index", "option", "value", "flag"),
    [
        ("ivfpq", "--nprobe", "0", "--nprobe"),  # was silently raised to 1
        ("hnsw", "--ef-search", "0", "--ef-search"),
        ("hnsw", "--m", "1", "--m"),
        ("ivfpq", "--nbits", "17", "--nbits"),
        ("ivfpq", "--nlist", "0", "--nlist"),
    ],
)
def test_index_build_refuses_search_knobs_out_of_range_before_loading(tmp_path, index, option, value, flag):
    docs = tmp_path / "docs.txt"
    docs.write_text("one\ntwo\n")
    out = str(tmp_path / "ix")
    proc = run_cli("index", "build", str(docs), "--out", out, "--index", index, option, value, *NO_MODEL)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {flag} must be "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "ix").exists()


def test_the_api_names_the_python_parameter():
    with pytest.raises(ParameterError, match="^nprobe must be at least 1, got 0$") as caught:
        IndexConfig("ivfpq", {"nprobe": 0})
    assert caught.value.parameter == "nprobe" and isinstance(caught.value, InputError)
    with pytest.raises(ParameterError, match="^ef_search "):
        IndexConfig("hnsw", {"ef_search": 0})
    for count in (float("nan"), float("inf"), -1, 0, 2.5, True, "5"):
        with pytest.raises(ParameterError, match="^count must be "):
            measure_cost("no-such-model", "no-such-static", ["a text"] * 8, count=count)
    with pytest.raises(ParameterError, match="^repeats "):
        measure_cost("no-such-model", "no-such-static", ["a text"] * 8, repeats=0)
    with pytest.raises(ParameterError, match="^limit must be at least 0, got -1$"):
        compare_layers("no-such-model", limit=-1)


def test_a_valid_nprobe_above_nlist_still_visits_every_list():
    assert IndexConfig("ivfpq", {"nlist": 4, "nprobe": 99}).resolved(1000, 64).params["nprobe"] == 4


def test_whole_number_takes_whole_floats_only_where_asked_and_numpy_ints():
    import numpy as np

    assert whole_number(1e6, "count", floats=True) == 1_000_000 and whole_number(np.int64(3), "k") == 3
    assert whole_number(0, "limit", minimum=0) == 0
    with pytest.raises(ParameterError, match=r"^count must be a whole number \(int\), got float 2.0$"):
        whole_number(2.0, "count")
    with pytest.raises(ParameterError, match="between 1 and 16, got 17"):
        whole_number(17, "nbits", minimum=1, maximum=16)


def test_flag_of_maps_a_parameter_to_the_commands_own_option():
    assert flag_of("count", ["cost", "--count", "nan"]) == "--count"
    assert flag_of("ef_search", ["index", "build", "docs.txt"]) == "--ef-search"
    assert flag_of("k", ["index", "search", "ix", "q"]) == "-k"
    assert flag_of("no_such", ["cost"]) == "no_such"  # no option sets it: the parameter's own name


def test_parameter_error_survives_pickling():  # Ray sends exceptions between processes
    error = pickle.loads(pickle.dumps(ParameterError("nprobe", "must be at least 1, got 0")))
    assert str(error) == "nprobe must be at least 1, got 0" and error.parameter == "nprobe"
