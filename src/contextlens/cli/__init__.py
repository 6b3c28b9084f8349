"""The ``contextlens`` command line. Command groups live in sibling modules.

Nothing here or in the command modules imports torch, transformers or gensim at module level:
``--help`` and a usage error answer without them (tests/test_lazy.py holds that).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from typing import Any, NoReturn

INTERRUPTED = 130  # the shell's code for a run stopped by SIGINT (128 + 2)


def interrupted() -> NoReturn:
    """Ctrl-C: one line on stderr and exit code 130, never a traceback. Later SIGINTs are ignored
    from here on: a second Ctrl-C, or the re-delivery of one that landed in a callback
    (:func:`_interrupt_again`), arriving while Python shuts down would kill it with the signal
    (exit -2) after the line was written."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _forget_unhandled_interrupt()
    sys.stderr.write("interrupted\n")
    raise SystemExit(INTERRUPTED)


def _exit_now(code: int) -> NoReturn:
    """End the command line's process now: output flushed and atexit handlers run (Ray's shutdown
    among them), but not torch's and the threads' teardown, which took 2.7-3.5 s after the
    "interrupted" line on a loaded machine (four CPU burners on 2 cores). Work left in other threads
    ends as under kill -9, which every file the project writes survives (written whole, then renamed)."""
    import atexit

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def _interrupted_now() -> NoReturn:
    """A Ctrl-C inside torch's import (held there, :mod:`contextlens.core.held_interrupts`): the one
    line and exit 130 at once, without waiting for the import to end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.stderr.isatty():
        sys.stderr.write("\x1b[?25h")  # a progress bar may have hidden the cursor
    sys.stderr.write("interrupted\n")
    _exit_now(INTERRUPTED)


def _forget_unhandled_interrupt() -> None:
    """CPython flags a KeyboardInterrupt that leaves code it evaluates for C (torch's import runs
    Python that way) as unhandled, though it is handled here, and at exit then kills the process
    with SIGINT: exit -2 after the "interrupted" line (3 of 40 runs of `compare --runtime torch`
    interrupted at 0.8-1.5 s, each with the flag set; strace shows SIG_DFL, then kill(self)).
    Cleared here, where the interrupt is handled; nothing on an interpreter without the flag."""
    try:
        import ctypes

        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ImportError, AttributeError, ValueError, OSError):
        pass


_unraisable = sys.unraisablehook


def _interrupt_again(info: Any) -> None:
    """A Ctrl-C that lands inside a callback Python runs for itself (an import lock's weakref
    callback, a finalizer) is printed as "Exception ignored" and dropped, and the run goes on:
    it is delivered again, to the code the callback returned to, so it stops the run as usual
    (from a thread, a moment later: sent from inside the hook it would land in the hook again)."""
    if info.exc_type is KeyboardInterrupt:
        import threading

        threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    _unraisable(info)


sys.unraisablehook = _interrupt_again


try:  # Ctrl-C while the command modules import is the same one line
    import typer

    try:  # typer 0.29+ vendors click and re-exports only BadParameter of its exceptions
        from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
    except ImportError:  # older typer runs on click itself
        from click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # type: ignore[no-redef]

    # Each module registers its commands on `app` (cli/registry.py) when imported.
    from contextlens.cli import (  # noqa: E402,F401
        attention,
        capacity,
        cka,
        compare,
        corpus,
        cost,
        demo,
        eval,
        explore,
        index,
        models,
        neighbors,
        prepare,
        probe,
        quiz,
        rank,
        same_sense,
        senses,
        serve,
        static,
        trace,
        tune,
    )
    from contextlens.cli.registry import app
    from contextlens.errors import ContextlensError, ParameterError
except KeyboardInterrupt:
    interrupted()


def main(args: list[str] | None = None) -> None:
    """Entry point: user mistakes, usage errors included, become one line on stderr and exit code 2;
    Ctrl-C at any point of the run becomes one line and exit code 130."""
    own_process = args is None  # the command line's own process (a test's main([...]) keeps its Ctrl-C)
    try:
        if own_process:
            from contextlens.core.held_interrupts import stop_at_interrupt

            stop_at_interrupt(_interrupted_now)
        try:
            _run(args)
        except KeyboardInterrupt:
            interrupted()
    except SystemExit as done:
        if own_process and done.code == INTERRUPTED:
            _exit_now(INTERRUPTED)
        raise
    finally:
        if own_process:
            _ignore_late_interrupts()


def _ignore_late_interrupts() -> None:
    """The run is over and its answer written: a Ctrl-C landing while Python shuts down (torch's
    and the threads' teardown, atexit) killed the process with the signal, exit -2 and no line
    (1 run in 10 of `trace` and `neighbors`). From here on it is ignored."""
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(args: list[str] | None) -> None:
    from contextlens.cli.common import rich_bar
    from contextlens.core.progress import set_progress_drawer

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    set_progress_drawer(rich_bar)  # core's progress bars, drawn by rich
    from contextlens.cli.common import notes_after_result

    notes_after_result(False)  # nothing an earlier run in this process kept (one not run by main) is said here

    try:
        refuse_repeated_options(sys.argv[1:] if args is None else args)
        code = click_app()(args=args, prog_name="contextlens", standalone_mode=False)
        notes_after_result(code in (None, 0))
        if code == INTERRUPTED:  # typer turns a KeyboardInterrupt inside a command into this code
            interrupted()
    except ParameterError as exc:  # the API names its parameter; say the flag the user typed, here and in the fix
        typed = sys.argv[1:] if args is None else args
        sys.stderr.write(f"error: {flags_for_parameters(exc.named(flag_of(exc.parameter, typed)), typed)}\n")
        sys.exit(2)
    except ContextlensError as exc:
        sys.stderr.write(f"error: {flags_for_parameters(str(exc), sys.argv[1:] if args is None else args)}\n")
        sys.exit(2)
    except UsageError as exc:  # bad option value, unknown option or command, missing argument
        if isinstance(exc, NoArgsIsHelpError):  # bare `contextlens` or `contextlens eval`
            exc.show()
            sys.exit(exc.exit_code)
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        sys.stderr.write(f"error: {exc.format_message()}{hint}\n")
        sys.exit(2)
    except ClickException as exc:
        sys.stderr.write(f"error: {exc.format_message()}\n")
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        interrupted()
    finally:
        notes_after_result(False)  # what an error skipped is not said in the next run of this process
    sys.exit(code if isinstance(code, int) else 0)


def refuse_repeated_options(args: list[str]) -> None:
    """An option that takes one value, given twice, is refused: click keeps the last silently, so
    ``trace ... -m minilm -m mpnet`` would answer for mpnet alone as if that were what was asked
    (compare, explore and same-sense declare --model as a list: two models side by side)."""
    command, words = click_app(), list(args)
    while hasattr(command, "commands") and words and words[0] in command.commands:
        command, words = command.commands[words[0]], words[1:]
    if hasattr(command, "commands"):
        return
    try:
        context = command.make_context(command.name, [], resilient_parsing=True)
        _, _, order = command.make_parser(context).parse_args(words)
    except (UsageError, ClickException):
        return  # the run itself says what is wrong with these words
    single = [p for p in order if getattr(p, "opts", None) and p.opts[0].startswith("-")
              and not (p.multiple or p.count or p.is_flag)]  # fmt: skip
    for param in dict.fromkeys(single):
        if single.count(param) > 1:
            name = max(param.opts, key=len)
            extra = (
                " (two models side by side: compare, explore and same-sense take --model twice)"
                if (name == "--model")
                else ""
            )
            raise UsageError(f"{name} was given {single.count(param)} times; it takes one value: give it once{extra}")


def flags_for_parameters(message: str, args: list[str]) -> str:
    """A message from the API names parameters in backticks (```top``); say each as the option of
    the command in ``args`` that sets it (``--top``). A name no option of the command sets stays."""

    def as_flag(match: re.Match[str]) -> str:
        flag = flag_of(match.group(1), args)
        return match.group(0) if flag == match.group(1) else flag

    return re.sub(r"`([a-z][a-z0-9_]*)`", as_flag, message)


_CLICK_APP: Any = None


def click_app() -> Any:
    """The click command tree typer builds from ``app``, built once per process: the run uses it,
    and so does :func:`flag_of` when a message names a parameter (a usage error used to build it a
    second time). typer's own ``app()`` builds it anew on every call."""
    global _CLICK_APP
    if _CLICK_APP is None:
        _CLICK_APP = typer.main.get_command(app)
    return _CLICK_APP


def flag_of(parameter: str, args: list[str]) -> str:
    """The option of the command named in ``args`` that sets the Python parameter ``parameter``
    (``nprobe`` -> ``--nprobe``); the parameter itself when no option of that command does."""
    command = click_app()
    for arg in args:
        sub = getattr(command, "commands", {}).get(arg)
        if sub is None:
            break
        command = sub
    for param in command.params:
        if param.name == parameter and param.opts:
            # an argument is said as its metavar (WORD): click's Argument has no human_readable_name in typer
            return max(param.opts, key=len) if param.param_type_name == "option" else param.name.upper()
    return parameter
