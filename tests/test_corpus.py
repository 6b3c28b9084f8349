"""Corpus readers and the resumable extraction: every occurrence once, even after kill -9."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.folder import read_rows
from contextlens.analyses.corpus.readers import ReadStats, read_corpus
from contextlens.analyses.corpus.sentences import split_sentences
from contextlens.cli import main
from contextlens.core.resources import resolve_contextual
from contextlens.errors import DataFileError, UnknownModelError
from tests.helpers import HANG_SECONDS, run_cli

KEY = ["doc_id", "paragraph_index", "sentence_index", "start"]


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    out, err = capsys.readouterr()
    return int(stop.value.code or 0), out, err


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def keys(table: pa.Table) -> list[tuple]:
    return [tuple(r[k] for k in KEY) for r in table.select(KEY).to_pylist()]


def test_every_format_reads_the_same_documents(tmp_path):
    lines = ["The river bank flooded.", "She went to the bank. It was shut.", "Nothing here."]
    plain = tmp_path / "c.txt"
    plain.write_text("\n".join(lines) + "\n")
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(plain.read_bytes()))
    (tmp_path / "c.txt.bz2").write_bytes(bz2.compress(plain.read_bytes()))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines))
    pq.write_table(pa.table({"text": lines}), tmp_path / "c.parquet")
    expected = [d.pieces for d in read_corpus(str(plain), line_breaks="lines")]
    assert expected == [(t,) for t in lines]
    for name in ("c.txt.gz", "c.txt.bz2", "c.jsonl", "c.parquet"):
        assert [d.pieces for d in read_corpus(str(tmp_path / name), line_breaks="lines")] == expected, name
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "b.txt").write_text(lines[1])
    (folder / "a.txt").write_text(lines[0])
    assert [d.doc_id for d in read_corpus(str(folder))] == ["a.txt", "b.txt"]
    assert split_sentences(lines[1]) == ["She went to the bank.", "It was shut."]


def test_non_utf8_lines_are_skipped_and_counted_or_stop_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a good bank line\n\xff\xfe broken\nanother bank\n")
    stats = ReadStats()
    docs = list(read_corpus(str(bad), stats, line_breaks="lines"))
    assert len(docs) == 2 and stats.skipped == 1 and stats.skipped_where == [f"{bad}:2"]
    with pytest.raises(DataFileError, match=r"bad.txt:2: not UTF-8"):
        list(read_corpus(str(bad), on_error="stop"))


def test_installed_corpora_stream():
    first = next(read_corpus("lee"))
    assert first.doc_id == "lee:1" and "bushfire" in first.pieces[0]
    wn = next(read_corpus("wordnet"))
    assert wn.doc_id.endswith(".n.01") and len(wn.pieces) >= 1


def _corpus(path: Path, n: int) -> Path:
    lines = [
        f"Line {i}: the {'river bank was muddy' if i % 2 else 'bank raised its rates'}. Spring {i} came. No target."
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_extract_rows_rerun_and_refusals(tmp_path, capsys, minilm):
    corpus = _corpus(tmp_path / "c.txt", 12)
    out = tmp_path / "out"
    result = extract_corpus(
        str(corpus), ["bank", "Spring"], out, model="minilm", layers=[0, 6], chunk_chars=100, line_breaks="lines"
    )
    table = read_rows(out)
    assert table.num_rows == 24 and result.manifest.counts["per_target"] == {"bank": 12, "spring": 12}
    assert result.manifest.counts["sentences"] == result.stats.sentences == 36  # 3 sentences a line
    assert set(table.column("form").to_pylist()) == {"bank", "spring"}  # no --forms: the targets only
    assert len(set(keys(table))) == 24
    row = table.slice(0, 1).to_pylist()[0]
    assert row["sentence"][row["start"] : row["end"]].lower() == row["target"]
    assert table.schema.field("layer_6").type == pa.list_(pa.float16(), minilm.hidden_size)
    # the stored float16 vector is the core's encoding of that occurrence
    from contextlens.core.occurrences import Occurrence

    enc = minilm.encode_occurrences([Occurrence(row["sentence"], row["start"], row["end"])], layers=[6])[0]
    np.testing.assert_allclose(np.array(row["layer_6"], dtype=np.float32), enc.hidden[0], atol=2e-2, rtol=1e-2)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["layers"] == [0, 6] and manifest["model"] == "minilm"
    assert manifest["forms"] is False and manifest["precision"] == "fp32"
    shards = manifest["counts"]["shards"]
    assert 3 < shards < 12  # whole lines of ~60 characters, at least 100 characters a shard

    code, stdout, _ = cli(
        capsys,
        "corpus",
        "extract",
        str(corpus),
        "--words",
        "bank,spring",
        "--out",
        str(out),
        "--model",
        "minilm",
        "--layers",
        "0,6",
        "--chunk",
        "100",
    )
    stdout = " ".join(stdout.split())
    assert code == 0 and f"already complete (24 rows in {shards} shards); nothing to do" in stdout
    line = one_line_error(
        *cli(
            capsys,
            "corpus",
            "extract",
            str(corpus),
            "--words",
            "bank,spring",
            "--out",
            str(out),
            "--model",
            "minilm",
            "--layers",
            "0,5",
            "--chunk",
            "100",
        )[::2]
    )
    assert "layers=[0, 6]" in line
    line = one_line_error(
        *cli(
            capsys,
            "corpus",
            "extract",
            str(corpus),
            "--words",
            "bank,zebra",
            "--out",
            str(tmp_path / "z"),
            "--model",
            "minilm",
            "--layers",
            "6",
        )[::2]
    )
    assert "'zebra' never occur" in line
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    line = one_line_error(
        *cli(
            capsys,
            "corpus",
            "extract",
            str(empty),
            "--words",
            "bank",
            "--out",
            str(tmp_path / "e"),
            "--model",
            "minilm",
        )[::2]
    )
    assert "empty" in line
    assert not (tmp_path / "e").exists()  # nothing is written for a corpus with nothing in it
    line = one_line_error(
        *cli(
            capsys,
            "corpus",
            "extract",
            str(tmp_path / "missing.txt"),
            "--words",
            "bank",
            "--out",
            str(tmp_path / "m"),
            "--model",
            "minilm",
        )[::2]
    )
    assert "neither a file, a folder nor an installed corpus" in line
    assert not (tmp_path / "m").exists()


@pytest.mark.slow  # ~10-20 s on a loaded 2-core machine; CI runs it
def test_kill_9_then_rerun_gives_every_row_once(tmp_path, minilm):
    corpus = _corpus(tmp_path / "big.txt", 40)
    args = [
        "corpus",
        "extract",
        str(corpus),
        "--words",
        "bank,spring",
        "--model",
        "minilm",
        "--layers",
        "6",
        "--chunk",
        "1",
        "--line-breaks",
        "lines",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = tmp_path / "killed"
    proc = subprocess.Popen(  # a real process, to be killed
        [sys.executable, "-m", "contextlens", *args, "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + HANG_SECONDS  # a hang guard: under load the parts come later
    while len(list(out.glob("part-*.parquet"))) < 3 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not json.loads((out / "manifest.json").read_text())["complete"], "the job finished before the kill"
    assert 0 < len(list(out.glob("part-*.parquet"))) < 40
    done = run_cli(*args, "--out", str(out), "--json")  # the rerun needs no process of its own
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["manifest"]["complete"]
    assert not list(out.glob(".*tmp*"))
    table = read_rows(out)
    # what the rows must be, found independently: line i has 'bank' in sentence 0 and 'Spring' in sentence 1
    lines = corpus.read_text().splitlines()
    expected = sorted(
        [(f"big.txt:{i + 1}", 0, 0, line.index("bank")) for i, line in enumerate(lines)]
        + [(f"big.txt:{i + 1}", 0, 1, 0) for i in range(40)]
    )
    assert sorted(keys(table)) == expected and table.num_rows == 80
    from contextlens.core.occurrences import Occurrence

    rows = table.select(["sentence", "start", "end"]).to_pylist()
    encs = minilm.encode_occurrences([Occurrence(r["sentence"], r["start"], r["end"]) for r in rows], layers=[6])
    stored = np.array(table.column("layer_6").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(stored, np.stack([e.hidden[0] for e in encs]), atol=2e-2, rtol=1e-2)


@pytest.mark.slow
def test_ray_engine_gives_the_local_rows(tmp_path, ray_cluster):
    """Ray actors split, find (inflected forms too) and encode: the local engine's rows exactly."""
    corpus = _corpus(tmp_path / "c.txt", 40)
    with corpus.open("a") as fh:
        fh.write("Two banks merged after the springs dried up. Banking resumed.\n")
    local, remote = tmp_path / "local", tmp_path / "ray"
    common = dict(model="minilm", layers=[0, 6], chunk_chars=400, forms=True)
    done = extract_corpus(str(corpus), ["bank", "spring"], local, **common, line_breaks="lines")
    loads: list[tuple] = []  # the driver of a Ray job on torch fp32 loads no model: the actors do

    def loader(*args):
        loads.append(args)
        raise AssertionError("the Ray driver loaded the model")

    remote_done = extract_corpus(
        str(corpus), ["bank", "spring"], remote, engine="ray", actors=2, loader=loader, **common, line_breaks="lines"
    )
    assert loads == []
    same = ("model", "revision", "weights_sha256", "layers", "hidden_size", "precision", "runtime", "counts")
    assert {k: remote_done.manifest.to_dict()[k] for k in same} == {k: done.manifest.to_dict()[k] for k in same}
    a, b = read_rows(local), read_rows(remote)
    assert keys(a) == keys(b) and a.num_rows == 83
    assert a.column("form").to_pylist() == b.column("form").to_pylist()
    assert {"banks", "springs", "banking"} <= set(b.column("form").to_pylist())
    assert remote_done.stats.sentences == done.stats.sentences == 122
    assert 0 < len(remote_done.stats.actor_rss) <= 2  # the actors reported their memory
    assert all(peak >= now > 0 for peak, now in remote_done.stats.actor_rss.values())
    # each actor's start-up (started, model loaded; epoch seconds) for the benchmark's start-up figures
    assert remote_done.stats.actor_ready.keys() == remote_done.stats.actor_rss.keys()
    assert all(0 < born <= ready for born, ready in remote_done.stats.actor_ready.values())
    for col in ("layer_0", "layer_6"):
        x = np.array(a.column(col).to_pylist(), dtype=np.float32)
        y = np.array(b.column(col).to_pylist(), dtype=np.float32)
        np.testing.assert_allclose(x, y, atol=1e-3, rtol=0)


