"""Issue 34 item 2: Ray actors placed per node, on GPUs where the cluster has them. No GPU here: what
the engine asks Ray for (``map_batches``' resources) is checked against a stand-in cluster, whose
``ray.data`` records the request; the real two-node runs are in test_corpus.py."""

from __future__ import annotations

import pytest

from contextlens.analyses.corpus import ray_engine
from contextlens.analyses.corpus.chunks import JobSpec
from contextlens.analyses.corpus.readers import ReadStats
from contextlens.analyses.corpus.stream import PendingChunks
from contextlens.analyses.corpus.targets import Matcher, form_table
from contextlens.errors import InputError


class _Dataset:
    def __init__(self, asked: dict) -> None:
        self.asked = asked

    def map_batches(self, fn, **kwargs):
        self.asked.update(kwargs)
        return self

    def iter_rows(self):
        return iter([])  # no answer: the request is what is checked


class _Data:
    def __init__(self) -> None:
        self.asked: dict = {}
        self.DataContext = type("DataContext", (), {"get_current": staticmethod(lambda: _Context())})

    def read_datasource(self, source, **kwargs):
        return _Dataset(self.asked)

    @staticmethod
    def ActorPoolStrategy(size: int):  # noqa: N802 - Ray's name
        return ("pool", size)


class _Context:
    target_max_block_size = 128


class FakeCluster:
    """``ray`` for a cluster of ``nodes`` (CPUs, GPUs) each."""

    def __init__(self, *nodes: tuple[int, int]) -> None:
        self._nodes = nodes
        self.data = _Data()

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": float(sum(c for c, _ in self._nodes)), "GPU": float(sum(g for _, g in self._nodes))}

    def nodes(self) -> list[dict]:
        return [
            {"NodeID": f"n{i}", "NodeManagerAddress": f"10.0.0.{i}", "Alive": True,
             "Resources": {"CPU": float(c), **({"GPU": float(g)} if g else {})}}
            for i, (c, g) in enumerate(self._nodes)
        ]  # fmt: skip


def _run(
    monkeypatch,
    cluster: FakeCluster,
    actors: int,
    tmp_path,
    threads: int | None = None,
    device: str = "cuda:0",
    lines: int | None = None,
    done: frozenset[int] = frozenset(),
    stats: ReadStats | None = None,
) -> dict:
    """A job of ``lines`` one-match lines (default: one an actor), each its own block."""
    monkeypatch.setattr(ray_engine, "start_ray", lambda address, cpus=None: cluster)
    monkeypatch.setattr(ray_engine, "BLOCK_OCCURRENCES", 1)
    corpus = tmp_path / "c.txt"
    corpus.write_text("The bank.\n" * (actors if lines is None else lines))
    matcher = Matcher(form_table(["bank"], False))
    spec = JobSpec("minilm", matcher, (6,), "mean", "float16", device=device)
    pending = PendingChunks(str(corpus), 1, "skip", done, "lines")
    return ray_engine.run_ray(
        spec, pending, lambda n, t: None, stats or ReadStats(), address="10.0.0.0:6379", actors=actors, threads=threads
    )


def test_on_gpu_nodes_each_actor_asks_for_a_gpu(monkeypatch, tmp_path):
    cluster = FakeCluster((8, 1), (8, 1))
    record = _run(monkeypatch, cluster, 2, tmp_path)
    asked = cluster.data.asked
    assert (asked["num_gpus"], asked["num_cpus"]) == (1, 8)
    assert asked["compute"] == ("pool", 2)
    assert record["actor_resources"] == {"num_cpus": 8, "num_gpus": 1}
    assert [(n["node_id"], n["cpus"], n["gpus"]) for n in record["nodes"]] == [("n0", 8, 1), ("n1", 8, 1)]


def test_a_cpu_job_asks_for_no_gpu_even_where_there_are_some(monkeypatch, tmp_path):
    cluster = FakeCluster((8, 1), (8, 1))
    record = _run(monkeypatch, cluster, 2, tmp_path, device="cpu")
    assert "num_gpus" not in cluster.data.asked and record["actor_resources"] == {"num_cpus": 8}


def test_without_gpus_no_actor_asks_for_one(monkeypatch, tmp_path):
    cluster = FakeCluster((2, 0), (2, 0))
    record = _run(monkeypatch, cluster, 2, tmp_path, device="cpu")
    assert "num_gpus" not in cluster.data.asked and cluster.data.asked["num_cpus"] == 2
    assert record["actor_resources"] == {"num_cpus": 2} and record["address"] == "10.0.0.0:6379"


def test_more_actors_than_gpus_is_refused_before_anything_runs(monkeypatch, tmp_path):
    cluster = FakeCluster((8, 1), (8, 0))
    with pytest.raises(InputError, match=r"3 actor\(s\) take a GPU each; the Ray cluster has 1"):
        _run(monkeypatch, cluster, 3, tmp_path, threads=2)  # the CPUs allow 3 actors of 2 threads
    assert cluster.data.asked == {}


