"""The managed platforms' documented formulas (OpenSearch k-NN, Azure AI Search, Vertex AI Vector Search),
checked against the arithmetic done by hand from each vendor's page. Nothing here is measured: the
platforms cannot run on this machine, and every answer says so."""

from __future__ import annotations

import json
import math

import pytest

from contextlens.analyses.search.platforms import (
    LABEL,
    VERTEX_DEFAULT_MACHINE,
    azure,
    opensearch,
    platform_capacity,
    vertex,
    vertex_machines,
)
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


def test_the_defaults_give_the_numbers_they_gave_before_the_variants_were_added():
    # the dimension-dial table of docs/search.md, computed before IVF, PQ, byte, binary and the Azure limits existed
    for d, os_float, os_1bit, az, vx in ((384, 4_692_927, 44_369_496, 20_594_927, 13_981_013),
                                        (768, 2_440_322, 34_861_747, 10_903_196, 6_990_506),
                                        (1536, 1_245_062, 24_403_223, 5_505_574, 3_495_253)):  # fmt: skip
        assert opensearch(1, d).fits == os_float and opensearch(1, d, bits=1).fits == os_1bit
        assert azure(1, d).fits == az and vertex(1, d).fits == vx
    first = opensearch(1_000_000, 256, m=16, replicas=0)
    assert first.formula == "1.1*(4*d + 8*m) bytes/vector x (replicas + 1)" and first.fixed_bytes == 0
    assert opensearch(1, 256, bits=2).formula == "1.1*(d*2/8 + 8*m) bytes/vector x (replicas + 1)"


def test_opensearch_ivf_matches_the_vendors_worked_example():
    # Methods and engines, IVF memory estimation: 1.1*((4*256)*1,000,000 + 4*128*256) ~= 1.126 GB
    ivf = opensearch(1_000_000, 256, replicas=0, method="ivf", nlist=128)
    assert ivf.bytes == 1_126_544_180 and abs(ivf.bytes / 1e9 - 1.126) < 0.001  # 1,126,544,179.2 rounded up
    assert ivf.bytes_per_vector == pytest.approx(1.1 * 4 * 256) and ivf.fixed_bytes == 144_180  # 1.1 * 4*128*256
    # the centroids count once per copy: fits = (budget / copies - fixed) / per vector, by hand
    two = opensearch(1_000_000, 256, replicas=1, method="ivf", nlist=128)
    assert two.bytes == 2 * 1_126_544_179 + 1  # ceil(2 * 1,126,544,179.2)
    assert two.fits == int((16 * GIB / 2 - 144_179.2) // 1126.4)
    assert opensearch(1, 256, method="ivf").params["nlist"] == 4  # the IVF method's documented default
    assert any("IVF memory estimation" in s["title"] for s in ivf.sources) and ivf.label == LABEL


@pytest.mark.parametrize(
    ("kwargs", "exact", "vendor"),
    [  # (the options, the formula by hand, the vendor's rounded figure and its unit: GB = 1e9, GiB = 2^30)
        ({"bits": 16}, 1.1 * (2 * 256 + 8 * 16) * 1e6, (0.656, 2**30)),  # Faiss scalar quantization, 16-bit HNSW
        ({"bits": 16, "method": "ivf", "nlist": 128}, 1.1 * (2 * 256 * 1e6 + 4 * 128 * 256), (0.525, 2**30)),
        ({"dtype": "int8"}, 1.1 * (256 + 8 * 16) * 1e6, (0.39, 2**30)),  # byte vectors, HNSW
        ({"knn_engine": "lucene", "bits": 7}, 1.1 * (256 + 8 * 16) * 1e6, (0.4, 1e9)),  # Lucene scalar quantization
        ({"knn_engine": "lucene", "dtype": "int8"}, 1.1 * (256 + 8 * 16) * 1e6, (0.39, 2**30)),  # Lucene byte
        # Faiss PQ on HNSW: hnsw_m 16, pq_m 32, code_size 8, 100 segments ~= 0.215 GB (2^30 bytes, by the figures)
        ({"pq_m": 32, "segments": 100}, 1.1 * ((32 + 24 + 128) * 1e6 + 100 * 2**8 * 4 * 256), (0.215, 2**30)),
        # Faiss PQ on IVF: the page's arithmetic uses pq_m 64 (its text says 32) and gives ~0.171 GB (2^30 bytes)
        ({"pq_m": 64, "segments": 100, "method": "ivf", "nlist": 512},
         1.1 * ((64 + 24) * 1e6 + 100 * (2**8 * 4 * 256 + 4 * 512 * 256)), (0.171, 2**30)),
    ],
)  # fmt: skip
def test_opensearch_quantized_variants_match_the_vendors_examples(kwargs, exact, vendor):
    result = opensearch(1_000_000, 256, m=16, replicas=0, **kwargs)
    assert result.bytes == pytest.approx(exact, abs=1)
    figure, unit = vendor
    assert round(result.bytes / unit, len(str(figure).split(".")[1])) == figure
    assert len(result.sources) > len(opensearch(1, 256).sources)  # the variant's own page is cited


def test_opensearch_variants_without_a_vendor_example_match_the_formula_by_hand():
    # byte vectors on IVF: the page's ~0.27 GB matches neither unit (0.282 GB, 0.262 GiB); the formula is what counts
    assert opensearch(10**6, 256, replicas=0, dtype="int8", method="ivf", nlist=128).bytes == 281_744_180
    # binary vectors: 1.1*(d/8 + 8m) per vector on HNSW; 1.1*((d/8)*n + nlist*d/8) on IVF
    assert opensearch(10**6, 256, replicas=0, dtype="binary").bytes == 176_000_000
    assert opensearch(10**6, 256, replicas=0, dtype="binary", method="ivf", nlist=128).bytes == 35_204_506
    # PQ at the recommended 300 segments: the code books are a fixed cost per copy
    pq = opensearch(10**6, 768, replicas=0, pq_m=96)
    assert pq.fixed_bytes == math.ceil(1.1 * 300 * 2**8 * 4 * 768) and pq.params["segments"] == 300
    assert pq.fits == int((16 * GIB - 1.1 * 300 * 2**8 * 4 * 768) // (1.1 * (96 + 24 + 128)))
    lucene = opensearch(20_000_000, 768, knn_engine="lucene")
    assert any("less than 10,000,000" in note for note in lucene.notes)
    assert any("general HNSW formula" in note for note in lucene.notes)  # no Lucene float32 formula documented
    # a code book larger than the budget leaves room for no vector, never a negative count
    assert opensearch(1, 1024, pq_m=8, segments=10**6).fits == 0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"method": "ivf", "knn_engine": "lucene"}, "method"),  # IVF is a Faiss method
        ({"method": "ivf", "bits": 4}, "bits"),  # 1, 2 and 4 bits are HNSW only
        ({"bits": 7}, "bits"),  # 7 bits is Lucene's quantizer
        ({"bits": 16, "knn_engine": "lucene"}, "bits"),
        ({"bits": 1, "knn_engine": "nmslib"}, "bits"),
        ({"bits": 16, "dtype": "int8"}, "bits"),
        ({"pq_m": 8, "knn_engine": "lucene"}, "pq_m"),
        ({"pq_m": 7}, "pq_m"),  # 768 is not divisible by 7
        ({"pq_m": 8, "nbits": 4}, "nbits"),  # HNSW-PQ code_size must be 8
        ({"pq_m": 8, "nbits": 9, "method": "ivf"}, "nbits"),
        ({"dtype": "float16"}, "dtype"),
        ({"dtype": "int8", "knn_engine": "nmslib"}, "dtype"),
        ({"dtype": "binary", "knn_engine": "lucene"}, "dtype"),
        ({"nlist": 16}, "nlist"),  # nlist is for the ivf method
        ({"nbits": 4}, "nbits"),  # nbits and segments are for PQ
        ({"segments": 10}, "segments"),
        ({"method": "flat"}, "method"),
        ({"knn_engine": "annoy"}, "knn_engine"),
    ],
)
def test_opensearch_refuses_what_its_docs_do_not_document(kwargs, name):
    with pytest.raises(ParameterError) as raised:
        opensearch(1000, 768, **kwargs)
    assert raised.value.parameter == name
    with pytest.raises(ParameterError, match="multiple of 8"):
        opensearch(1000, 100, dtype="binary")
    with pytest.raises(ParameterError, match="16,000"):
        opensearch(1000, 16_001)  # the engines' documented maximum dimension


