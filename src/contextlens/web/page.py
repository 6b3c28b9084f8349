"""The shape of a web page: one ``Page`` record says everything the face needs to serve it.

A page is its request schema and the analysis it runs (``POST /api/<name>``, ``/<name>.json``), its
first visit's example, the sentence under its title, what it shows of a result (the figures of the
type it ``draws``, the ``numbers`` beside them, or a ``render`` of its own), the sliders that redraw
it in place (``Controls``), and the served names a field may take (``choices``). The records are in
``web/pages.py``; html, views and the app read them and know no page by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from contextlens.core.contextual_models import ContextualModel
from contextlens.reports.figure_registry import FigureMakers, figures_for_type
from contextlens.web.kept import Kept


@dataclass(frozen=True)
class Served:
    """What the server serves by name: indexes and corpora (served name -> folder). A request names
    them, never a folder. ``kept`` holds this server's long results (web/kept.py)."""

    indexes: Mapping[str, str] = field(default_factory=dict)
    corpora: Mapping[str, str] = field(default_factory=dict)
    kept: Kept = field(default_factory=Kept, compare=False)
    model: str = ""  # the served model's name (a second model on a page is another one)


# (request, the served model, what is served) -> the analysis's result (a dataclass with .to_dict())
Run = Callable[[Any, ContextualModel, Served], Any]
# (result, request, the URL query) -> the HTML a page with a view of its own shows under its form
Render = Callable[[Any, Any, Any], str]
# (result, rerun: the same request at a layer, the model's top layer) ->
#   (the result's own setting, [(a setting, how to get the result shown that way)])
Settings = Callable[[Any, Callable[[int], Any] | None, int | None], tuple[dict[str, int], list[tuple[dict, Any]]]]


@dataclass(frozen=True)
class Controls:
    """Sliders that redraw a page in place, every view computed from the one result (web/views.py)."""

    names: tuple[str, ...]  # the request fields they set: ("layer",) or ("layer", "head")
    settings: Settings
    drawer: Callable[[Any], Callable[[Any], list[str]]] | None = None  # result -> a fast draw of each view
    first_layer: int = 0  # the layer slider's lowest value (attention's layers are blocks 1..L)


@dataclass(frozen=True)
class Endpoint:
    """A further ``POST /api/<name>`` a page's script asks (the sense map's nearest occurrences)."""

    name: str
    summary: str
    request: type
    run: Run
    doc: str


@dataclass(frozen=True)
class Page:
    """One page of the web face: ``/<name>``, and its API unless ``api`` is False."""

    name: str
    title: str
    what: str  # one sentence under the title: what the learner is looking at
    request: type
    run: Run
    example: Mapping[str, Any] | Callable[[Served], Mapping[str, Any]] = field(default_factory=dict)
    draws: str | None = None  # the result type whose figures (reports.figure_registry) the page shows
    numbers: Callable[[Any], str] | None = None  # result -> the HTML numbers beside the figures (web/tables.py)
    controls: Controls | None = None
    form_fields: tuple[str, ...] | None = None  # the fields the form shows (default: every field of the request)
    choices: Callable[[Served], dict[str, list[str]]] | None = None  # field -> the served names it may take
    none_served: str = ""  # the note shown when a field of ``choices`` has nothing served to name
    render: Render | None = None  # a view of its own instead of figures and numbers
    first_visit: Literal["form", "run"] = "form"  # a bare GET shows the example unrun, or runs it
    api: bool = True  # POST /api/<name> and GET /<name>.json answer the result's document
    api_doc: str = ""  # what the API answers (default: the CLI's --json document for the same inputs)
    endpoints: tuple[Endpoint, ...] = ()
    nav: bool = True  # linked in every page's navigation bar (all pages are listed on /)
    blurb: str = ""  # the line on / (default: the title)

    @property
    def figures(self) -> FigureMakers | None:
        """The page's figures, from the one registry; None for a page that shows a table only."""
        return None if self.draws is None else figures_for_type(self.draws)

    def choices_for(self, served: Served) -> dict[str, list[str]]:
        return {} if self.choices is None else self.choices(served)

    def first_values(self, served: Served) -> dict[str, Any]:
        """The first visit's inputs: the example, each served field set to its first served name."""
        values = dict(self.example(served) if callable(self.example) else self.example)
        for name, names in self.choices_for(served).items():
            if names:
                values.setdefault(name, names[0])
        return values

    def document(self) -> str:
        return self.api_doc or f"the document `contextlens {self.name} --json` prints for the same inputs"
