"""The whole lesson in one call: the worked example, the experiments on the built-in data, and
the seeds' claims that fit in a demo (the cost of a forward pass, layer-by-layer CKA), each from the
same analysis its own command runs.

``contextlens demo`` renders this as one offline HTML report (:mod:`contextlens.reports.report`).
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlens.analyses.lesson.attention import AttentionResult, attend
from contextlens.analyses.lesson.divergence import Comparison, compare
from contextlens.analyses.lesson.input_share import InputRowShare, input_row_share
from contextlens.analyses.lesson.polysemy import Exploration, explore
from contextlens.analyses.lesson.probe import ProbeResult, probe
from contextlens.analyses.lesson.ranking import Ranking, load_pairs, rank_pairs
from contextlens.analyses.lesson.shared_states import SharedStates
from contextlens.analyses.lesson.trace import Trace, trace
from contextlens.analyses.representations.cka import CkaResult, compare_layers
from contextlens.analyses.search.cost import CostReport, measure_cost
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import parse_marked
from contextlens.core.progress import Step
from contextlens.core.static_models import StaticModel, as_static
from contextlens.data.text_sets import corpus_texts
from contextlens.examples import WORKED_EXAMPLE

ATTENTION_SENTENCES = ("The [bank] approved the loan.", "The river [bank] flooded.")
PROBE_SENTENCES = ("We walked along the river [bank].", "I opened a [bank] account.")
PROBE_ANCHORS = ("shore", "deposit")
COST_SENTENCES = 16  # of the built-in sentences: a live but small timing (`contextlens cost` uses 256)
COST_REPEATS = 3


@dataclass
class Lesson:
    model: str
    static_model: str
    worked_example: Comparison
    exploration: Exploration
    ranking: Ranking
    attention: AttentionResult
    probe: ProbeResult
    trace: Trace
    input_share: InputRowShare
    cost: CostReport
    cka: CkaResult
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "static_model": self.static_model,
            "worked_example": self.worked_example.to_dict(),
            "explore": self.exploration.to_dict(),
            "rank": self.ranking.to_dict(),
            "attention": self.attention.to_dict(),
            "probe": self.probe.to_dict(),
            "trace": self.trace.to_dict(),
            "input_row_share": self.input_share.to_dict(),
            "cost": self.cost.to_dict(),
            "cka": self.cka.to_dict(),
        }


def run_lesson(
    model: ContextualModel | str,
    static: StaticModel | str,
    permutations: int = 1000,
    step: Step | None = None,
    shared: SharedStates | None = None,
) -> Lesson:
    """Run every experiment of the lesson on the built-in sentences and pairs.

    ``step(what)`` is told before each experiment starts (a face draws it as a status line);
    ``shared`` is the run's cache of token states (a new one when None): the input-row share and
    CKA read the same built-in sentences, and run one forward pass for both."""
    model, static = as_contextual(model), as_static(static)
    shared = SharedStates() if shared is None else shared
    layer = min(6, model.num_layers)  # the seed's close-up: layer 6, head 3
    head = min(3, model.num_heads - 1)
    builtin = corpus_texts("builtin")
    tell = step or (lambda _what: None)
    tell("the worked example")
    worked = compare([parse_marked(s) for s in WORKED_EXAMPLE], model, static)
    tell(f"the polysemy explorer ({permutations} label shuffles per word)")
    exploration = explore([], model, permutations=permutations)
    tell("static versus contextual ranking")
    ranking = rank_pairs(load_pairs(), model, static)
    tell("attention")
    attention = attend([parse_marked(s) for s in ATTENTION_SENTENCES], model, layer=layer, head=head)
    tell("the sense probe")
    probed = probe([parse_marked(s) for s in PROBE_SENTENCES], PROBE_ANCHORS, model, static=static)
    tell("the trace")
    traced = trace(parse_marked(WORKED_EXAMPLE[1]), model)
    tell(f"the input-row share ({len(builtin)} sentences, every layer)")
    share = input_row_share(model, builtin, "built-in polysemy", states=shared.token_states(model, builtin))
    tell(f"the cost of a forward pass ({COST_REPEATS} timed runs)")
    cost = measure_cost(model, static, builtin[:COST_SENTENCES], repeats=COST_REPEATS)
    tell(f"CKA between every pair of layers ({len(builtin)} sentences)")
    cka = compare_layers(model, corpus="builtin", states=shared.token_states(model, builtin))
    return Lesson(
        model=model.name,
        backend=model.backend,
        static_model=static.name,
        worked_example=worked,
        exploration=exploration,
        ranking=ranking,
        attention=attention,
        probe=probed,
        trace=traced,
        input_share=share,
        cost=cost,
        cka=cka,
    )