def test_azure_storage_search_units_dimensions_and_documents_are_the_documented_limits():
    s1 = azure(1000, 1536, tier="s1", overhead=0.10, deleted_ratio=0.10)
    # on disk about three times the in-memory size, against 160 GB of storage per S1 partition (GB = 2^30 bytes)
    assert s1.params["disk_bytes"] == 3 * 7_434_240 and s1.params["storage_gb_per_partition"] == 160
    quota, storage, documents = s1.limits
    assert storage["budget_bytes"] == 160 * GIB and storage["fits"] == (160 * GIB * 100) // (3 * 6144 * 121)
    assert quota["fits"] == s1.fits < storage["fits"] and documents["fits"] == 24 * 10**9
    assert azure(1, 768, tier="l2", partitions=3).limits[1]["budget_bytes"] == 3 * 4096 * GIB
    # the document limit binds where vectors are tiny: 576 billion per L2 index, 2 billion per S3 HD index
    assert azure(1, 2, tier="l2", partitions=12, dtype="int8", overhead=0, deleted_ratio=0).fits == 576 * 10**9
    assert azure(1, 2, tier="s3hd", partitions=3, dtype="int8", overhead=0, deleted_ratio=0).fits == 2 * 10**9
    assert azure(10, 768, dtype="int16").bytes_per_vector == pytest.approx(768 * 2 * 1.02 * 1.1)  # Edm.Int16
    six = azure(1, 768, tier="s1", partitions=6, replicas=6)  # 36 search units: the most
    assert six.params["search_units"] == 36 and six.budget_bytes == 6 * 35 * GIB  # replicas add no vector quota
    assert azure(1, 768, tier="basic", partitions=3, replicas=3).params["search_units"] == 9
    assert azure(1, 4096).dim == 4096
    for kwargs, name in (({"tier": "s1", "partitions": 6, "replicas": 7}, "replicas"),
                         ({"tier": "basic", "replicas": 4}, "replicas"),
                         ({"tier": "s3hd", "partitions": 4}, "partitions"),
                         ({"dtype": "binary"}, "dtype")):  # fmt: skip
        with pytest.raises(ParameterError) as raised:
            azure(1, 768, **kwargs)
        assert raised.value.parameter == name
    with pytest.raises(ParameterError, match="4,096"):
        azure(1, 4097)  # the dimensions of one vector field, every tier


