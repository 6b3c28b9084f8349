"""Word sense induction: the B-cubed score, the baselines, the lemma split, the dev-picked layer, the CLI."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.benchmarks.suite import build_suite
from contextlens.analyses.benchmarks.wsi import (
    METRICS,
    ONE_CLUSTER,
    ONE_PER_INSTANCE,
    bcubed,
    best_layer,
    run_wsi,
    scores,
    wsi_lemmas,
)
from contextlens.analyses.measures.sizes import SEED
from tests.helpers import assert_plain_json


def test_bcubed_on_a_hand_case():
    # gold a a a b, clusters {0,1} {2,3}.
    # precision per item: 2/2, 2/2, 1/2, 1/2 -> 3/4; recall per item: 2/3, 2/3, 1/3, 1/1 -> 2/3
    out = bcubed(["a", "a", "a", "b"], [0, 0, 1, 1])
    assert out["precision"] == pytest.approx(3 / 4)
    assert out["recall"] == pytest.approx(2 / 3)
    assert out["f1"] == pytest.approx(2 * (3 / 4) * (2 / 3) / (3 / 4 + 2 / 3))  # 12/17
    assert bcubed(["x", "y", "y"], ["p", "q", "q"])["f1"] == pytest.approx(1.0)  # label names do not matter


def test_trivial_clusterings_score_as_known():
    gold = ["a", "a", "b", "c"]
    one = scores(gold, [0, 0, 0, 0])
    assert one["ari"] == pytest.approx(0.0) and one["v_measure"] == pytest.approx(0.0)
    # one cluster: precision = sum of squared sense shares (1/2)^2 + (1/4)^2 + (1/4)^2, recall 1
    p = 0.25 + 1 / 16 + 1 / 16
    assert one["bcubed_f1"] == pytest.approx(2 * p / (p + 1))
    singletons = scores(gold, [0, 1, 2, 3])
    assert singletons["ari"] == pytest.approx(0.0)
    assert scores(gold, ["s", "s", "t", "u"]) == pytest.approx({m: 1.0 for m in METRICS})


@pytest.fixture(scope="module")
def quick(minilm, glove) -> BenchmarkResult:
    return run_wsi(minilm, glove, "quick")


def test_dev_and_test_lemmas_are_disjoint_and_have_two_senses():
    suite = build_suite("quick")
    lemmas = wsi_lemmas(suite.wsd, suite.wsd_rows, SEED)
    by_split = {name: {lem.key[0] for lem in lemmas if lem.split == name} for name in ("dev", "test")}
    assert by_split["dev"] and by_split["test"]
    assert not by_split["dev"] & by_split["test"]
    assert all(len(set(lem.gold)) >= 2 and len(lem.rows) == len(lem.gold) for lem in lemmas)
    # every WSD example of the lemma is an instance (train, dev and test alike)
    assert sum(len(lem.rows) for lem in lemmas) == len(suite.wsd.items)


def test_baselines_and_static_model(quick):
    for split in ("dev", "test"):
        assert quick.value(system=ONE_CLUSTER, split=split, metric="ari") == pytest.approx(0.0)
        assert quick.value(system=ONE_CLUSTER, split=split, metric="v_measure") == pytest.approx(0.0)
        assert quick.value(system=ONE_PER_INSTANCE, split=split, metric="ari") == pytest.approx(0.0)
        # the static model gives every occurrence one vector: one cluster, the same scores
        for metric in METRICS:
            static = quick.value(system="glove-50d", split=split, metric=metric)
            assert static == pytest.approx(quick.value(system=ONE_CLUSTER, split=split, metric=metric))
    assert {r["layer"] for r in quick.rows if r["system"] != quick.model} == {None}


def test_layer_by_dev_is_the_dev_argmax(quick):
    dev = {r["layer"]: r["value"] for r in quick.select(system=quick.model, split="dev", metric="ari")}
    chosen = dataclasses.asdict(quick.best_layer)
    assert chosen["layer_by_dev"] == min(layer for layer, v in dev.items() if v == max(dev.values()))
    for metric in METRICS:
        test = quick.value(system=quick.model, split="test", metric=metric, layer=chosen["layer_by_dev"])
        assert chosen[f"test_{metric}_at_dev_layer"] == test
    # and it follows dev, not test: make the last layer best on dev only
    moved = BenchmarkResult("wsi", quick.model, [dict(r) for r in quick.rows])
    last = max(dev)
    for r in moved.select(system=quick.model, split="dev", metric="ari", layer=last):
        r["value"] = 2.0
    assert best_layer(moved, quick.model)["layer_by_dev"] == last


def test_cli_json_shape(tmp_path):
    from contextlens.cli import app

    png = tmp_path / "wsi.png"
    out = CliRunner().invoke(app, ["eval", "wsi", "--model", "minilm", "--quick", "--json", "--plot", str(png)])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert_plain_json(payload)
    assert payload["benchmark"] == "wsi" and payload["model"] == "minilm"
    rows = payload["rows"]
    assert {tuple(sorted(r)) for r in rows} == {("layer", "metric", "split", "system", "value")}
    assert {r["metric"] for r in rows} == set(METRICS)
    layers = {r["layer"] for r in rows if r["system"] == "minilm"}
    assert layers == set(range(len(layers)))  # 0 (embeddings) .. last layer
    assert {"one-cluster-per-lemma", "one-cluster-per-instance", "glove-50d"} <= {r["system"] for r in rows}
    assert set(payload["meta"]["best_layer"]) >= {"layer_by_dev", "test_ari_at_dev_layer", "best_test_layer"}
    assert png.stat().st_size > 10_000
    assert np.isfinite([r["value"] for r in rows]).all()
