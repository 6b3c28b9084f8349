"""Two models side by side on a page (``model_b``): the second model and the view of both answers.

The second model is one of the shipped encoders other than the served one, loaded on its first
request at the served model's precision and runtime and kept (``load_contextual`` keeps one
instance per name, precision and runtime). The page shows each model's own answer against its own
random-word baseline, never a cosine across the two, and the linear CKA of their layers
(analyses/lesson/two_models.py); the API answers ``TwoModels.to_dict()``, the document of
``contextlens compare … -m A -m B --json``.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from typing import Any

from contextlens.core.contextual_models import ContextualModel
from contextlens.errors import InputError
from contextlens.web.page import Served

FIELD_HINT = "A second shipped encoder: both answers side by side, each against its own baseline (empty: none)."


def second_models(served: Served) -> dict[str, list[str]]:
    """The select of ``model_b``: empty (one model), then each shipped encoder but the served one."""
    from contextlens.analyses.lesson.prepare import SHIPPED_ENCODERS

    return {"model_b": ["", *(name for name in SHIPPED_ENCODERS if name != served.model)]}


def second_model(name: str, first: ContextualModel) -> ContextualModel:
    """``model_b`` loaded (once) like the served model; a name not offered is an InputError."""
    from contextlens.analyses.lesson.prepare import SHIPPED_ENCODERS
    from contextlens.core.contextual_models import load_contextual

    name = name.strip()
    others = [m for m in SHIPPED_ENCODERS if m != first.name]
    if name not in others:
        raise InputError(f"model_b must be one of the shipped encoders other than {first.name}: {', '.join(others)}")
    return load_contextual(name, first.precision, first.runtime, first.backend.device)


def pair_view(result: Any, answer_view: Callable[[Any], str], png: bytes | None) -> str:
    """Each model's answer (its own figures and numbers), the CKA matches, the side-by-side figure."""
    parts = [f'<p class="dim" id="two-models-note">{html.escape(result.to_dict()["note"])}</p>']
    for model, answer in zip(result.models, result.answers, strict=True):
        parts.append(f'<section class="two-models-answer"><h2>{html.escape(model)}</h2>{answer_view(answer)}</section>')
    a, b = result.models
    rows = "".join(
        f'<tr><td data-label="{html.escape(a)} layer">{la}</td><td data-label="{html.escape(b)} layer">{lb}</td>'
        f'<td data-label="linear CKA">{c:.3f}</td></tr>'
        for la, lb, c in result.matches()
    )
    parts.append(
        f"<h2>Which layers match (linear CKA on {result.cka.texts} WordNet usage examples)</h2>"
        f'<table id="cka-matches" class="cards"><tr class="head"><th>{html.escape(a)} layer</th>'
        f"<th>{html.escape(b)} layer with the highest CKA</th><th>linear CKA</th></tr>{rows}</table>"
    )
    if png is not None:
        src = "data:image/png;base64," + base64.b64encode(png).decode()
        alt = f"{a} and {b} side by side by relative depth, and their layer-by-layer CKA"
        parts.append(f'<img id="two-models-figure" src="{src}" alt="{html.escape(alt)}" style="max-width:100%">')
    return "".join(parts)
