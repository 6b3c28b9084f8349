"""The CLI as a face: output paths checked before the work, results never lost to a failed write,
usage errors as one line, --static none, the cut window, and --json equal to ``to_dict()``.

Commands run in-process through ``contextlens.cli.main`` (the real entry point: exit codes and
one-line errors included).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextlens.analyses.lesson.attention import attend
from contextlens.analyses.lesson.divergence import compare
from contextlens.analyses.lesson.polysemy import explore
from contextlens.analyses.lesson.probe import probe
from contextlens.analyses.lesson.ranking import load_pairs, rank_pairs
from contextlens.analyses.lesson.trace import trace
from contextlens.cli import main
from contextlens.core.occurrences import parse_marked
from contextlens.errors import InputError, OutputPathError
from contextlens.reports.output_paths import check_output_folder, check_output_path

PAIR = ["The [bank] approved the loan.", "We sat on the river [bank]."]
LONG = "word " * 700 + "the river [bank] flooded. " + "word " * 50
READ_ONLY = Path("/sys")  # a pseudo file system: refused even for root


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run `contextlens ARGS` in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    out, err = capsys.readouterr()
    return int(stop.value.code or 0), out, err


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- output paths ----------------------------------------------------------------------------


def test_check_output_path_adds_the_suffix_and_refuses_bad_places(tmp_path):
    assert check_output_path(tmp_path / "fig", (".png", ".svg")) == tmp_path / "fig.png"
    assert check_output_path(tmp_path / "fig.svg", (".png", ".svg")) == tmp_path / "fig.svg"
    with pytest.raises(OutputPathError, match=r"\.xyz.*\.png or \.svg"):
        check_output_path(tmp_path / "fig.xyz", (".png", ".svg"))
    with pytest.raises(OutputPathError, match="is a folder"):
        check_output_path(tmp_path, (".png",))
    with pytest.raises(OutputPathError, match="does not exist"):
        check_output_path(tmp_path / "missing" / "fig.png", (".png",))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OutputPathError, match="is a file"):
        check_output_path(tmp_path / "afile" / "fig.png", (".png",))
    with pytest.raises(OutputPathError, match="not writable"):
        check_output_path(READ_ONLY / "fig.png", (".png",))
    assert issubclass(OutputPathError, InputError)


def test_check_output_folder(tmp_path):
    assert check_output_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OutputPathError, match="is a file"):
        check_output_folder(tmp_path / "afile")
    with pytest.raises(OutputPathError, match="is a file"):
        check_output_folder(tmp_path / "afile" / "sub")
    with pytest.raises(OutputPathError, match="not writable"):
        check_output_folder(READ_ONLY / "contextlens-demo")


@pytest.mark.parametrize(
    "args",
    [
        ["compare", *PAIR, "-m", "minilm", "--plot", "f.xyz"],
        ["compare", *PAIR, "-m", "minilm", "--plot", str(READ_ONLY / "f.png")],
        ["compare", *PAIR, "-m", "minilm", "--html", str(READ_ONLY / "f.html")],
        ["compare", *PAIR, "-m", "minilm", "--html", "f.png"],
        ["trace", PAIR[0], "-m", "minilm", "--plot", "missing-folder/f.png"],
        ["eval", "wic", "--quick", "-m", "minilm", "--plot", "f.xyz"],
        ["eval", "contextuality", "--quick", "-m", "minilm", "--plot", str(READ_ONLY / "f.png")],
        ["demo", "-m", "minilm", "--out", str(READ_ONLY / "contextlens-demo")],
    ],
)
def test_a_bad_output_path_is_refused_before_the_work(capsys, args, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    import contextlens.core.contextual_models as cm

    def no_forward(*a, **k):  # the check must come first: no model may run
        raise AssertionError("the work ran before the output path was checked")

    monkeypatch.setattr(cm.ContextualModel, "encode_occurrences", no_forward)
    monkeypatch.setattr(cm.ContextualModel, "forward_one", no_forward)
    code, out, err = cli(capsys, *args)
    line = one_line_error(code, err)
    assert any(why in line for why in ("cannot be written", "is a", "not writable", "does not exist"))
    assert out == ""


def test_demo_out_that_is_a_file(capsys, tmp_path):
    target = tmp_path / "report"
    target.write_text("not a folder")
    code, _, err = cli(capsys, "demo", "-m", "minilm", "--out", str(target))
    assert "is a file" in one_line_error(code, err)


def test_plot_without_suffix_reports_the_file_it_wrote(capsys, tmp_path):
    code, out, err = cli(capsys, "compare", *PAIR, "-m", "minilm", "--json", "--plot", str(tmp_path / "fig"))
    assert code == 0, err
    assert (tmp_path / "fig.png").stat().st_size > 0
    assert f"figure written to {tmp_path / 'fig.png'}" in " ".join(err.split())
    json.loads(out)


def test_a_write_that_fails_after_the_work_keeps_the_printed_result(capsys, tmp_path, monkeypatch):
    import matplotlib.figure

    def disk_full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", disk_full)
    plot = str(tmp_path / "f.png")
    code, out, err = cli(capsys, "compare", *PAIR, "-m", "minilm", "--runtime", "torch", "--json", "--plot", plot)
    assert "No space left on device" in one_line_error(code, err)
    assert json.loads(out)["layers"]  # the result came out before the write failed


# --- usage errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["attention", "The [bank].", "--layer", "2.5"], "--layer"),
        (["compare", "--bogus"], "No such option: --bogus"),
        (["trace"], "Missing argument"),
        (["frobnicate"], "No such command"),
        (["eval", "wic", "--quick", "--model"], "requires an argument"),
    ],
)
def test_usage_errors_are_one_line(capsys, args, says):
    code, out, err = cli(capsys, *args)
    assert says in one_line_error(code, err)
    assert out == ""


def test_help_still_works(capsys):
    code, out, _ = cli(capsys, "compare", "--help")
    assert code == 0
    assert "Usage" in out and "--plot" in out


# --- attention --top, the cut window, --static none ----------------------------------------


def test_attention_refuses_top_zero_in_the_analysis(minilm, capsys):
    """The analysis names its parameter (top_k); the CLI says the option the user typed (--top)."""
    with pytest.raises(InputError, match="`top_k` must be at least 1"):
        attend([parse_marked(PAIR[0])], minilm, top_k=0)
    code, _, err = cli(capsys, "attention", PAIR[0], "-m", "minilm", "--top", "0")
    assert code == 2 and "--top must be at least 1" in err and "`" not in err


def test_attention_top_zero_on_the_command_line(capsys):
    code, _, err = cli(capsys, "attention", PAIR[0], "-m", "minilm", "--top", "0")
    assert "--top" in one_line_error(code, err)


@pytest.mark.parametrize("command", ["attention", "trace"])
def test_a_cut_text_says_its_window(capsys, command):
    code, out, err = cli(capsys, command, LONG, "-m", "minilm", "--json")
    assert code == 0, err
    doc = json.loads(out)
    item = doc["sentences"][0] if command == "attention" else doc
    assert item["truncated"] is True
    start, end = item["window"]
    assert 0 < start < LONG.index("[bank]") < end < len(LONG)
    code, out, err = cli(capsys, command, LONG, "-m", "minilm")
    assert code == 0, err
    assert f"only characters {start}-{end}" in " ".join(out.split())


def test_an_uncut_text_has_no_window(capsys):
    code, out, _ = cli(capsys, "trace", PAIR[0], "-m", "minilm", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["truncated"] is False and doc["window"] is None


def test_static_none_compares_words_glove_does_not_know(capsys):
    pair = ["我爱[银行]。", "他去[银行]了。"]
    code, _, err = cli(capsys, "compare", *pair, "-m", "minilm")
    assert "--static none" in one_line_error(code, err)
    code, out, err = cli(capsys, "compare", *pair, "-m", "minilm", "--static", "none", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["static_model"] is None and doc["static_cosine"] is None
    code, out, err = cli(capsys, "probe", pair[0], "--anchors", "river", "-m", "minilm", "--static", "none", "--json")
    assert code == 0, err
    assert json.loads(out)["static_model"] is None


def test_static_none_where_the_static_model_is_needed(capsys):
    code, _, err = cli(capsys, "rank", "-m", "minilm", "--static", "none")
    assert "needs a static model" in one_line_error(code, err)


# --- --json is to_dict() as it is ---------------------------------------------------------------


def _strict(result) -> object:
    return json.loads(json.dumps(result.to_dict(), allow_nan=False))


def test_json_equals_to_dict_for_every_lesson_result(capsys, minilm, glove):
    occs = [parse_marked(s) for s in PAIR]
    cases = [
        (compare(occs, minilm, glove), ["compare", *PAIR, "-m", "minilm", "--runtime", "torch"]),
        (
            explore(["bank"], minilm, None, -1, 50, 0),
            ["explore", "bank", "-m", "minilm", "--permutations", "50", "--runtime", "torch"],
        ),
        (rank_pairs(load_pairs(), minilm, glove), ["rank", "-m", "minilm", "--runtime", "torch"]),
        (attend(occs, minilm), ["attention", *PAIR, "-m", "minilm", "--runtime", "torch"]),
        (
            probe(occs[:1], ["river", "money"], minilm, static=glove),
            ["probe", PAIR[0], "-a", "river", "money", "-m", "minilm", "--runtime", "torch"],
        ),
        (trace(occs[0], minilm), ["trace", PAIR[0], "-m", "minilm", "--runtime", "torch"]),
    ]
    for result, args in cases:
        code, out, err = cli(capsys, *args, "--json")
        assert code == 0, (args, err)
        assert json.loads(out) == _strict(result), args


def test_json_equals_to_dict_for_a_quick_benchmark(capsys):
    from contextlens.analyses.benchmarks.suite import run_contextuality

    result = run_contextuality("minilm", "quick")
    code, out, err = cli(capsys, "eval", "contextuality", "--quick", "-m", "minilm", "--json")
    assert code == 0, err
    expected = _strict(result)
    got = json.loads(out)
    assert got["rows"] == expected["rows"]  # timings in meta differ between two runs
    assert got["meta"]["counts"] == expected["meta"]["counts"]
    assert expected["meta"]["counts"]["max_contexts_per_word"] >= 1


# --- the tables the faces render come from the analyses ------------------------------------------


def test_comparison_and_sense_table(minilm, glove):
    from contextlens.analyses.lesson.divergence import same_and_cross_by_layer, same_minus_cross

    sentences = [*PAIR, "She paid the cash into the [bank].", "Reeds grow along the [bank] of the stream."]
    labels = ["money", "river", "money", "river"]
    many = compare([parse_marked(s) for s in sentences], minilm, glove)
    assert len(many.lowest_pair_cosines) == len(many.layers)
    assert all(low <= mean for low, mean in zip(many.lowest_pair_cosines, many.layer_cosines, strict=True))
    assert many.most_divergent_cosine == many.layer_cosines[many.layers.index(many.most_divergent_layer)]
    rows = same_and_cross_by_layer(many, labels)
    assert [r[0] for r in rows] == many.layers
    for (_, same, cross, gap), m in zip(rows, many.matrices, strict=True):
        assert (same, cross) == same_minus_cross(m, labels)
        assert gap == pytest.approx(same - cross)


def test_benchmark_table_rows_pivot_the_tidy_rows():
    from contextlens.analyses.benchmarks.contextuality import TABLE_METRICS, table_rows
    from contextlens.analyses.benchmarks.suite import run_contextuality

    result = run_contextuality("minilm", "quick")
    rows = table_rows(result)
    assert [r["layer"] for r in rows] == sorted({r["layer"] for r in result.rows})
    for row in rows:
        for metric in TABLE_METRICS:
            assert row[metric] == result.select(layer=row["layer"], metric=metric)[0]["value"]
