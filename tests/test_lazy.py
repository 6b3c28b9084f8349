"""Lazy by construction: the package, ``--help`` and usage errors never import torch; Ctrl-C is one line.

Every check here runs in a fresh interpreter, since one test that loaded a model would hide an
eager import from the next.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import contextlens
from contextlens.core.model_facts import model_facts
from contextlens.errors import InputError, UnknownModelError
from tests.helpers import HANG_SECONDS

HEAVY = ("torch", "transformers", "gensim")

# Runs `contextlens ARGS` through the entry point and, at exit, writes which heavy packages it imported.
REPORTER = """
import atexit, json, sys
def report():
    with open(sys.argv[1], "w") as f:
        json.dump(sorted(m for m in {heavy!r} if m in sys.modules), f)
atexit.register(report)
from contextlens.cli import main
main(sys.argv[2:])
"""

# Sends this very process SIGINT when ``name`` is first imported: the signal lands at a chosen point.
TRIPWIRE = """
import os, signal, sys
class Trip:
    def find_spec(self, name, path=None, target=None):
        if name == sys.argv[1]:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Trip())
from contextlens.cli import main
main(sys.argv[2:])
"""


def _env() -> dict[str, str]:
    src = str(Path(contextlens.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": src, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _fresh(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    report = tmp_path / "imported.json"
    code = REPORTER.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code, str(report), *args], capture_output=True, text=True, env=_env(), timeout=120
    )
    return done, json.loads(report.read_text())


def test_import_contextlens_is_light_and_resolves_names_on_first_use():
    code = (
        "import sys, contextlens\n"
        f"before = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert set(contextlens.__all__) <= set(dir(contextlens)), 'dir() lists the public names'\n"
        "locate = contextlens.locate\n"
        "assert locate('The [bank] flooded.').word == 'bank'\n"
        "print(before, [m for m in ('torch', 'gensim') if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=HANG_SECONDS
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] []"  # not at import, and not for an API name that needs neither
    for name in contextlens.__all__:  # every public name resolves, to the object its module defines
        assert getattr(contextlens, name) is not None
    with pytest.raises(AttributeError):
        contextlens.no_such_name  # noqa: B018


def test_help_of_every_command_imports_no_torch(tmp_path: Path):
    code = (
        "import sys\nfrom contextlens.cli import app, main\nimport typer.main\n"
        "group = typer.main.get_command(app)\n"
        "paths = [[n] for n in group.commands] + [['eval', n] for n in group.commands['eval'].commands]\n"
        "for path in [[]] + paths:\n"
        "    try:\n        main([*path, '--help'])\n"
        "    except SystemExit as stop:\n        assert stop.code == 0, path\n"
        f"print(len(paths), [m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=HANG_SECONDS
    )
    assert done.returncode == 0, done.stderr
    count, imported = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(count) > 20 and imported == "[]"


@pytest.mark.parametrize(
    ("args", "message", "allowed"),
    [
        (("--help",), None, ()),
        (("compare", "The [bank is here.", "A [bank] was there.", "-m", "minilm"), "unbalanced markers", ()),
        (("compare", "The [bank] is here.", "A [bank] was there.", "-m", "nosuchmodel"), "unknown model", ()),
        # the static model is read (gensim), the contextual weights are not
        (
            ("compare", "The [qqzzxv] is here.", "A [qqzzxv] was there.", "-m", "minilm"),
            "not in the vocabulary",
            ("gensim",),
        ),
        (
            ("attention", "The [bank] is here.", "-m", "minilm", "--layer", "99"),
            "attention layer 99 is out of range",
            (),
        ),
        (
            ("probe", "The [bank] is here.", "-m", "minilm", "-a", "river", "--layer", "-9"),
            "layer -9 is out of range",
            (),
        ),
        (("rank", "/no/such/pairs.tsv", "-m", "minilm"), "/no/such/pairs.tsv", ()),
        (("cost", "--count", "nan", "-m", "minilm"), "--count must be a whole number", ()),
        (("cka", "--limit", "-1", "-m", "minilm"), "--limit must be at least", ()),
        (("index", "search", "/no/such/index", "money"), "does not exist", ()),
        (("eval", "wic", "-m", "nosuchmodel"), "unknown model", ()),
    ],
    ids=[
        "help",
        "bad-marker",
        "unknown-model",
        "word-not-in-glove",
        "attention-layer",
        "layer",
        "missing-file",
        "cost-count",
        "cka-limit",
        "index-search",
        "eval-model",
    ],
)
def test_usage_errors_answer_before_any_weights(tmp_path: Path, args, message, allowed):
    done, imported = _fresh(tmp_path, *args)  # what it imported, not how long it took, is the proof
    assert [m for m in imported if m not in allowed] == [], f"{args} imported {imported}"
    if message is None:
        assert done.returncode == 0 and "Usage" in done.stdout
        return
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_model_facts_match_the_loaded_model(minilm):
    facts = model_facts("minilm")
    assert facts is not None
    assert (facts.name, facts.num_layers, facts.hidden_size, facts.num_heads) == (
        minilm.name,
        minilm.num_layers,
        minilm.hidden_size,
        minilm.num_heads,
    )
    assert (facts.is_decoder, facts.max_length, facts.model_type) == (minilm.is_decoder, minilm.max_length, "bert")
    assert facts.check_layer(-1) == minilm.num_layers
    with pytest.raises(InputError, match="layer 7 is out of range for minilm: it has layers 0..6"):
        facts.check_layer(7)
    with pytest.raises(InputError, match="head 12 is out of range"):
        facts.check_attention(1, 12)
    with pytest.raises(UnknownModelError):
        model_facts("nosuchmodel")


def test_choices_are_the_sets_core_runs():
    from contextlens.core import choices, extraction, onnx_runtime, precision

    assert choices.POOLINGS == extraction.POOLINGS
    assert choices.RUNTIMES == onnx_runtime.RUNTIMES
    assert choices.PRECISIONS == precision.PRECISIONS


def _tripped(at: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TRIPWIRE, at, *args], capture_output=True, text=True, env=_env(), timeout=300
    )


@pytest.mark.parametrize(
    "at",
    ["rich.table", "contextlens.cli.trace", "contextlens.core.contextual_models"],
    ids=["importing-rich", "importing-commands", "during-work"],
)
def test_ctrl_c_is_one_line_and_exit_130(at: str):
    done = _tripped(
        at, "compare", "The [bank] called.", "The river [bank] flooded.", "-m", "minilm", "--static", "none"
    )
    assert (done.returncode, done.stderr) == (130, "interrupted\n"), done.stderr


def _wait_until_torch_is_loading(proc: subprocess.Popen) -> None:
    """Until torch's library is mapped into ``proc`` (its import has begun): a fixed sleep sent the
    signal during the interpreter's own start on a loaded machine, before the command line was in place."""
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + HANG_SECONDS
    while "libtorch" not in maps.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, "the command ended before torch loaded"
        time.sleep(0.01)


