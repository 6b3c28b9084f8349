"""Every `contextlens` command line in the README and docs/ parses against the real CLI.

A recipe drifted from the CLI once (issue 33: docs/web.md's `corpus extract --word plant --layers
0 2 4 6` exits 2, "No such option: --word"). This reads every fenced code block of README.md and
docs/*.md, takes each line that runs `contextlens` (a `$ ` prompt, a trailing `# comment` and `\\`
continuations handled), and hands it to the command tree the entry point uses:

* a concrete line is parsed as the command line would parse it (options, their counts, the
  arguments; no command body runs, so no model loads): an unknown option, an option given too
  many values, or an extra argument fails the test;
* a synopsis line (``[--model mpnet]``, ``A|B``, ``...``) is checked option by option: each
  ``--flag`` it names exists on that command.

Every concrete line is also run (:func:`test_the_documented_command_lines_run`), in-process, in
a folder per doc shared by its lines in order (a search reads the index built a few lines up; a
line reading a folder an earlier line writes runs that line first when needed), on the shipped
models: ``eval`` and ``same-sense`` with ``--quick``, the static models a reader makes first
(``w2v-sg``, ``ft-sg``, ``m2v-minilm``) as conftest's ``made_statics`` makes them, the reader's
files made small (Lee's first 40 documents as ``lee_background.txt``), ``serve`` with its server
replaced by one that prepares the app and returns. A line long by nature runs as the smaller
variant its doc shows beside it (:data:`VARIANTS`); a line that needs what another test file sets
up (the session's PostgreSQL or Ray cluster, a tuned model) is run there, taken from here with
:func:`documented` (:data:`ELSEWHERE`); :func:`test_every_documented_line_is_run_or_says_where_it_is`
fails on a new line that is neither. ``static distill`` distills minilm's first
:data:`DISTILLED_TOKENS` vocabulary tokens (the whole vocabulary is a forward pass per token). Each
exits 0 or, where its doc shows the error it prints, exits 2 with that very line (numbers and made
names aside where the inputs were made smaller).
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SYNOPSIS = re.compile(r"\[|\||\.\.\.|…")
SHELL = ("python ", "source ", "export ", "cd ", "pip ")  # another command of a block, not output
QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")  # a sentence's [target] marker is not a synopsis bracket


def is_synopsis(line: str) -> bool:
    return bool(SYNOPSIS.search(QUOTED.sub('""', line)))


def _command_lines() -> list[tuple[str, str, str | None]]:
    """(where, line, the first line shown after it in its block or None) for every command line in
    the docs' fenced code blocks."""
    found: list[tuple[str, str, str | None]] = []
    for path in DOCS:
        inside, pending, last = False, "", None
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if raw.lstrip().startswith("```"):
                inside, pending, last = not inside, "", None
                continue
            if not inside:
                continue
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            prompted, line = line.startswith("$ "), line.removeprefix("$ ").strip()
            if line.startswith("contextlens "):
                found.append((f"{path.relative_to(ROOT)}:{number}", re.sub(r"\s+#.*$", "", line), None))
                last = len(found) - 1
            elif last is not None and line and not prompted and not line.startswith(SHELL):
                where, command, _ = found[last]
                found[last], last = (where, command, line), None
    return found


SHOWN = _command_lines()
LINES = [(where, line) for where, line, _ in SHOWN]


def _command(words: list[str]):
    """The click command a line names, and the words after its name."""
    from contextlens.cli import click_app

    command, rest = click_app(), words
    while hasattr(command, "commands") and rest and rest[0] in command.commands:
        command, rest = command.commands[rest[0]], rest[1:]
    return command, rest


def test_the_docs_have_command_lines_to_check():
    assert len(LINES) >= 40, LINES  # the README and docs hold about 60; a parsing slip would find none
    assert any("corpus extract" in line for _, line in LINES)


