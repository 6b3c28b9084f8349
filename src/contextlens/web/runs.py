"""What the analysis pages run: a request schema and the analysis call (the page records, web/pages.py,
name them).

The web face holds no logic of its own: every ``run_*`` parses the same inputs the CLI parses and
calls the same analysis, so ``POST /api/<name>`` returns the document ``contextlens <name> --json``
prints. Limits on request size live here, beside the fields they bound.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.occurrences import in_template, locate_all
from contextlens.core.resources import REGISTRY
from contextlens.core.static_models import NO_STATIC, StaticModel, optional_static
from contextlens.errors import InputError
from contextlens.web.page import Served
from contextlens.web.two_models import FIELD_HINT, second_model

MAX_TEXT = 1000  # characters per sentence or query
MAX_SENTENCES = 8  # sentences per request
MAX_WORDS = 12  # anchor words, explore words
MAX_TOP = 50  # neighbours, hits, listed tokens
MAX_LAYER = 64  # |layer| accepted before the model checks its own range
MAX_SENSE_SENTENCES = 60  # your own sentences on /explore (the built-in set has 60)
MAX_PAIRS = 100  # your own word pairs on /rank
# the explore form's example words (web/pages.py): left in beside one's own sentences they give way to
# them (a learner's first try types sentences and leaves the words; other words typed are kept)
EXPLORE_EXAMPLE_WORDS = ("bank", "bat")

Text = Annotated[str, Field(max_length=MAX_TEXT)]  # one sentence or query
Word = Annotated[str, Field(max_length=100)]


class Request(BaseModel):
    """Every request: unknown fields are refused (a typo is an error, not a silent default). A
    number field is a ``StrictInt`` and a switch a ``StrictBool``: ``{"layer": true}`` is not layer 1,
    nor ``{"quick": "no"}`` a switch (a page's query strings are typed first, html.query_to_request)."""

    model_config = ConfigDict(extra="forbid")


class CompareRequest(Request):
    sentences: list[Text] = Field(min_length=1, max_length=MAX_SENTENCES, description="Target in [brackets].")
    word: str | None = Field(None, max_length=100)
    occurrence: StrictInt = Field(0, ge=-MAX_SENTENCES, le=MAX_TEXT)
    pooling: str = "mean"
    static: str = "glove-50d"
    model_b: str = Field("", max_length=40, description=FIELD_HINT)


class SameSenseRequest(Request):
    sentences: list[Text] = Field(min_length=2, max_length=2, description="Two uses of one word, in [brackets].")
    word: str | None = Field(None, max_length=100)
    occurrence: StrictInt = Field(0, ge=-MAX_SENTENCES, le=MAX_TEXT)
    layer: str = Field("auto", max_length=8, description="auto (eval wic's dev-picked layer) or a layer number.")
    quick: StrictBool = Field(False, description="Tune on the small benchmark subset (tests only).")
    model_b: str = Field("", max_length=40, description=FIELD_HINT)


class ExploreRequest(Request):
    words: list[Word] = Field(
        default_factory=list, max_length=MAX_WORDS, description="Empty: every word (of your sentences, if given)."
    )
    sentences: list[Text] = Field(
        default_factory=list,
        max_length=MAX_SENSE_SENTENCES,
        description="Your own, one per line, target in [brackets], optionally after its sense and a bar: "
        "money | I opened a [bank] account. Empty: the built-in set.",
    )
    layer: StrictInt = Field(-1, ge=-MAX_LAYER, le=MAX_LAYER)
    permutations: StrictInt = Field(1000, ge=1, le=5000)
    seed: StrictInt = 0
    model_b: str = Field("", max_length=40, description=FIELD_HINT)


class AttentionRequest(Request):
    sentences: list[Text] = Field(min_length=1, max_length=2)
    layer: StrictInt = Field(6, ge=-MAX_LAYER, le=MAX_LAYER)
    head: StrictInt = Field(3, ge=0, le=MAX_LAYER)
    exclude_special: StrictBool = False
    top: StrictInt = Field(3, ge=1, le=MAX_TOP)
    word: str | None = Field(None, max_length=100)
    occurrence: StrictInt = Field(0, ge=-MAX_SENTENCES, le=MAX_TEXT)


class ProbeRequest(Request):
    sentences: list[Text] = Field(min_length=1, max_length=MAX_SENTENCES)
    anchors: list[Word] = Field(min_length=1, max_length=MAX_WORDS)
    template: str = Field("The word is [{word}].", max_length=200)
    layer: StrictInt = Field(-1, ge=-MAX_LAYER, le=MAX_LAYER)
    static: str = "glove-50d"
    word: str | None = Field(None, max_length=100)
    occurrence: StrictInt = Field(0, ge=-MAX_SENTENCES, le=MAX_TEXT)


class TraceRequest(Request):
    sentence: str = Field(min_length=1, max_length=MAX_TEXT)
    top: StrictInt = Field(3, ge=1, le=MAX_TOP)
    exclude_special: StrictBool = False
    word: str | None = Field(None, max_length=100)
    occurrence: StrictInt = Field(0, ge=-MAX_SENTENCES, le=MAX_TEXT)


class NeighborsRequest(Request):
    word: str | None = Field(None, max_length=100)
    analogy: str | None = Field(None, max_length=300, description="a:b::c, e.g. king:man::queen")
    positive: list[Word] = Field(default_factory=list, max_length=MAX_WORDS)
    negative: list[Word] = Field(default_factory=list, max_length=MAX_WORDS)
    top: StrictInt = Field(10, ge=1, le=MAX_TOP)
    static: str = "glove-50d"


class RankRequest(Request):
    pairs: list[Word] = Field(
        default_factory=list,
        max_length=MAX_PAIRS,
        description="Your own, one pair per line: cup mug. Empty: the 20 built-in pairs.",
    )
    template: str = Field("The word is [{word}].", max_length=200)
    layer: StrictInt = Field(-1, ge=-MAX_LAYER, le=MAX_LAYER)
    top: StrictInt = Field(5, ge=1, le=MAX_TOP)
    static: str = "glove-50d"


class SearchRequest(Request):
    index: str = Field(max_length=100, description="Name of an index served with --index NAME=FOLDER.")
    query: str = Field(min_length=1, max_length=MAX_TEXT)
    k: StrictInt = Field(10, ge=1, le=MAX_TOP)


def static_names() -> list[str]:
    """The static models a request may name: the registry's (``none`` besides, where optional)."""
    return [name for name, spec in REGISTRY.items() if spec.kind == "static"]


def served_static(name: str, optional: bool) -> StaticModel | None:
    """The static model a request names: a registered name only, never a path or a ``format:`` prefix,
    so nothing a request carries makes the server open (or unpickle) a file."""
    names = static_names()
    if name.strip() not in names and name.strip().lower() != NO_STATIC:  # none: optional_static says where
        valid = ", ".join([*names, *([NO_STATIC] if optional else [])])
        raise InputError(f"static must name a registered static model: {valid} (the web API opens no files)")
    return optional_static(name.strip(), optional)


def run_compare(req: CompareRequest, model: ContextualModel | str, _: Served | None = None):
    from contextlens.analyses.lesson.divergence import compare

    occs = locate_all(req.sentences, req.word, req.occurrence)  # compare checks the count and the pooling
    first, static = as_contextual(model), served_static(req.static, True)
    if req.model_b.strip():  # two models side by side, each against its own baseline (web/two_models.py)
        from contextlens.analyses.lesson.two_models import side_by_side

        second = second_model(req.model_b, first)
        return side_by_side([first, second], lambda m: compare(occs, m, static, pooling=req.pooling))
    return compare(occs, first, static, pooling=req.pooling)


def run_same_sense(req: SameSenseRequest, model: ContextualModel | str, _: Served | None = None):
    from contextlens.analyses.lesson.same_sense import same_sense

    a, b = locate_all(req.sentences, req.word, req.occurrence)
    first, size = as_contextual(model), "quick" if req.quick else "full"
    if req.model_b.strip():  # two models side by side, each against its own baseline (web/two_models.py)
        from contextlens.analyses.lesson.two_models import side_by_side

        second = second_model(req.model_b, first)
        return side_by_side([first, second], lambda m: same_sense(a, b, m, req.layer, size))
    return same_sense(a, b, first, req.layer, size)


def run_explore(req: ExploreRequest, model: ContextualModel | str, _: Served | None = None):
    from contextlens.analyses.lesson.polysemy import explore
    from contextlens.data.sense_sentences import sense_sentences_from_lines

    own = sense_sentences_from_lines(req.sentences) if req.sentences else None
    source = "your sentences" if own else None
    words = req.words
    if own and sorted(w.casefold().strip() for w in words) == sorted(EXPLORE_EXAMPLE_WORDS):
        words = []  # the form's example words left in beside one's own sentences: the sentences win, all their words
    first = as_contextual(model)

    def ask(m: ContextualModel):
        return explore(words, m, own, req.layer, req.permutations, req.seed, source=source)

    if req.model_b.strip():  # two models side by side, each its own profile (web/two_models.py)
        from contextlens.analyses.lesson.two_models import side_by_side

        return side_by_side([first, second_model(req.model_b, first)], ask)
    return ask(first)


def run_attention(req: AttentionRequest, model: ContextualModel | str, _: Served | None = None):
    from contextlens.analyses.lesson.attention import attend

    occs = locate_all(req.sentences, req.word, req.occurrence)
    return attend(
        occs, as_contextual(model), layer=req.layer, head=req.head, exclude_special=req.exclude_special, top_k=req.top
    )


def run_probe(req: ProbeRequest, model: ContextualModel | str, _: Served | None = None):
    from contextlens.analyses.lesson.probe import probe

    occs = locate_all(req.sentences, req.word, req.occurrence)
    words = [w for a in req.anchors for w in a.replace(",", " ").split()]
    return probe(
        occs, words, as_contextual(model), None, template=req.template, layer=req.layer,
        static=served_static(req.static, True),
    )  # fmt: skip


def run_trace(req: TraceRequest, model: ContextualModel | str, _: Served | None = None):
    from contextlens.analyses.lesson.trace import trace

    (occ,) = locate_all([req.sentence], req.word, req.occurrence)
    return trace(occ, as_contextual(model), top_k=req.top, exclude_special=req.exclude_special)


def run_rank(req: RankRequest, model: ContextualModel | str, _: Served | None = None):
    from contextlens.analyses.lesson.ranking import load_pairs, pairs_from_lines, rank_pairs

    in_template("word", req.template)
    pairs = pairs_from_lines(req.pairs) if req.pairs else load_pairs(None)
    return rank_pairs(
        pairs, as_contextual(model), served_static(req.static, False), template=req.template,
        layer=req.layer, top=req.top, source="your pairs" if req.pairs else "built-in pairs",
    )  # fmt: skip


def run_neighbors(req: NeighborsRequest, _model: ContextualModel | str, __: Served | None = None):
    from contextlens.analyses.lesson.neighbors import neighbors

    static = served_static(req.static, False)
    return neighbors(static, req.word or None, req.positive, req.negative, req.analogy or None, req.top)


def run_search(req: SearchRequest, _model: ContextualModel | str, served: Served):
    from contextlens.analyses.search.folders import search_folder

    indexes = served.indexes
    if req.index not in indexes:
        served = ", ".join(sorted(indexes)) or "none (start serve with --index NAME=FOLDER)"
        raise InputError(f"no index named {req.index!r} is served; served indexes: {served}")
    return search_folder(indexes[req.index], req.query, req.k)  # FAISS or pgvector, by the index's manifest