@pytest.mark.slow
def test_ray_streams_through_one_actor_pool_resumes_and_reports_reader_errors(tmp_path, ray_cluster):
    """One Ray Data stream for the whole job: 150 chunks (more than the 64-per-actor window the
    pool used to restart at) are encoded by at most 2 actor processes, each loading the model
    once; a resumed job encodes only the missing chunks; a reader's error is its own one line."""
    from contextlens.analyses.corpus.folder import shards

    corpus = _corpus(tmp_path / "c.txt", 150)
    common = dict(model="minilm", layers=[6], chunk_chars=1)
    local = extract_corpus(str(corpus), ["bank"], tmp_path / "local", **common, line_breaks="lines")
    out = tmp_path / "ray"
    first = extract_corpus(str(corpus), ["bank"], out, engine="ray", actors=2, **common, line_breaks="lines")
    assert first.stats.chunks_written == 150 and first.stats.read.documents == 150
    assert 0 < len(first.stats.actor_rss) <= 2  # one pool for the job (per window: 4 processes)
    assert keys(read_rows(out)) == keys(read_rows(tmp_path / "local"))
    assert first.manifest.counts == local.manifest.counts
    written = shards(out)
    for path in written[::3]:
        path.unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest | {"complete": False, "counts": {}}))
    # (one actor: what is resumed does not depend on the pool's size, and an actor's start is most of a job)
    again = extract_corpus(str(corpus), ["bank"], out, engine="ray", actors=1, **common, line_breaks="lines")
    assert (again.stats.chunks_written, again.stats.chunks_skipped) == (50, 100)
    assert again.manifest.counts == local.manifest.counts
    assert keys(read_rows(out)) == keys(read_rows(tmp_path / "local"))
    import ray

    from contextlens.analyses.corpus import ray_engine
    from contextlens.analyses.corpus.chunks import JobSpec
    from contextlens.analyses.corpus.stream import PendingChunks
    from contextlens.analyses.corpus.targets import Matcher, form_table

    def no_ray_job(*args, **kwargs):
        raise AssertionError("a Ray job started")

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"The bank opened.\n\xff\xfe broken\n")
    with pytest.MonkeyPatch.context() as patch:  # the driver reads the first blocks: refused before Ray runs
        patch.setattr(ray_engine, "_dataset", no_ray_job)
        with pytest.raises(DataFileError, match=r"bad.txt:2: not UTF-8"):
            extract_corpus(
                str(bad), ["bank"], tmp_path / "bad", engine="ray", on_error="stop", **common, line_breaks="lines"
            )
    # past those blocks, the read task meets it: the same one line out of Ray's wrapping (a failed
    # job, in the job's environment as run_ray runs it; no actor needed to read)
    matcher = Matcher(form_table(["bank"], False))
    source = ray_engine.CorpusSource(PendingChunks(str(bad), 1, "stop", frozenset(), "lines"), matcher)
    with ray_engine._environment(ray_engine.JOB_RAY_ENV):
        read = ray.data.read_datasource(source.datasource(), override_num_blocks=1, num_cpus=0)
        with pytest.raises(DataFileError, match=r"bad.txt:2: not UTF-8"):
            list(ray_engine._rows(read))
    # the driver reads a torch fp32 model's facts and only the actors load it: a folder whose
    # config is there but whose weights are not is refused by the driver before any actor starts,
    # with the typed error and the line an actor's load gives (carried back as its answer's row)
    weightless = tmp_path / "weightless"
    weightless.mkdir()
    model_source = Path(resolve_contextual("minilm")[1])
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        (weightless / name).write_bytes((model_source / name).read_bytes())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ray_engine, "_dataset", no_ray_job)
        with pytest.raises(
            UnknownModelError, match=r"could not load model .*weightless.*no file named model"
        ) as refused:
            extract_corpus(
                str(corpus),
                ["bank"],
                tmp_path / "w",
                engine="ray",
                model=str(weightless),
                layers=[6],
                line_breaks="lines",
            )
    spec = JobSpec(str(weightless), matcher, (6,), "mean", "float16")
    block = next(ray_engine.read_blocks(PendingChunks(str(corpus), 1, "skip", frozenset(), "lines"), matcher))
    (answer,) = ray_engine.ChunkEncoder(spec, 1)(block.to_pydict()).to_pylist()  # an actor's, in this process
    with pytest.raises(UnknownModelError) as failed:
        ray_engine._answer(answer, lambda n, t: None, ReadStats(), None)
    assert str(failed.value) == str(refused.value)
    # every job on this file's cluster is a contextlens job, failed ones included: none recorded
    # Ray Data's usage (its detached collector would be a process of ~3 CPU s; ray_engine.JOB_RAY_ENV)
    named = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)}
    assert "DataUsageCollectionActor" not in named, named


