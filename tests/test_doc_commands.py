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

Parsing is not running: what a recipe computes is tested where that analysis is.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SYNOPSIS = re.compile(r"\[|\||\.\.\.|…")


def _command_lines() -> list[tuple[str, str]]:
    """(where, line) for every command line in the docs' fenced code blocks."""
    found = []
    for path in DOCS:
        inside, pending = False, ""
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if raw.lstrip().startswith("```"):
                inside, pending = not inside, ""
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
                found.append((f"{path.relative_to(ROOT)}:{number}", re.sub(r"\s+#.*$", "", line)))
    return found


LINES = _command_lines()


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
    if SYNOPSIS.search(line):
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
