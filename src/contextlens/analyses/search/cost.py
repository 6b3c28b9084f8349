"""What a contextual vector costs next to a static one, measured on this machine.

The seeds' comparison table says a static embedding is "a table lookup, O(1) per token" and a
contextual one "a full forward pass"; and that the memory is "just the embedding matrix" vs "the
full model weights". This module measures both on real sentences and scales them to ``count``
documents, with index sizes from :mod:`~contextlens.analyses.search.capacity` (one formula).

* lookup: words -> vocabulary rows of the static table (dictionary lookup + row gather), per word;
* forward: tokenize + one batched forward pass to the last layer (batch 32, longest first, only
  the last hidden state kept), on the model's runtime (torch, or ONNX Runtime), per model token
  (specials included: the model runs them too);
* each timing is repeated and the median run is reported.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from contextlens.analyses.search.capacity import estimate
from contextlens.analyses.search.index_config import IndexConfig
from contextlens.core.arguments import whole_number
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import ALPHA_WORD_RE
from contextlens.core.static_models import StaticModel, load_static
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel

BATCH_SIZE = 32
MIN_SENTENCES = 8
LOOKUP_MIN_SECONDS = 0.02  # each timed lookup run lasts at least this long (see time_lookup)

# The seed's rows (static-vs-contextual-embeddings.txt, "full table") that our numbers fill in.
SEED_ROWS = {
    "Computation at inference": (
        "Table lookup only - O(1) per token. Extremely fast.",
        "Full forward pass through all attention layers - O(n^2) per layer. Significantly more compute.",
    ),
    "Memory": (
        "Small - just the embedding matrix (e.g. 300d x 1M words ~ 1.2 GB).",
        "Full model weights - BERT-base ~440 MB, LLaMA-7B ~13 GB, GPT-4 much larger.",
    ),
}


@dataclass
class CostReport:
    """Measured per-token cost and memory of a static lookup vs a contextual forward pass."""

    model_name: str
    static_name: str
    machine: str
    sentences: int
    words: int  # words looked up per lookup run
    tokens: int  # model tokens per forward run
    lookup_seconds_per_token: float
    forward_seconds_per_token: float
    lookup_runs: list[float] = field(repr=False)  # seconds per word, each run
    forward_runs: list[float] = field(repr=False)  # seconds per token, each run
    static_table_bytes: int = 0
    model_weight_bytes: int = 0
    activation_bytes: int = 0  # one batch: every hidden state + one layer's attention scores
    activation_formula: str = ""
    count: int = 0
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)

    @property
    def ratio(self) -> float:
        """How many times slower a contextual token is than a static lookup."""
        return self.forward_seconds_per_token / self.lookup_seconds_per_token

    def seed_table(self) -> list[dict[str, str]]:
        """The seed's two cost rows with our measured numbers beside its words."""
        mib = 2**20
        return [
            {
                "aspect": "Computation at inference",
                "seed_static": SEED_ROWS["Computation at inference"][0],
                "seed_contextual": SEED_ROWS["Computation at inference"][1],
                "measured_static": f"{self.lookup_seconds_per_token * 1e9:,.0f} ns per word ({self.static_name})",
                "measured_contextual": (
                    f"{self.forward_seconds_per_token * 1e6:,.0f} us per token ({self.model_name}), {self.ratio:,.0f}x"
                ),
            },
            {
                "aspect": "Memory",
                "seed_static": SEED_ROWS["Memory"][0],
                "seed_contextual": SEED_ROWS["Memory"][1],
                "measured_static": f"{self.static_table_bytes / mib:,.0f} MiB table ({self.static_name})",
                "measured_contextual": (
                    f"{self.model_weight_bytes / mib:,.0f} MiB weights + {self.activation_bytes / mib:,.0f} MiB "
                    f"activations per batch ({self.model_name})"
                ),
            },
        ]

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            **self.backend.to_dict(),
            "static": self.static_name,
            "machine": self.machine,
            "sentences": self.sentences,
            "words": self.words,
            "tokens": self.tokens,
            "lookup_seconds_per_token": self.lookup_seconds_per_token,
            "forward_seconds_per_token": self.forward_seconds_per_token,
            "ratio": self.ratio,
            "lookup_runs": self.lookup_runs,
            "forward_runs": self.forward_runs,
            "static_table_bytes": self.static_table_bytes,
            "model_weight_bytes": self.model_weight_bytes,
            "activation_bytes": self.activation_bytes,
            "activation_formula": self.activation_formula,
            "count": self.count,
            "documents": self.documents,
            "seed_table": self.seed_table(),
        }


def machine(runtime: str = "torch") -> str:
    """Where a timing was made: the CPU, the runtime and its version, the threads, the load
    (the version read from the installed package: asking torch would import it on the lean path)."""
    import importlib.metadata

    from contextlens.core.threads import current_threads

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    package = "onnxruntime" if runtime == "onnx" else "torch"
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs, {package} {importlib.metadata.version(package)} "
        f"({current_threads()} threads), load {load:.1f}"
    )