def test_ctrl_c_from_outside_while_a_model_loads():
    # the torch runtime: the lean ONNX path answers before a second has passed
    args = ["compare", "The [bank] called.", "The river [bank] flooded.", "-m", "minilm", "--static", "none"]
    args += ["--runtime", "torch"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextlens", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    _wait_until_torch_is_loading(proc)  # inside torch's import or the weights' load, however loaded the machine
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=HANG_SECONDS)
    assert (proc.returncode, err) == (130, "interrupted\n"), err


def test_a_late_sigint_after_the_interrupted_line_keeps_exit_code_130():
    # the re-delivery of a Ctrl-C that landed in a callback (or a second Ctrl-C) arriving while the
    # process winds down turned exit 130 into death by the signal (-2) after "interrupted" was
    # written: 4 runs in 34 of `compare --runtime torch` interrupted at 0.3-3.6 s
    script = (
        "import os, signal, threading, time\n"
        "from contextlens.cli import interrupted\n"
        "threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()  # still on its way\n"
        "try:\n"
        "    interrupted()\n"
        "finally:\n"
        "    time.sleep(0.6)  # a slow wind-down (torch's threads): the SIGINT lands in it\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=HANG_SECONDS
    )
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


def test_a_ctrl_c_after_a_finished_command_is_ignored_not_death_by_the_signal():
    # `trace` and `neighbors` died by the signal (exit -2) when the Ctrl-C landed after the answer
    # was printed, as the console script's `sys.exit(main())` wound down (1 run in 10): here it
    # lands just there, after main() is done. (A terminal's Ctrl-C handler is restored first: a
    # background job, as in CI's shell, starts with SIGINT ignored.)
    script = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "sys.argv = ['contextlens', 'models', '--json']\n"
        "from contextlens.cli import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(0.3)  # the interpreter winding down: the SIGINT lands here\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=HANG_SECONDS
    )
    assert (done.returncode, done.stderr) == (0, ""), (done.returncode, done.stderr[-300:])
    assert '"models"' in done.stdout