@pytest.mark.slow
def test_a_job_joins_a_two_node_ray_cluster_by_address_one_actor_a_node(tmp_path, monkeypatch, ray_cluster):
    """docs/corpus.md's multi-node recipe, on one machine: the session's Ray cluster of two nodes
    (two raylets, 1 CPU each, started by `ray start --head` and `ray start --address`), joined
    with `--address` by a driver not yet connected; the 2 actors of 1 thread can only run one a
    node, and the rows are the local engine's."""
    import ray

    from contextlens.analyses.corpus import ray_engine

    monkeypatch.setattr(ray_engine, "BLOCK_OCCURRENCES", 8)  # 60 occurrences: 8 blocks for 2 actors
    # Ray Data hands blocks to the first actor that is up; the blocks here are so small that it could
    # finish them all before the second one has loaded its model: both are up first, for this test
    context = ray.data.DataContext.get_current()
    monkeypatch.setattr(context, "wait_for_min_actors_s", 120)
    corpus = _corpus(tmp_path / "c.txt", 60)
    common = dict(model="minilm", layers=[6], chunk_chars=200)
    local = extract_corpus(str(corpus), ["bank"], tmp_path / "local", **common, line_breaks="lines")
    ray.shutdown()  # the job joins by the address it is given
    try:
        out = tmp_path / "ray"
        done = extract_corpus(
            str(corpus),
            ["bank"],
            out,
            engine="ray",
            address=ray_cluster.address,
            actors=2,
            threads=1,
            **common,
            line_breaks="lines",
        )
        assert ray.get_runtime_context().gcs_address == ray_cluster.address
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert len(nodes) == 2
        # the job's actor pool as the cluster's actor table keeps it (dead now the job is done)
        job = ray.JobID.from_hex(ray.get_runtime_context().get_job_id())
        pool = [a for a in ray._private.state.actors(job_id=job).values() if "ChunkEncoder" in a["ActorClassName"]]
    finally:
        if not ray.is_initialized():  # the session's other Ray tests run on the same cluster
            ray.init(address=ray_cluster.address, include_dashboard=False, log_to_driver=False)
    # two actor processes of 1 CPU each, one on each node (a node has 1 CPU)
    assert sorted(a["Address"]["NodeID"] for a in pool) == sorted(nodes), pool
    # which of them got blocks is Ray Data's choice, not ours: it hands a block to an actor on the
    # node that read it while that one has room, so when the reader is slower than the actor (this
    # suite on one worker, once) the other actor gets none. Each answer came from the pool
    assert 1 <= len(done.stats.actor_rss) <= 2 and set(done.stats.actor_rss) <= {a["Pid"] for a in pool}
    assert keys(read_rows(out)) == keys(read_rows(tmp_path / "local"))
    assert done.manifest.counts == local.manifest.counts
    # the manifest names the cluster's nodes, each with the actor that answered from it
    cluster = json.loads((out / "manifest.json").read_text())["cluster"]
    assert cluster["address"] == ray_cluster.address and cluster["actor_resources"] == {"num_cpus": 1}
    assert sorted(n["node_id"] for n in cluster["nodes"]) == sorted(nodes)
    assert {n["cpus"] for n in cluster["nodes"]} == {1}
    answered = [done.stats.actor_nodes[pid] for pid in done.stats.actor_rss]  # each answering actor's node
    assert {n["node_id"]: n["actors"] for n in cluster["nodes"]} == {node: answered.count(node) for node in nodes}
    placed = {a["Pid"]: a["Address"]["NodeID"] for a in pool}
    assert {pid: placed[pid] for pid in done.stats.actor_nodes} == done.stats.actor_nodes  # answered from there


