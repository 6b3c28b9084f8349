"""One result -> figure registry: the CLI, the web and the notebook all draw through it."""

from __future__ import annotations

from importlib import import_module

import matplotlib.pyplot as plt
import plotly.graph_objects as go
import pytest
from fastapi.testclient import TestClient

from contextlens import notebook
from contextlens.cli import main
from contextlens.cli.common import write_figures
from contextlens.errors import NoFigureError
from contextlens.reports import figure_registry
from contextlens.reports.figure_registry import (
    REGISTRY,
    FigureMakers,
    figures_for,
    interactive_figures,
    result_types,
    static_figure,
    type_name,
)
from contextlens.web import app as web_app
from contextlens.web.app import create_app
from contextlens.web.pages import PAGES

PAIR = ["The [bank] approved the loan.", "We sat on the river [bank]."]
COMPARISON = "contextlens.analyses.lesson.divergence.Comparison"


class _Recorder:
    """Fake figure makers that note every result they are asked to draw."""

    def __init__(self) -> None:
        self.png: list[object] = []
        self.plotly: list[object] = []

    def makers(self, with_plotly: bool = True) -> FigureMakers:
        def png(result):
            self.png.append(result)
            fig, _ = plt.subplots()
            return fig

        def plotly(result):
            self.plotly.append(result)
            return [go.Figure(layout={"title": {"text": "patched figure"}})]

        return FigureMakers(png, plotly if with_plotly else None)


def _cls(name: str) -> type:
    return next(t for t in result_types() if type_name(t) == name)


def test_every_entry_names_a_real_result_class_and_real_figure_functions():
    assert len(result_types()) == len(REGISTRY)
    for name, makers in REGISTRY.items():
        assert type_name(_cls(name)) == name
        assert makers.png is not None
        for maker in (makers.png, makers.plotly):
            if maker is not None:
                module, function = maker.__qualname__.split(":")
                assert callable(getattr(import_module(module), function))


def test_every_web_page_with_figures_names_a_registered_type():
    drawn = {p.name: p.draws for p in PAGES.values() if p.draws is not None}
    assert set(drawn.values()) <= set(REGISTRY) and len(drawn) == 7  # neighbors and search show tables
    assert all(PAGES[name].figures is REGISTRY[t] for name, t in drawn.items())


def test_an_unregistered_result_is_one_typed_line():
    with pytest.raises(NoFigureError, match=r"^no figure is registered for builtins\.object; ask for its JSON") as e:
        figures_for(object())
    assert "\n" not in str(e.value)
    with pytest.raises(NoFigureError, match="has no interactive figure"):  # CKA: a PNG only
        interactive_figures(object.__new__(_cls("contextlens.analyses.representations.cka.CkaResult")))


@pytest.mark.parametrize("name", list(REGISTRY))
def test_all_three_faces_resolve_each_registered_type_through_the_registry(name, monkeypatch, tmp_path):
    """Patch one entry: the CLI's writer, the web page and the notebook all call the patched makers."""
    result = object.__new__(_cls(name))  # the faces never look inside a result to pick its figure
    rec = _Recorder()
    has_html = REGISTRY[name].plotly is not None
    monkeypatch.setitem(REGISTRY, name, rec.makers(with_plotly=has_html))

    write_figures(tmp_path / "f.png", tmp_path / "f.html" if has_html else None, result, "t")  # the CLI
    assert (tmp_path / "f.png").stat().st_size > 0
    assert rec.png == [result] and rec.plotly == ([result] if has_html else [])

    page = next((p for p in PAGES.values() if p.draws == name), None)
    if page is not None:  # the web: the page's figures and its PNG
        assert "patched figure" in "".join(web_app.figure_divs(page, result))
        assert web_app.png_bytes(static_figure(result))[:4] == b"\x89PNG"
        assert rec.png == [result] * 2 and rec.plotly == [result] * 2

    if has_html:  # the notebook
        before = len(rec.plotly)
        assert "patched figure" in notebook.to_html(result)
        assert len(rec.plotly) == before + 1


def test_a_real_compare_draws_through_the_patched_entry_in_every_face(minilm, monkeypatch, tmp_path, capsys):
    rec = _Recorder()
    monkeypatch.setitem(REGISTRY, COMPARISON, rec.makers())

    try:
        main(
            [
                "compare",
                *PAIR,
                "-m",
                "minilm",
                "--json",
                "--plot",
                str(tmp_path / "f.png"),
                "--html",
                str(tmp_path / "f.html"),
            ]
        )
    except SystemExit as exc:
        assert not exc.code
    assert "patched figure" in (tmp_path / "f.html").read_text()
    assert [type_name(type(r)) for r in rec.png + rec.plotly] == [COMPARISON] * 2

    client = TestClient(create_app("minilm"), base_url="http://127.0.0.1")
    query = [("s", PAIR[0]), ("s", PAIR[1])]
    assert "patched figure" in client.get("/compare", params=query).text
    assert client.get("/compare.png", params=query).content[:4] == b"\x89PNG"
    assert len(rec.png) == 2 and len(rec.plotly) == 2

    assert "patched figure" in notebook.to_html(rec.plotly[0])
    assert len(rec.plotly) == 3


def test_the_registry_imports_no_figure_library():
    import subprocess
    import sys

    code = "import sys, contextlens.reports.figure_registry; print(sorted({'matplotlib','plotly'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]" and figure_registry.__name__


def test_a_figure_renders_with_the_house_config_and_no_plotly_warning():
    """Every serve and demo printed plotly's "Unrecognized config options supplied:
    ['showEditInChartStudio']": the house config names only options plotly knows."""
    import warnings

    import plotly.graph_objects as go

    from contextlens.reports.interactive import figure_div

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        html = figure_div(go.Figure(go.Scatter(x=[0, 1], y=[1, 0])))
    assert '"showSendToCloud": false' in html and '"displaylogo": false' in html