def test_a_job_of_fewer_blocks_than_actors_starts_one_actor_a_block(monkeypatch, tmp_path):
    """The driver counts the read task's first blocks before the pool starts: an actor that would
    get no block (it imports torch and loads the model all the same) is not started."""
    cluster = FakeCluster((4, 0), (4, 0))
    record = _run(monkeypatch, cluster, 3, tmp_path, device="cpu", lines=2)
    assert cluster.data.asked["compute"] == ("pool", 2)
    assert record["actors"] == 3  # the manifest records the actors asked for, as before
    cluster = FakeCluster((4, 0), (4, 0))
    _run(monkeypatch, cluster, 3, tmp_path, device="cpu", lines=7)
    assert cluster.data.asked["compute"] == ("pool", 3)


def test_a_job_with_nothing_pending_starts_no_ray_job(monkeypatch, tmp_path):
    """Every chunk has its shard (a job killed before it was marked complete): the reader's counts
    come from the driver's own read, and no actor starts to encode nothing."""
    cluster = FakeCluster((2, 0))
    stats = ReadStats()
    record = _run(monkeypatch, cluster, 2, tmp_path, device="cpu", lines=2, done=frozenset({0, 1}), stats=stats)
    assert cluster.data.asked == {} and stats.documents == 2
    assert record["actors"] == 2 and record["actor_resources"] == {"num_cpus": 1}


def test_a_reader_error_in_the_first_blocks_stops_the_job_before_ray_runs_it(monkeypatch, tmp_path):
    from contextlens.errors import DataFileError

    cluster = FakeCluster((2, 0))
    monkeypatch.setattr(ray_engine, "start_ray", lambda address, cpus=None: cluster)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"The bank opened.\n\xff\xfe broken\n")
    spec = JobSpec("minilm", Matcher(form_table(["bank"], False)), (6,), "mean", "float16")
    pending = PendingChunks(str(bad), 1, "stop", frozenset(), "lines")
    with pytest.raises(DataFileError, match=r"bad.txt:2: not UTF-8"):
        ray_engine.run_ray(spec, pending, lambda n, t: None, ReadStats(), address="10.0.0.0:6379", actors=1)
    assert cluster.data.asked == {}


def test_the_actors_device_comes_from_the_clusters_gpus_not_the_drivers():
    from contextlens.analyses.corpus.ray_placement import actor_device
    from contextlens.errors import DeviceError

    assert actor_device("auto", "fp32", 2, [1, 1]) == "cuda:0"  # each actor's own GPU is its cuda:0
    assert actor_device("auto", "fp32", 2, [0, 0]) == "cpu"
    assert actor_device("auto", "int8", 2, [1, 1]) == "cpu"  # int8's kernels are the CPU's
    assert actor_device("cpu", "fp16", 2, [1, 1]) == "cpu"
    assert actor_device("cuda", "bf16", 1, [0, 2]) == "cuda:0"
    with pytest.raises(DeviceError, match="the Ray cluster at h:1 has no GPU; use `device` cpu"):
        actor_device("cuda", "fp32", 1, [0, 0], "the Ray cluster at h:1")
    with pytest.raises(DeviceError, match="sees as cuda:0; use `device` cuda"):
        actor_device("cuda:1", "fp32", 1, [2])
    with pytest.raises(DeviceError, match="CPU only"):
        actor_device("cuda", "int8", 1, [2])
    with pytest.raises(InputError, match=r"3 actor\(s\) take a GPU each; the Ray cluster has 2"):
        actor_device("auto", "fp32", 3, [1, 1])


def test_a_model_folder_without_weights_is_refused_without_loading_it(tmp_path):
    """The driver of a Ray job on torch fp32 reads only the model's facts: a folder with no weights
    file is refused there (what each actor's load would say, tests/test_corpus.py compares the two),
    and a folder with one, or whose config names its own, is left to the load."""
    import json
    from pathlib import Path

    from contextlens.core.model_facts import check_weights
    from contextlens.core.resources import resolve_contextual
    from contextlens.errors import UnknownModelError

    check_weights("minilm")
    folder = tmp_path / "weightless"
    folder.mkdir()
    source = Path(resolve_contextual("minilm")[1])
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        (folder / name).write_bytes((source / name).read_bytes())
    with pytest.raises(UnknownModelError, match=r"could not load model .*weightless.*no file named model\.safetensors"):
        check_weights(str(folder))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"transformers_weights": "weights.safetensors"}))
    check_weights(str(folder))
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "pytorch_model.bin.index.json").write_text("{}")
    check_weights(str(folder))


def test_the_driver_reads_at_most_two_blocks_of_chunks_ahead(monkeypatch, tmp_path):
    """Rare targets make blocks of BLOCK_CHUNKS chunks: the driver stops reading at AHEAD_BLOCKS of
    them and starts every actor asked for, as before, rather than read far into a large corpus."""
    monkeypatch.setattr(ray_engine, "BLOCK_CHUNKS", 2)
    corpus = tmp_path / "c.txt"
    corpus.write_text("The bank.\n" * 5)  # blocks of 2, 2 and 1 chunks
    matcher = Matcher(form_table(["absent"], False))
    source = ray_engine.CorpusSource(PendingChunks(str(corpus), 1, "skip", frozenset(), "lines"), matcher)
    assert ray_engine.blocks_ahead(source, 5) == (5, None)  # 4 chunks read: the cap
    monkeypatch.setattr(ray_engine, "AHEAD_BLOCKS", 3)
    blocks, seen = ray_engine.blocks_ahead(source, 5)
    assert blocks == 3 and seen is not None and seen.documents == 5
