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

The quick recipes are also run (:func:`test_the_quick_documented_command_lines_run`): a line of
a command in :data:`RUN`, with the models it names shipped, runs in a fresh folder as written
(same-sense with ``--quick``, its documented smaller variant) and exits 0, or, where the docs
show the error it prints, exits 2 with that very line. What a recipe computes is tested where that
analysis is.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SYNOPSIS = re.compile(r"\[|\||\.\.\.|…")
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
            line = line.removeprefix("$ ").strip()
            if line.startswith("contextlens "):
                found.append((f"{path.relative_to(ROOT)}:{number}", re.sub(r"\s+#.*$", "", line), None))
                last = len(found) - 1
            elif last is not None and line:
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


# Commands quick enough to run in the suite: their recipes run as written (the shipped models).
RUN = frozenset({"compare", "same-sense", "explore", "rank", "attention", "probe", "trace", "models", "capacity"})
MODEL_OPTIONS = frozenset({"-m", "--model", "-s", "--static"})
# lines whose shown output needs what the reader makes first, though the line names no such model
NOT_RUN = {("docs/static.md", "contextlens rank -m minilm"): "its output is rank's with w2v-sg, a model made first"}


def _runnable() -> list[tuple[str, str, str | None]]:
    """The documented lines :func:`test_the_quick_documented_command_lines_run` runs: a command in
    :data:`RUN`, not a synopsis, naming only shipped models (a model the reader makes first, as
    ``w2v-sg`` or ``minilm-senses``, is not here), reading no file of the reader's own
    (``--sentences``) and measuring no build (``capacity --measure``: tests/test_capacity.py)."""
    from contextlens.core.resources import REGISTRY

    out = []
    for where, line, shown in SHOWN:
        words = shlex.split(line)[1:]
        named = [words[i + 1] for i, w in enumerate(words[:-1]) if w in MODEL_OPTIONS]
        if words[0] not in RUN or is_synopsis(line) or {"--measure", "--sentences"} & set(words):
            continue
        if (where.split(":")[0], line) in NOT_RUN:
            continue
        if all(name in REGISTRY for name in named):
            out.append((where, line, shown))
    return out


RUNNABLE = _runnable()


def test_the_quick_recipes_are_found():
    assert len(RUNNABLE) >= 10, RUNNABLE  # README's compare, the lesson's verbs, capacity's formulas
    assert any(line.startswith("contextlens compare") for _, line, _ in RUNNABLE)


@pytest.mark.parametrize(("where", "line", "shown"), RUNNABLE, ids=[w for w, _, _ in RUNNABLE])
def test_the_quick_documented_command_lines_run(where, line, shown, tmp_path, monkeypatch):
    from helpers import run_cli

    monkeypatch.chdir(tmp_path)  # a --plot two.png is written here
    words = shlex.split(line)[1:]
    if words[0] == "same-sense":
        words.append("--quick")  # the smaller variant: the rule tuned on the quick pairs (seconds)
    done = run_cli(*words)
    if shown is not None and shown.startswith("error:"):
        assert done.returncode == 2 and done.stderr.strip() == shown, f"{where}: {done.stderr}"
    else:
        assert done.returncode == 0, f"{where}: {line!r}: {done.stderr}"
        if shown is None or "..." in shown or "…" in shown:  # no output shown, or an excerpt of it
            assert done.stdout.strip(), f"{where}: {line!r} printed nothing"
        else:  # the block's first line of output is what the command prints (wrapping aside)
            printed = " ".join((done.stdout + done.stderr).split())
            assert " ".join(shown.split()) in printed, f"{where}: {shown!r} is not in what it printed: {printed[:600]}"