@pytest.mark.parametrize(("where", "line"), LINES, ids=[w for w, _ in LINES])
def test_every_documented_command_line_parses(where, line):
    try:  # the click the CLI runs on: typer's own copy (0.29+), else click itself
        from typer._click.exceptions import BadOptionUsage, NoSuchOption, UsageError
    except ImportError:
        from click.exceptions import BadOptionUsage, NoSuchOption, UsageError  # type: ignore[no-redef]

    words = shlex.split(line)[1:]
    command, rest = _command(words)
    if hasattr(command, "commands"):  # a group alone (`contextlens corpus`) or an unknown sub-command
        assert not rest or rest[0].startswith("-"), f"{where}: no command {rest[0]!r} in {line!r}"
        return
    options = {name for p in command.params for name in (*p.opts, *p.secondary_opts)}
    if is_synopsis(line):
        unknown = [f for f in re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", " ".join(rest)) if f not in options]
        assert not unknown, f"{where}: {line!r} names {unknown}, not options of this command"
        return
    try:
        command.make_context(command.name, list(rest), resilient_parsing=False)
    except (NoSuchOption, BadOptionUsage) as exc:
        pytest.fail(f"{where}: {line!r}: {exc.format_message()}")
    except UsageError as exc:
        message = exc.format_message()
        if "unexpected extra argument" in message or "No such option" in message:
            pytest.fail(f"{where}: {line!r}: {message}")
        # a value that needs the user's own file or folder (`lee-index`, `senses.tsv`) is theirs to give


# A documented line that is long by nature (a download, a million vectors, every line of a corpus) ->
# the smaller variant the doc gives beside it, which runs instead: the same command and options,
# only what makes it long changed, so a drifted option still fails here.
VARIANTS: dict[tuple[str, str], str] = {
    ("docs/corpus.md", "corpus extract enwiki --words bank,spring --out runs/bank --model minilm --layers 0,3,6"):
        "corpus extract lee --words bank,fire --out runs/bank --model minilm --layers 0,3,6",
    ("docs/corpus.md", "corpus extract enwiki --words bank,spring --forms --out runs/bank-forms --model minilm"):
        "corpus extract lee --words bank,spring --forms --out runs/bank-forms --model minilm",
    ("docs/corpus.md", "corpus extract lee --words fire --out runs/fire --precision int8 --threads 2"):
        "corpus extract lee --words fire --out runs/fire --precision int8 --threads 2 --model minilm",
    ("docs/corpus.md", "corpus plan enwiki --words bank,spring,state --model minilm --rate 20000"):
        "corpus plan lee --words bank,spring,state --model minilm --rate 20000",
    ("docs/corpus.md", "corpus extract big.txt --words bank --estimate --actors 4"):
        "corpus extract big.txt --words bank --estimate --actors 4 --model minilm",
    ("docs/search.md", "capacity --count 1000000 --dim 768 --index hnsw --m 16 --measure"):
        "capacity --count 1000000 --dim 768 --index hnsw --m 16 --measure --max-measure 2000",
    ("docs/static.md", "static train --name w2v-sg"):
        "static train lee --name w2v-sg --epochs 1 --dim 16",
    ("docs/web.md", "corpus extract CORPUS --words bank --out ./bank-x --model minilm --layers 0,2,4,6"):
        "corpus extract lee --words bank --out ./bank-x --model minilm --layers 0,2,4,6",
    ("docs/corpus.md", "corpus extract news/ --words-file words.txt --out runs/news --engine ray --actors 2"):
        "corpus extract news/ --words-file words.txt --out runs/news --engine ray --actors 2 --model minilm",
    ("docs/search.md", "capacity --engine pgvector -n 20000 -d 384 --index hnsw --dtype binary --measure"):
        "capacity --engine pgvector -n 2000 -d 384 --index hnsw --dtype binary --measure",
    ("docs/tuning.md", "tune minilm --name minilm-senses"):
        "tune minilm --name minilm-senses --layer 1 --max-lemmas 6 --max-steps 1 --lemmas-per-step 2 --no-onnx",
}  # fmt: skip

# Documented lines another test file runs, where what they need is already set up (the session's
# PostgreSQL or Ray cluster, a tuned model, a made word2vec in a cache of its own) -> that test, as
# ``file::function``. It takes the line from here with :func:`documented` (its variant where
# :data:`VARIANTS` has one), and :func:`test_each_line_run_elsewhere_is_run_by_the_test_it_names`
# fails when it stops doing so.
ELSEWHERE = {
    ("docs/static.md", "rank -m minilm"):
        "tests/test_static_lesson.py::test_rank_uses_a_made_word2vec_and_names_the_pairs_it_leaves_out",
    ("docs/corpus.md", "corpus extract news/ --words-file words.txt --out runs/news --engine ray --actors 2"):
        "tests/test_corpus.py::test_the_documented_ray_line_runs_on_the_session_cluster",
    ("docs/search.md", "index build docs.txt --out idx --model minilm --engine pgvector --index hnsw --dtype float16"):
        "tests/test_pgvector.py::test_the_documented_pgvector_lines",
    ("docs/search.md", 'index search idx "fire threatens houses" -k 3'):
        "tests/test_pgvector.py::test_the_documented_pgvector_lines",
    ("docs/search.md", "capacity --engine pgvector -n 20000 -d 384 --index hnsw --dtype binary --measure"):
        "tests/test_pgvector.py::test_the_documented_pgvector_lines",
    ("docs/tuning.md", "tune minilm --name minilm-senses"):
        "tests/test_tune.py::test_the_command_tunes_and_says_what_it_made",
    ("docs/tuning.md", "eval wic -m minilm-senses"):
        "tests/test_tune.py::test_the_documented_lines_run_on_a_tuned_model",
    ("docs/tuning.md", 'same-sense "The [bank] approved it." "We fished from the [bank]." -m minilm-senses'):
        "tests/test_tune.py::test_the_documented_lines_run_on_a_tuned_model",
}  # fmt: skip

# The static models a doc's reader makes first, as the shared fixture makes them (smaller, same kind).
MADE = {"w2v-sg": "word2vec", "ft-sg": "fasttext", "m2v-minilm": "distilled"}
TRAINED = "doc-test-w2v"  # `static train`'s name here, removed after (other tests list the made models)
DISTILLED = "doc-test-m2v"  # `static distill`'s, likewise
DISTILLED_TOKENS = 400  # the vocabulary tokens it distills: more than --pca-dims' 256, a second of forwards
QUICK = frozenset({"eval", "same-sense"})  # run with --quick, their documented smaller variant
# The reader's own files a line reads, made small in the doc's folder (senses.tsv as the doc shows it).
SMALL_INPUTS = frozenset({"lee_background.txt", "big.txt"})


def _key(where: str, line: str) -> tuple[str, str]:
    """How :data:`VARIANTS` and :data:`ELSEWHERE` name a line: its doc and the words after `contextlens`."""
    return where.split(":")[0], line.removeprefix("contextlens ")


def _planned() -> list[tuple[str, str, str | None]]:
    """(where, the line to run, the output shown after the documented line) for every documented
    line that is no synopsis and not in :data:`ELSEWHERE`."""
    return [
        (where, "contextlens " + VARIANTS.get(_key(where, line), _key(where, line)[1]), shown)
        for where, line, shown in SHOWN
        if not is_synopsis(line) and _key(where, line) not in ELSEWHERE
    ]


PLANNED = _planned()


def test_every_documented_line_is_run_or_says_where_it_is():
    """A new documented line is run here unless it is listed in ELSEWHERE with the test that runs it;
    a variant is shown in its doc, and no entry outlives its line."""
    concrete = {_key(where, line) for where, line in LINES if not is_synopsis(line)}
    stale = [key for key in (*VARIANTS, *ELSEWHERE) if key not in concrete]
    assert not stale, f"no longer in the docs: {stale}"
    for (doc, _), variant in VARIANTS.items():
        text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
        assert variant in text, f"{doc}: show {variant!r} beside its line"
    assert len(PLANNED) + len(ELSEWHERE) == len(concrete), "a line is neither run nor listed"
    assert len(PLANNED) >= 40, PLANNED


def documented(doc: str, line: str) -> tuple[list[str], list[str]]:
    """For the test :data:`ELSEWHERE` names: the words after `contextlens` it runs for ``line`` (its
    variant where it has one, ``--quick`` added as here) and the output the doc shows after it;
    fails once ``doc`` no longer shows the line."""
    key = (doc, line)
    assert key in ELSEWHERE, f"list {key} in tests/test_doc_commands.py's ELSEWHERE with the test that runs it"
    where = next((where for where, shown in LINES if _key(where, shown) == key), None)
    assert where is not None, f"{doc} no longer shows `contextlens {line}`"
    words = shlex.split(VARIANTS.get(key, line))
    quick = ["--quick"] if words[0] in QUICK and "--quick" not in words else []
    return [*words, *quick], _shown_output(where)


def _shown_output(where: str) -> list[str]:
    """The lines shown after the line at ``where`` in its block, up to the next command; ``...`` (a
    part left out) dropped."""
    doc, number = where.split(":")
    text = (ROOT / doc).read_text(encoding="utf-8").splitlines()[int(number) :]
    shown: list[str] = []
    for raw in text:
        if raw.lstrip().startswith(("```", "$ ", "contextlens ")):
            break
        if raw.strip() and not raw.strip().startswith(("...", "…")):
            shown.append(raw.strip())
    return shown


def masked(text: str) -> str:
    """``text`` with its numbers (a sign too: a τ-b of -0.05) as N and its runs of white space as one space."""
    return re.sub(r"(?:(?<![\w-])-)?\d[\d,.]*", "N", " ".join(text.split()))


def _calls(test: str) -> list[list[object]]:
    """The constant arguments of every ``documented(...)`` call in ``test`` (``file::function``)."""
    path, name = test.split("::")
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    function = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)
    assert function is not None, f"{path} has no function {name}"
    return [
        [a.value for a in call.args if isinstance(a, ast.Constant)]
        for call in ast.walk(function)
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "documented"
    ]