def test_vertex_machine_types_are_the_vendors_table_and_one_can_be_chosen():
    assert vertex_machines("small") == ["n1-standard-16", "n1-standard-32", "e2-standard-2", "e2-standard-16",
                                        "e2-highmem-16", "n2d-standard-32"]  # fmt: skip
    assert vertex_machines("medium") == ["n1-standard-16", "n1-standard-32", "e2-standard-16", "e2-highmem-16",
                                         "n2d-standard-32"]  # fmt: skip
    assert vertex_machines("large") == ["n1-standard-32", "e2-highmem-16", "n2d-standard-32"]
    for size, machine in VERTEX_DEFAULT_MACHINE.items():  # each default is a machine its table allows
        assert machine in vertex_machines(size) and vertex(1, 768, size).params["machine_type"] == machine
    chosen = vertex(10**6, 768, "large", machine="N2D-standard-32")
    assert chosen.params["machine_type"] == "n2d-standard-32" and chosen.fits == 50 * GIB // (4 * 768)
    assert chosen.params["machine_types_allowed"] == vertex_machines("large")
    with pytest.raises(ParameterError, match="n1-standard-32, e2-highmem-16, n2d-standard-32") as raised:
        vertex(1, 768, "large", machine="e2-standard-16")
    assert raised.value.parameter == "machine"
    with pytest.raises(ParameterError, match="machine"):
        vertex(1, 768, "medium", machine="e2-standard-2")  # small shards only


def test_cli_platform_variants_their_json_and_their_refusals():
    legacy = {"platform", "count", "dim", "params", "bytes_per_vector", "bytes", "formula", "budget_bytes",
              "budget_formula", "fits", "fits_count", "label", "sources", "notes"}  # fmt: skip
    ivf = run_cli("capacity", "--engine", "opensearch", "-n", "1000000", "-d", "256", "--method", "ivf",
                  "--nlist", "128", "--replicas", "0", "--json")  # fmt: skip
    assert ivf.returncode == 0, ivf.stderr
    out = json.loads(ivf.stdout)
    assert legacy <= set(out) and out["bytes"] == 1_126_544_180 and out["fixed_bytes"] == 144_180
    assert out["params"]["method"] == "ivf" and out["limits"][0]["fits"] == out["fits"]
    pq = json.loads(run_cli("capacity", "--engine", "opensearch", "-n", "1000000", "-d", "256", "--pq-m", "32",
                            "--segments", "100", "--replicas", "0", "--json").stdout)  # fmt: skip
    assert pq["bytes"] == 231_235_840 and pq["params"]["nbits"] == 8
    machine = run_cli("capacity", "--engine", "vertex", "-n", "10", "-d", "768", "--shard-size", "large",
                      "--machine", "n1-standard-32")  # fmt: skip
    shown = " ".join(machine.stdout.split())
    assert machine.returncode == 0 and "machine_type=n1-standard-32" in shown
    assert "large shards can be served by n1-standard-32, e2-highmem-16, n2d-standard-32" in shown
    azure_text = " ".join(run_cli("capacity", "--engine", "azure", "-n", "10", "-d", "768").stdout.split())
    assert "limits: vector index quota (memory)" in azure_text and "documents per index 24,000,000,000" in azure_text
    for args, needle in ((["--engine", "vertex", "--shard-size", "large", "--machine", "e2-standard-2"], "--machine"),
                         (["--engine", "vertex", "--nlist", "4"], "--nlist"),
                         (["--engine", "azure", "--method", "ivf"], "--method"),
                         (["--engine", "azure", "--partitions", "6", "--replicas", "7"], "--replicas"),
                         (["--engine", "azure", "-d", "5000"], "--dim"),
                         (["--engine", "opensearch", "--dtype", "float16"], "--dtype"),
                         (["--engine", "opensearch", "--method", "ivf", "--bits", "4"], "--bits"),
                         (["--engine", "opensearch", "--knn-engine", "lucene", "--method", "ivf"], "--method"),
                         (["--engine", "opensearch", "--pq-m", "7"], "--pq-m"),
                         (["--engine", "opensearch", "--pq-m", "8", "--nbits", "4"], "--nbits"),
                         (["--machine", "e2-standard-2"], "--machine"),
                         (["--knn-engine", "faiss"], "--knn-engine")):  # fmt: skip
        proc = run_cli("capacity", "-n", "10", "-d", "768", *args)
        assert proc.returncode == 2 and needle in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