@pytest.mark.slow
def test_a_ray_job_on_a_cluster_started_apart_resumes_after_its_driver_is_killed(tmp_path, ray_cluster):
    """Issue 34 item 2: `corpus extract --engine ray --address` against the cluster
    scripts/ray-cluster.sh started (two nodes), its driver a real process holding no model (no
    torch mapped in it), killed with SIGKILL mid-job; the same command again finishes it with
    every row exactly once, and the manifest names the nodes it ran on."""
    corpus = _corpus(tmp_path / "big.txt", 320)  # a chunk a line: 5 blocks of 64 chunks
    # one actor: its blocks one after another leave time to kill the driver between them, and an
    # actor's start is most of a job here (two actors a node: test_a_job_joins_a_two_node_...)
    args = ["corpus", "extract", str(corpus), "--words", "bank", "--model", "minilm", "--layers", "6",
            "--chunk", "1", "--line-breaks", "lines", "--engine", "ray", "--address", ray_cluster.address,
            "--actors", "1", "--threads", "1"]  # fmt: skip
    out = tmp_path / "killed"
    proc = subprocess.Popen(  # the driver, to be killed
        [sys.executable, "-m", "contextlens", *args, "--out", str(out)],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 600
    while not list(out.glob("part-*.parquet")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    maps = Path(f"/proc/{proc.pid}/maps").read_text() if proc.poll() is None else ""
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate()
    assert maps, f"the driver ended before the kill: {err.decode()[-2000:]}"
    assert "libtorch" not in maps and "/torch/" not in maps  # the actors hold the model, not the driver
    assert not json.loads((out / "manifest.json").read_text())["complete"], "the job finished before the kill"
    assert 0 < len(list(out.glob("part-*.parquet"))) < 320
    done = run_cli(*args, "--out", str(out), "--json")  # joins the same cluster from this process
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)["manifest"]
    assert manifest["complete"] and not list(out.glob(".*tmp*"))
    lines = corpus.read_text().splitlines()
    expected = sorted((f"big.txt:{i + 1}", 0, 0, line.index("bank")) for i, line in enumerate(lines))
    table = read_rows(out)
    assert sorted(keys(table)) == expected and table.num_rows == 320  # every row once
    cluster = manifest["cluster"]
    assert len(cluster["nodes"]) == 2 and cluster["address"] == ray_cluster.address
    assert sum(n["actors"] for n in cluster["nodes"]) == 1  # the actor that finished it, on one of them


@pytest.mark.slow
def test_the_documented_ray_line_runs_on_the_session_cluster(tmp_path, monkeypatch, ray_cluster):
    """docs/corpus.md's Ray line, taken from the doc, run in this process, which the session's
    two-node cluster already holds (a connected process is reused: no --address), on two short
    files and with minilm (its variant there): every occurrence, the local engine's rows."""
    from tests.test_doc_commands import documented

    words, _ = documented(
        "docs/corpus.md", "corpus extract news/ --words-file words.txt --out runs/news --engine ray --actors 2"
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "news").mkdir()
    (tmp_path / "news" / "a.txt").write_text("The bank raised rates.\n\nA fire reached the river bank.\n")
    (tmp_path / "news" / "b.txt").write_text("Fire crews worked all night. The bank stayed shut.\n")
    (tmp_path / "words.txt").write_text("bank\nfire\n")
    done = run_cli(*words)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "runs" / "news" / "manifest.json").read_text())
    assert manifest["complete"] and len(manifest["cluster"]["nodes"]) == 2  # on Ray: the session's two nodes
    rows = read_rows(tmp_path / "runs" / "news")
    assert rows.num_rows == 5  # bank 3 times, fire twice
    local = extract_corpus("news", ["bank", "fire"], tmp_path / "local", model="minilm", layers=manifest["layers"])
    assert sorted(keys(rows)) == sorted(keys(read_rows(tmp_path / "local")))
    assert local.manifest.counts == manifest["counts"]


