"""Every page of the web face, one ``Page`` record each (web/page.py says what a record holds).

Adding a page is adding a record here: its request and run (web/runs.py, or a module of its own
for a page that draws its own view), its example, its sentence, its numbers (web/tables.py) and, for
a page whose sliders redraw it in place, its ``Controls`` (web/view_settings.py). The app, the
forms, the navigation and the guard's list of empty forms are all built from these records.
"""

from __future__ import annotations

from contextlens.web import model_view, runs, sense_map, tables, two_models, view_settings
from contextlens.web.page import Controls, Endpoint, Page, Served

LESSON = "lesson"  # the lesson (web/lesson.py) leads the navigation; its quiz is analyses/lesson/quiz.py
_LESSON = "contextlens.analyses.lesson."


def index_choices(served: Served) -> dict[str, list[str]]:
    return {"index": sorted(served.indexes)}


NO_INDEX = (
    '<p class="error">No index is served: build one with '
    "<code>contextlens index build DOCS --out FOLDER</code> and start "
    "<code>contextlens serve --index NAME=FOLDER</code>.</p>"
)

_RECORDS = (
    Page(
        "compare",
        "Compare a word across sentences",
        "The cosine between the target word's hidden states in your sentences, layer by layer, beside the "
        "static vector's and the input row's cosine (both fixed per word) and the band of random word pairs.",
        runs.CompareRequest,
        runs.run_compare,
        example={"sentences": ["I sat on the river [bank].", "I opened a [bank] account.", "The [bank] approved it."]},
        draws=_LESSON + "divergence.Comparison",
        numbers=tables.compare_numbers,
        choices=two_models.second_models,  # model_b: two models side by side
        api_doc="the document `contextlens compare --json` prints for the same inputs (`-m` twice with model_b)",
    ),
    Page(
        "same-sense",
        "Same sense or not? (the rule eval wic tunes)",
        "Whether the two uses of the word share a sense, by the cosine rule eval wic tunes on dictionary "
        "pairs, with the rule's test accuracy beside chance.",
        runs.SameSenseRequest,
        runs.run_same_sense,
        example={"sentences": ["I sat on the river [bank].", "The [bank] approved the loan."]},
        draws=_LESSON + "same_sense.SameSenseAnswer",
        numbers=tables.same_sense_numbers,
        choices=two_models.second_models,  # model_b: two models side by side
        api_doc="the document `contextlens same-sense --json` prints for the same inputs (`-m` twice with model_b)",
    ),
    Page(
        "explore",
        "Polysemy explorer",
        "One word in many sentences: the cosine between every two of them at one layer, a PCA of their hidden "
        "states coloured by sense, and how far same-sense pairs beat cross-sense pairs (gap, with its p).",
        runs.ExploreRequest,
        runs.run_explore,
        example={"words": list(runs.EXPLORE_EXAMPLE_WORDS), "permutations": 200},
        draws=_LESSON + "polysemy.Exploration",
        numbers=tables.explore_numbers,
        controls=Controls(("layer",), view_settings.explore_settings, view_settings.explore_drawer),
        choices=two_models.second_models,  # model_b: two models side by side
        api_doc="the document `contextlens explore --json` prints for the same inputs (`-m` twice with model_b)",
    ),
    Page(
        "attention",
        "Where the target looks",
        "Where the target token looks: its attention to every token per layer (head mean), the rollout "
        "(attention carried through the residual stream), and one head's token × token map.",
        runs.AttentionRequest,
        runs.run_attention,
        example={"sentences": ["The [bank] approved the loan.", "The river [bank] flooded."]},
        draws=_LESSON + "attention.AttentionResult",
        numbers=tables.attention_numbers,
        controls=Controls(
            ("layer", "head"), view_settings.attention_settings, view_settings.attention_drawer, first_layer=1
        ),
    ),
    Page(
        "probe",
        "Probe against anchor words",
        "How close the target's hidden state is to each anchor word's, per sentence, at one layer and across "
        "layers, beside the static vector's (the same in every sentence).",
        runs.ProbeRequest,
        runs.run_probe,
        example={"sentences": ["She sat on the river [bank].", "He robbed the [bank]."], "anchors": ["shore", "money"]},
        draws=_LESSON + "probe.ProbeResult",
        numbers=tables.probe_numbers,
        controls=Controls(("layer",), view_settings.probe_settings),
    ),
    Page(
        "trace",
        "The pipeline, layer by layer",
        "The pipeline for one target: its tokens, their ids and rows of the embedding table, then its hidden "
        "state layer by layer (how far from the input row, its norm, what it attends to).",
        runs.TraceRequest,
        runs.run_trace,
        example={"sentence": "The river [bank] flooded."},
        draws=_LESSON + "trace.Trace",
        numbers=tables.trace_numbers,
    ),
    Page(
        "neighbors",
        "Static neighbours and analogies",
        "The nearest words in a static embedding table (the same vector for a word in every sentence), or "
        "the answers to an analogy a:b::c (b − a + c).",
        runs.NeighborsRequest,
        runs.run_neighbors,
        example={"word": "bank"},
    ),
    Page(
        "rank",
        "Static vs contextual ranking",
        "Word pairs ranked by static cosine and by contextual cosine (each word alone in a template): where the "
        "two rankings disagree, and Kendall's τ between them.",
        runs.RankRequest,
        runs.run_rank,
        draws=_LESSON + "ranking.Ranking",
        numbers=tables.rank_numbers,
        controls=Controls(("layer",), view_settings.rank_settings),
    ),
    Page(
        "search",
        "Search a served index",
        "The texts of a served index nearest to your query by an embedding model's one vector per text.",
        runs.SearchRequest,
        runs.run_search,
        example={"query": "money and loans"},
        choices=index_choices,
        none_served=NO_INDEX,
    ),
    Page(
        "model-view",
        "Model view: every head of every layer",
        "",  # its grid opens with the sentence, with the run's counts (model_view.grid)
        model_view.ModelViewRequest,
        model_view.run_model_view,
        example={"sentence": model_view.EXAMPLE},
        render=model_view.view,
        form_fields=("sentence", "word", "exclude_special"),  # a link may still set the occurrence
        first_visit="run",
        api=False,  # its document is POST /api/attention's
        blurb="every attention head of every layer at once",
    ),
    Page(
        "sense-map",
        "Sense map: one word across a corpus",
        "One word's occurrences in a served corpus, layer by layer, coloured by the senses induced at that "
        "layer, with the occurrences nearest any one of them.",
        sense_map.SenseMapRequest,
        sense_map.run_sense_map,
        example=sense_map.first_word,
        render=sense_map.view,
        choices=sense_map.corpus_choices,
        none_served=sense_map.NOT_SERVED,
        api_doc="every extracted layer: the occurrences' PCA coordinates, induced senses, silhouettes",
        endpoints=(
            Endpoint(
                "corpus-search",
                "Occurrences of a served corpus nearest an example",
                sense_map.CorpusSearchRequest,
                sense_map.run_corpus_search,
                "The document `contextlens corpus search --json` prints for the served corpus.",
            ),
        ),
        nav=False,
        blurb="one word across a served corpus, coloured by sense",
    ),
)
PAGES: dict[str, Page] = {page.name: page for page in _RECORDS}


def nav() -> tuple[str, ...]:
    """The navigation bar's pages: the lesson, then every record's with ``nav``."""
    return (LESSON, *(page.name for page in PAGES.values() if page.nav))


def page_named(name: str) -> Page:
    """The record of the page ``name``; KeyError naming the pages there are."""
    try:
        return PAGES[name]
    except KeyError:
        raise KeyError(f"no page named {name!r}; the pages: {', '.join(PAGES)}") from None