def time_lookup(static: StaticModel, words: Sequence[str], repeats: int) -> list[float]:
    """Seconds per word of mapping words to rows of the static table, each run.

    One pass over a few hundred words takes tens of microseconds, less than one scheduler
    slice: a single preemption would multiply it. So each run repeats the pass until it has
    lasted at least ``LOOKUP_MIN_SECONDS``, and there are at least five runs (they are cheap).
    """
    key_to_index, table = static.kv.key_to_index, static.kv.vectors
    lower = static.lowercase

    def one_pass() -> None:
        rows = [key_to_index.get(w.lower() if lower else w, -1) for w in words]
        table[np.asarray(rows, dtype=np.int64)]

    passes = 1
    while True:  # calibrate: how many passes fill the minimum run time
        start = time.perf_counter()
        for _ in range(passes):
            one_pass()
        if time.perf_counter() - start >= LOOKUP_MIN_SECONDS:
            break
        passes *= 2
    runs = []
    for _ in range(max(repeats, 5)):
        start = time.perf_counter()
        for _ in range(passes):
            one_pass()
        runs.append((time.perf_counter() - start) / (passes * len(words)))
    return runs


def time_forward(model: ContextualModel, texts: Sequence[str], repeats: int) -> tuple[list[float], int]:
    """Seconds per token of tokenizing and running the texts in batches, each run; and the token count."""
    runs, tokens = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        ids = model.tokenizer(list(texts), truncation=True, max_length=model.max_length)["input_ids"]
        tokens = sum(len(x) for x in ids)
        for batch in model.batches(list(enumerate(ids)), BATCH_SIZE, False, "cost"):
            padded, mask = model.pad([seq for _, seq in batch])
            model.run_layers(padded, mask, [model.num_layers])  # the model's runtime, torch or ONNX
        runs.append((time.perf_counter() - start) / tokens)
    return runs, tokens


def check_counts(count: float, repeats: int) -> tuple[int, int]:
    """``count`` and ``repeats`` as whole numbers of at least 1 (``1e6`` is a count; nan, inf
    and 2.5 are not); a ParameterError naming the one that is wrong. Cheap: check before loading."""
    return whole_number(count, "count", minimum=1, floats=True), whole_number(repeats, "repeats", minimum=1)


def measure_cost(
    model: ContextualModel | str,
    static: StaticModel | str,
    texts: Sequence[str],
    count: int = 1_000_000,
    repeats: int = 5,
) -> CostReport:
    """Time a static lookup and a contextual forward pass per token on ``texts``; scale to ``count`` documents."""
    count, repeats = check_counts(count, repeats)
    texts = [t for t in texts if t.strip()]
    if len(texts) < MIN_SENTENCES:
        raise InputError(f"the cost needs at least {MIN_SENTENCES} sentences to time, got {len(texts)}")
    from contextlens.core.contextual_models import as_contextual  # torch: once the arguments are checked

    m = as_contextual(model)
    s = static if isinstance(static, StaticModel) else load_static(static)
    words = [w for t in texts for w in ALPHA_WORD_RE.findall(t)]
    time_forward(m, texts[:BATCH_SIZE], 1)  # warm-up: first-call allocations and thread start
    lookup_runs = time_lookup(s, words, repeats)
    forward_runs, tokens = time_forward(m, texts, max(3, repeats // 2))
    weights = m.weight_bytes()  # as the model runs: int8 layers at one byte per weight, an ONNX graph's files
    seq = int(round(tokens / len(texts)))
    hidden = (m.num_layers + 1) * BATCH_SIZE * seq * m.hidden_size * 4
    scores = BATCH_SIZE * m.num_heads * seq * seq * 4
    report = CostReport(
        model_name=m.name,
        static_name=s.name,
        machine=machine(m.runtime),
        sentences=len(texts),
        words=len(words),
        tokens=tokens,
        lookup_seconds_per_token=statistics.median(lookup_runs),
        forward_seconds_per_token=statistics.median(forward_runs),
        lookup_runs=lookup_runs,
        forward_runs=forward_runs,
        static_table_bytes=int(s.kv.vectors.nbytes),
        model_weight_bytes=int(weights),
        activation_bytes=int(hidden + scores),
        activation_formula=(
            f"(L+1)*batch*T*d*4 + batch*heads*T*T*4 with L={m.num_layers}, batch={BATCH_SIZE}, "
            f"T={seq} (mean tokens per sentence), d={m.hidden_size}, heads={m.num_heads}"
        ),
        count=int(count),
        backend=m.backend,
    )
    report.documents = scale_to_documents(report, int(count), len(words) / len(texts), tokens / len(texts), s.dim, m)
    return report


def scale_to_documents(
    report: CostReport, count: int, words_per_doc: float, tokens_per_doc: float, static_dim: int, model: ContextualModel
) -> dict[str, dict[str, Any]]:
    """Time to embed ``count`` documents like the measured sentences, and their flat index's bytes."""
    out = {}
    for kind, per_token, per_doc, dim in (
        ("static", report.lookup_seconds_per_token, words_per_doc, static_dim),
        ("contextual", report.forward_seconds_per_token, tokens_per_doc, model.hidden_size),
    ):
        index = estimate(IndexConfig("flat"), count, dim)
        out[kind] = {
            "embed_seconds": count * per_doc * per_token,
            "dim": dim,
            "index": index.index,
            "index_bytes": index.bytes,
            "tokens_per_document": per_doc,
        }
    return out