def test_unreachable_ray_address_is_one_line(tmp_path, capsys):
    pytest.importorskip("ray")
    corpus = _corpus(tmp_path / "c.txt", 2)
    line = one_line_error(
        *cli(
            capsys,
            "corpus",
            "extract",
            str(corpus),
            "--words",
            "bank",
            "--out",
            str(tmp_path / "o"),
            "--model",
            "minilm",
            "--engine",
            "ray",
            "--address",
            "127.0.0.1:1",
        )[::2]
    )
    assert "does not answer" in line
    assert not (tmp_path / "o").exists()  # checked before anything is written


def test_ray_blocks_are_sized_by_the_matches_they_hold(tmp_path):
    """The read task closes a block at BLOCK_OCCURRENCES raw matches or BLOCK_CHUNKS chunks, so a
    forward call of a Ray actor holds a few hundred occurrences whatever the targets' rarity
    (blocks of a fixed 8 chunks: 7 blocks for 52 chunks of WordNet's examples, two actors 4 + 3)."""
    import pyarrow as pa

    from contextlens.analyses.corpus.ray_engine import END, read_blocks
    from contextlens.analyses.corpus.stream import PendingChunks
    from contextlens.analyses.corpus.targets import Matcher, form_table

    corpus = tmp_path / "c.txt"  # 40 lines; every line holds "bank" once and "Spring" once
    _corpus(corpus, 40)
    pending = PendingChunks(str(corpus), 1, "skip", frozenset(), "lines")  # chunk_chars 1: a chunk a line
    rows = pa.concat_tables(read_blocks(pending, Matcher(form_table(["bank", "spring"], False)), 5, 64)).to_pylist()
    assert rows[-1]["chunks"] == [END] and json.loads(rows[-1]["docs"][0])["documents"] == 40
    blocks = [r["chunks"] for r in rows[:-1]]
    assert [len(b) for b in blocks] == [3] * 13 + [1]  # 2 matches a chunk: closed at 6 >= 5
    assert [n for b in blocks for n in b] == list(range(40))  # every chunk once, in order
    rare = pa.concat_tables(read_blocks(pending, Matcher(form_table(["absent"], False)), 5, 16)).to_pylist()
    assert [len(r["chunks"]) for r in rare[:-1]] == [16, 16, 8]  # no match: closed at the chunk cap


