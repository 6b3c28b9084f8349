"""The managed platforms' documented formulas (OpenSearch k-NN, Azure AI Search, Vertex AI Vector Search),
checked against the arithmetic done by hand from each vendor's page. Nothing here is measured: the
platforms cannot run on this machine, and every answer says so."""

from __future__ import annotations

import json

import pytest

from contextlens.analyses.search.platforms import LABEL, azure, opensearch, platform_capacity, vertex
from contextlens.errors import ParameterError
from helpers import run_cli

GIB = 2**30


def test_opensearch_hnsw_matches_the_vendors_worked_example_and_replicas_double_it():
    # the page's example: 1,000,000 vectors, d = 256, m = 16: 1.1 * (4*256 + 8*16) * 1e6 ~= 1.267 GB
    one = opensearch(1_000_000, 256, m=16, replicas=0)
    assert one.bytes_per_vector == pytest.approx(1267.2) and one.bytes == 1_267_200_000
    two = opensearch(1_000_000, 256, m=16, replicas=1)
    assert two.bytes == 2 * 1_267_200_000
    # 64 GiB node, heap 32 GiB (half, capped at 32): breaker 50% of 32 GiB = 16 GiB; 16 GiB / (1267.2 * 2)
    assert two.budget_bytes == 16 * GIB and two.fits == (16 * GIB * 10) // (12672 * 2)
    # the settings page's example: 100 GB machine, 32 GB heap -> 34 GB for the graphs
    assert opensearch(1, 256, node_memory_gib=100, heap_gib=32, replicas=0).budget_bytes == 34 * GIB
    assert one.label == LABEL == "documented, not measured" and one.sources


@pytest.mark.parametrize(("bits", "per_vector"), [(1, 1.1 * (256 * 1 / 8 + 128)), (2, 1.1 * (256 * 2 / 8 + 128)),
                                                  (4, 1.1 * (256 * 4 / 8 + 128))])  # fmt: skip
def test_opensearch_binary_quantization_matches_the_vendors_table(bits, per_vector):
    # the page: 0.176, 0.211 and 0.282 GB for 1,000,000 vectors of 256 dims at m = 16
    result = opensearch(1_000_000, 256, m=16, replicas=0, bits=bits)
    assert result.bytes_per_vector == pytest.approx(per_vector)
    assert round(result.bytes / 1e9, 3) == {1: 0.176, 2: 0.211, 4: 0.282}[bits]


def test_azure_matches_the_vendors_worked_example_and_quota():
    # the page's example: 1,000 docs x 1536 float32, 10% overhead, 10% deleted -> 6.144 MB * 1.1 * 1.1 = 7.434 MB
    result = azure(1000, 1536, tier="s1", overhead=0.10, deleted_ratio=0.10)
    assert result.bytes == 7_434_240
    # an S1 partition: 35 GB of vector quota (GB = 2^30 bytes, as the service statistics report it)
    assert result.budget_bytes == 35 * GIB and result.fits == (35 * GIB * 100) // (6144 * 121)
    three = azure(1000, 1536, tier="s1", partitions=3, overhead=0.10, deleted_ratio=0.10)
    assert three.budget_bytes == 3 * 35 * GIB
    # default overhead: the vendor's observed figure for the nearest tabulated dimension (m = 4)
    assert azure(1, 768).params["overhead"] == 0.02 and azure(1, 1536).params["overhead"] == 0.01
    assert azure(10, 768, dtype="float16").bytes_per_vector == pytest.approx(768 * 2 * 1.02 * 1.1)
    with pytest.raises(ParameterError, match="partitions"):
        azure(1, 768, tier="basic", partitions=4)  # Basic has at most 3 partitions
    with pytest.raises(ParameterError, match="tier"):
        azure(1, 768, tier="s9")


def test_vertex_shards_hold_raw_float32_vectors():
    small = vertex(10_000_000, 768, shard_size="small")
    assert small.fits == 2 * GIB // (768 * 4) == 699_050 and small.params["shards"] == 15
    assert small.params["machine_type"] == "e2-standard-2" and not small.fits_count
    assert vertex(1, 768, "SHARD_SIZE_LARGE").budget_bytes == 50 * GIB
    assert vertex(1, 768).params["machine_type"] == "e2-standard-16"  # medium, 20 GiB
    with pytest.raises(ParameterError, match="shard_size"):
        vertex(1, 768, "huge")


def test_dispatch_drops_unset_options():
    assert platform_capacity("azure", 10, 384, tier=None).params["tier"] == "s1"


def test_cli_capacity_on_each_platform_and_its_refusals():
    for engine, extra in (("opensearch", ["--bits", "1", "--replicas", "2"]), ("azure", ["--tier", "s2"]),
                          ("vertex", ["--shard-size", "large"])):  # fmt: skip
        proc = run_cli("capacity", "--engine", engine, "-n", "1000000", "-d", "768", *extra, "--json")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["platform"] == engine and out["label"] == LABEL and out["sources"][0]["url"].startswith("https://")
        assert out["fits"] > 0 and out["count"] == 1_000_000
    text = run_cli("capacity", "--engine", "opensearch", "-n", "1000", "-d", "384")
    shown = " ".join(text.stdout.split())  # rich wraps lines at the terminal width
    assert text.returncode == 0 and "documented, not measured" in shown and "fit in the budget" in shown
    for args, needle in ((["--engine", "vertex", "--tier", "s1"], "--tier"),
                         (["--engine", "azure", "--tier", "s9"], "--tier"),
                         (["--engine", "opensearch", "--bits", "3"], "--bits"),
                         (["--engine", "azure", "--measure"], "--measure"),
                         (["--tier", "s1"], "--tier"),
                         (["--engine", "oracle"], "--engine")):  # fmt: skip
        proc = run_cli("capacity", "-n", "10", "-d", "768", *args)
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