def test_a_ctrl_c_inside_a_callback_python_drops_still_stops_the_run():
    # a KeyboardInterrupt raised in a weakref callback (as in an import lock's) is "unraisable":
    # Python prints "Exception ignored" and goes on; the command line delivers it again
    script = (
        "import time, weakref\n"
        "from contextlens.cli import interrupted\n"
        "class A: pass\n"
        "a = A()\n"
        "r = weakref.ref(a, lambda _: (_ for _ in ()).throw(KeyboardInterrupt()))\n"
        "try:\n"
        "    del a\n"
        "    time.sleep(5)\n"
        "    print('went on')\n"
        "except KeyboardInterrupt:\n"
        "    interrupted()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=HANG_SECONDS
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "interrupted\n")


def test_the_web_app_loads_no_figure_builder_or_benchmark_before_a_request():
    # `serve` waited 0.9 s for sklearn and scipy.stats: the sense map took the plot style from the
    # figure builders, which import every analysis result type (the benchmarks among them)
    script = (
        "import sys\n"
        "from contextlens.web.app import create_app\n"
        "heavy = ('sklearn', 'scipy', 'plotly', 'pandas', 'torch', 'transformers', 'gensim', 'faiss')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=HANG_SECONDS
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_a_ray_jobs_driver_on_torch_fp32_imports_no_torch(tmp_path: Path):
    # the driver loaded the whole model (torch, transformers, the weights: ~3 s) only to read its
    # name, width and layers; now the actors load it and the driver reads config.json. The engine
    # is replaced by one that records what it was handed, so no Ray starts here.
    corpus = tmp_path / "c.txt"
    corpus.write_text("The bank of the river.\n")
    script = (
        "import json, sys\n"
        "from contextlens.analyses.corpus import engines, extract\n"
        "handed = {}\n"
        "engines.prepare = lambda *a: 1\n"
        "engines.run = lambda engine, spec, *a, **k: handed.update(model=spec.model, layers=spec.layers)\n"
        "try:\n"
        f"    extract.extract_corpus({str(corpus)!r}, ['bank'], {str(tmp_path / 'out')!r}, model='minilm',\n"
        "                           engine='ray', layers=[0, -1])\n"
        "except extract.InputError as exc:  # no engine ran, so no paragraph was read\n"
        "    handed['error'] = str(exc)\n"
        "handed['heavy'] = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "print(json.dumps(handed))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=_env(), timeout=HANG_SECONDS
    )
    assert done.returncode == 0, done.stderr
    handed = json.loads(done.stdout.strip().splitlines()[-1])
    assert handed["heavy"] == []
    assert (handed["model"], handed["layers"]) == ("minilm", [0, 6])
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert (manifest["hidden_size"], manifest["layers"], manifest["runtime"]) == (384, [0, 6], "torch")