def test_a_relative_corpus_path_is_read_where_the_driver_works(tmp_path, monkeypatch):
    """The Ray read task runs in a worker that works in another folder: docs/corpus.md's `corpus
    extract news/ ... --engine ray` stopped with "corpus 'news/' is neither a file, a folder nor
    an installed corpus". The source takes the driver's folder with it; a corpus name stays one."""
    import pyarrow as pa

    from contextlens.analyses.corpus.ray_engine import END, CorpusSource, read_blocks
    from contextlens.analyses.corpus.stream import PendingChunks
    from contextlens.analyses.corpus.targets import Matcher, form_table

    (tmp_path / "news").mkdir()
    _corpus(tmp_path / "news" / "a.txt", 3)
    matcher = Matcher(form_table(["bank"], False))
    monkeypatch.chdir(tmp_path)
    source = CorpusSource(PendingChunks("news/", 1, "skip", frozenset(), "lines"), matcher)
    assert CorpusSource(PendingChunks("lee", 1), matcher).pending.source == "lee"
    monkeypatch.chdir(tmp_path.parent)  # where a worker might work
    rows = pa.concat_tables(read_blocks(source.pending, source.matcher, 100, 64)).to_pylist()
    assert rows[-1]["chunks"] == [END] and json.loads(rows[-1]["docs"][0])["documents"] == 1  # a file a document
    assert [n for r in rows[:-1] for n in r["chunks"]] == [0] and "bank raised its rates" in rows[0]["docs"][0]