def test_each_line_run_elsewhere_is_run_by_the_test_it_names():
    """The test ELSEWHERE names takes that very line from the doc (``documented(DOC, LINE)``)."""
    for (doc, line), test in ELSEWHERE.items():
        assert [doc, line] in _calls(test), f"{test} does not run documented({doc!r}, {line!r})"


def _inputs(folder: Path) -> None:
    """The reader's files the docs' lines read, small: Lee's first 40 documents as
    lee_background.txt (the doc converts gensim's copy of all 300), a few lines of text, and
    senses.tsv with the malformed third line lesson.md shows."""
    import gensim.test.utils as gensim_data

    lee = Path(gensim_data.datapath("lee_background.cor")).read_text(encoding="latin-1").splitlines()
    (folder / "lee_background.txt").write_text("\n".join(lee[:40]) + "\n", encoding="utf-8")
    (folder / "big.txt").write_text("The bank lent money.\n\nWe sat on the river bank.\n", encoding="utf-8")
    (folder / "senses.tsv").write_text(
        "bank\tfinance\tThe [bank] lent money.\nbank\triver\tThe river [bank] flooded.\nbank\triver\tno marker here\n",
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def doc_folders(tmp_path_factory):
    """One working folder per doc, shared by its lines in order (a search reads the index its doc
    built a few lines up), with the reader's files made small."""
    folders: dict[str, Path] = {}

    def folder(doc: str) -> Path:
        if doc not in folders:
            folders[doc] = tmp_path_factory.mktemp(doc.replace("/", "-"))
            _inputs(folders[doc])
        return folders[doc]

    return folder


@pytest.fixture()
def no_port(monkeypatch):
    """`serve`'s server replaced by one that prepares the app (its checks of --index and --corpus
    folders) and returns: the command runs in-process, no port opens (as tests/test_web_serve.py)."""
    from types import SimpleNamespace

    from contextlens.cli import serve
    from contextlens.web import http_server

    def prepared(app, *args, **kwargs):
        app.wait()
        return SimpleNamespace(interrupted=False, started=True)

    monkeypatch.setattr(http_server, "serve_app", prepared)
    monkeypatch.setattr(serve, "check_address", lambda host, port: None)


def _words(line: str, made: dict[str, str]) -> list[str]:
    words = [made.get(w, w) for w in shlex.split(line)[1:]]
    own = {"train": TRAINED, "distill": DISTILLED}
    if words[0] == "static" and words[1] in own:  # made under a name of its own, not the shared fixture's
        words[words.index("--name") + 1] = own[words[1]]
        words.append("--force")
    if words[0] in QUICK and "--quick" not in words:
        words.append("--quick")
    return words


def _run_planned(where: str, line: str, folder: Path, made: dict[str, str]):
    """Run a planned line in its doc's folder, first the doc's earlier line that writes a folder it
    reads (``--out lee-index``) when that folder is not there yet."""
    from helpers import run_cli

    words = _words(line, made)
    doc = where.split(":")[0]
    for earlier, other, _ in PLANNED:
        if earlier.split(":")[0] != doc or other == line:
            continue
        out = shlex.split(other)
        out = out[out.index("--out") + 1] if "--out" in out else None
        if out and (out in words or any(w.endswith(f"={out}") for w in words)) and not (folder / out).exists():
            assert _run_planned(earlier, other, folder, made).returncode == 0, f"{earlier}: {other!r}"
    return run_cli(*words)


def _forget(name: str) -> None:
    import shutil

    from contextlens.core.static_store import made_root

    shutil.rmtree(made_root() / name, ignore_errors=True)


@pytest.mark.parametrize(("where", "line", "shown"), PLANNED, ids=[w for w, _, _ in PLANNED])
def test_the_documented_command_lines_run(where, line, shown, doc_folders, made_statics, no_port, monkeypatch):
    """Each runs on the shipped models (the made ones as conftest makes them), in its doc's folder,
    and exits 0 or, where the doc shows the error it prints, exits 2 with that line. A line run as
    written on the reader's inputs prints the block's first output line; one run on smaller inputs
    or made models prints its error with only the numbers and names changed."""
    from contextlens.analyses.static import distill

    folder = doc_folders(where.split(":")[0])
    monkeypatch.chdir(folder)  # a --plot two.png, an --out runs/bank is written here
    if line.startswith("contextlens static distill "):  # minilm's first tokens, as conftest's made_statics
        full = distill.vocabulary_tokens
        monkeypatch.setattr(distill, "vocabulary_tokens", lambda tokenizer: full(tokenizer)[:DISTILLED_TOKENS])
    made = {name: made_statics[kind] for name, kind in MADE.items()}
    try:
        done = _run_planned(where, line, folder, made)
    finally:
        _forget(TRAINED)
        _forget(DISTILLED)
    documented = next(d for w, d, _ in SHOWN if w == where)
    as_written = line == documented and not any(name in f"{line} {shown}" for name in (*SMALL_INPUTS, *MADE))
    if shown is not None and shown.startswith("error:"):
        assert done.returncode == 2, f"{where}: {line!r}: {done.stderr}"
        if as_written:
            assert done.stderr.strip() == shown, f"{where}: {done.stderr}"
        else:
            for name, fixture in made.items():
                shown = shown.replace(name, fixture)
            assert masked(done.stderr) == masked(shown), f"{where}: {done.stderr}"
    else:
        assert done.returncode == 0, f"{where}: {line!r}: {done.stderr}"
        if not as_written or shown is None or "..." in shown or "…" in shown:  # no output shown, an excerpt
            assert (done.stdout + done.stderr).strip(), f"{where}: {line!r} printed nothing"
        else:  # the block's first line of output is what the command prints (wrapping aside)
            printed = " ".join((done.stdout + done.stderr).split())
            assert " ".join(shown.split()) in printed, f"{where}: {shown!r} is not in what it printed: {printed[:600]}"