def test_a_ray_actor_answers_a_block_with_one_row_its_chunks_tables_inside(tmp_path):
    """A Ray Data task that yields a block per chunk held its actor ~60 ms a block before the next
    task could start (0.43 s between 1-second calls of 7 chunks: a quarter of a job's time with
    no forward); the actor's answer to a block is one row, and in it every chunk's own table,
    in order, the rows the local engine's functions give."""
    import pyarrow as pa

    from contextlens.analyses.corpus.chunks import JobSpec, encode_scanned, scan_chunk
    from contextlens.analyses.corpus.ray_engine import END, ChunkEncoder, read_blocks
    from contextlens.analyses.corpus.stream import PendingChunks
    from contextlens.analyses.corpus.targets import Matcher, form_table
    from contextlens.core.contextual_models import load_contextual

    corpus = _corpus(tmp_path / "c.txt", 12)
    matcher = Matcher(form_table(["bank", "spring"], False))
    spec = JobSpec("minilm", matcher, (0, 6), "mean", "float16")
    pending = PendingChunks(str(corpus), 1, "skip", frozenset(), "lines")  # a chunk a line
    block = next(read_blocks(pending, matcher, 100, 64))  # all 12 chunks in one block
    answer = ChunkEncoder(spec, 1)(block.to_pydict())
    assert isinstance(answer, pa.Table) and answer.num_rows == 1
    (row,) = answer.to_pylist()
    assert row["chunks"] == list(range(12)) and END not in row["chunks"]
    chunks = list(PendingChunks(str(corpus), 1, "skip", frozenset(), "lines").chunks(ReadStats()))
    expected = encode_scanned(load_contextual("minilm"), spec, [scan_chunk(spec, n, docs) for n, docs in chunks])
    for (number, table), payload in zip(expected, row["rows"], strict=True):
        assert pa.ipc.open_stream(pa.py_buffer(payload)).read_all().equals(table), number
