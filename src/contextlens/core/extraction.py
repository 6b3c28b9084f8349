"""Extraction: what a model makes of a target occurrence, and of every token of one text.

* :func:`extract_targets` - the target's hidden states (requested layers) and input row per
  occurrence, pooled over its tokens (:mod:`contextlens.core.alignment` says which); blocks above
  the highest requested layer are not run (:mod:`contextlens.core.layer_forward`). Distinct
  token sequences are run once each (many targets of one sentence share a forward pass), sorted
  by length and batched with dynamic padding; per batch only the target rows are copied out.
* :func:`encode_occurrences` - the same as :class:`OccurrenceEncoding` objects, cached in memory.
* :func:`forward_one` - every layer up to one (and attentions) of every token of one text (:class:`ForwardPass`).
* :func:`token_states` - hidden states of every non-special token of many texts (:class:`TokenStates`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from contextlens.core import arguments
from contextlens.core.alignment import TokenizedOccurrence, tokenize_many
from contextlens.core.backbone import Backbone
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.choices import POOLINGS, check_pooling  # noqa: F401 (the names callers import from here)
from contextlens.core.occurrences import Occurrence
from contextlens.core.progress import Progress
from contextlens.core.vectors import Provenance, Vector
from contextlens.errors import InputError

Pooling = Literal["mean", "first", "last"]


@dataclass(frozen=True)
class OccurrenceEncoding:
    """What a model makes of one occurrence: tokens, input row, hidden states per layer."""

    model: str
    tokenized: TokenizedOccurrence
    layers: tuple[int, ...]
    hidden: np.ndarray = field(repr=False)  # (len(layers), hidden_size), pooled over the word
    input_row_values: np.ndarray = field(repr=False)  # (hidden_size,), pooled the same way
    pooling: str = "mean"
    backend: Backend = REFERENCE  # the model's (int8 and ONNX Runtime vectors say so in their provenance)

    @property
    def occurrence(self) -> Occurrence:
        return self.tokenized.occurrence

    @property
    def target_tokens(self) -> list[str]:
        return [self.tokenized.tokens[i] for i in self.tokenized.target_positions]

    @property
    def truncated(self) -> bool:
        return self.tokenized.truncated

    @property
    def computed_layers(self) -> tuple[int, ...]:
        """The layers the forward pass ran (0..highest requested; the blocks above were skipped)."""
        return tuple(range(max(self.layers) + 1))

    def hidden_state(self, layer: int) -> Vector:
        """The pooled hidden state after ``layer`` (0 = embedding output)."""
        asked = layer = arguments.layer_number(layer)
        if layer < 0:  # counts back from the highest layer extracted
            layer = self.layers[-1] + 1 + layer
        if layer not in self.layers:
            back = f" (counting back from layer {self.layers[-1]}, the highest extracted)" if asked < 0 else ""
            raise InputError(f"`layer` {asked} was not extracted{back}; extracted layers: {list(self.layers)}")
        row = self.hidden[self.layers.index(layer)]
        return Vector(
            row,
            Provenance(self.model, "hidden-state", layer, self.pooling, **self.backend.to_dict()),
        )

    def hidden_states(self) -> list[Vector]:
        return [self.hidden_state(layer) for layer in self.layers]

    def input_row(self) -> Vector:
        return Vector(
            self.input_row_values,
            Provenance(self.model, "input-row", None, self.pooling, **self.backend.to_dict()),
        )


@dataclass(frozen=True)
class ForwardPass:
    """Everything one text produces (single text, all tokens): used by trace and attention."""

    tokenized: TokenizedOccurrence
    hidden_states: np.ndarray  # (through+1, seq, d); through = L unless asked for fewer
    attentions: np.ndarray | None  # (through, heads, seq, seq) when asked for
    input_rows: np.ndarray  # (seq, d)
    position_rows: np.ndarray | None  # (seq, d) learned absolute position embeddings, if any

    @property
    def computed_layers(self) -> tuple[int, ...]:
        """The layers the forward pass ran (0..``through``; the blocks above were skipped)."""
        return tuple(range(self.hidden_states.shape[0]))


@dataclass(frozen=True)
class TokenStates:
    """Hidden states of every non-special token of one text: ``states[k, t]`` is layer
    ``layers[k]`` at token ``t``."""

    text: str
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    offsets: tuple[tuple[int, int], ...]
    layers: tuple[int, ...]
    states: np.ndarray = field(repr=False)  # (len(layers), n_tokens, hidden_size)
    truncated: bool = False

    @property
    def computed_layers(self) -> tuple[int, ...]:
        """The layers the forward pass ran (0..highest requested; the blocks above were skipped)."""
        return tuple(range(max(self.layers) + 1))


def extract_targets(
    model: Backbone,
    toks: Sequence[TokenizedOccurrence],
    layers: tuple[int, ...],
    pooling: str = "mean",
    batch_size: int = 32,
    show_progress_bar: bool = False,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(hidden (n, len(layers), d), input rows (n, d))`` of each tokenized target, in input order.

    Occurrences whose token sequences are equal share one forward pass; ``progress(done,
    total)`` counts distinct sequences. Per batch: one gather per layer of the target tokens
    (``index_select`` on the flattened batch, inside the layer's hook, into a buffer allocated
    before the forward), then one mean per word length over the words' consecutive rows; no
    tensor is built per occurrence.
    """
    check_pooling(pooling)
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    hidden = np.empty((len(toks), len(layers), model.hidden_size), dtype=np.float32)
    rows = np.empty((len(toks), model.hidden_size), dtype=np.float32)
    groups: dict[tuple[int, ...], list[int]] = {}
    for n, tok in enumerate(toks):
        groups.setdefault(tok.input_ids, []).append(n)
    # (indices of the occurrences that use a sequence, the sequence): batches() sorts by the
    # second item, the sequence's length (sorting by the first left the batches unsorted)
    items = [(ns, ids) for ids, ns in groups.items()]
    ops = model.arrays  # torch tensors on the torch runtime, numpy arrays on ONNX Runtime
    # the tokens each occurrence pools: all of the word's for "mean", else the first or last
    spans = [
        t.target_positions
        if pooling == "mean"
        else (t.target_positions[0] if pooling == "first" else t.target_positions[-1],)
        for t in toks
    ]
    for batch in model.batches(items, batch_size, show_progress_bar, "hidden states", progress):
        ids, mask = model.pad([seq for _, seq in batch])
        width = ids.shape[1]
        index = [n for ns, _ in batch for n in ns]
        positions = [row * width + p for row, (ns, _) in enumerate(batch) for n in ns for p in spans[n]]
        flat = ops.index(positions)
        # (layers, target tokens of the batch, d): each layer reduced to its target rows at once,
        # into a buffer allocated before the forward (nothing of ours is allocated among the
        # forward's activations, where it would pin the heap and keep their memory from reuse)
        buffer = ops.empty((len(layers), len(positions), model.hidden_size))
        model.run_layers(ids, mask, layers, keep=_rows_into(ops, buffer, flat, layers))
        gathered = ops.to_numpy(buffer)
        target_rows = model.input_rows(np.asarray(ids).reshape(-1)[np.asarray(positions, dtype=np.int64)])
        # a word's rows are consecutive; targets of equal token counts are averaged together
        # (no BLAS call: a small threaded product costs more in thread wake-ups than in work)
        sizes = np.array([len(spans[n]) for n in index])
        starts = np.cumsum(sizes) - sizes
        picked = np.asarray(index)
        for size in np.unique(sizes):  # targets of one token, of two, ...: one mean per size
            these = sizes == size
            at = starts[these][:, None] + np.arange(size)  # (targets, size) rows of the batch
            hidden[picked[these]] = gathered[:, at].mean(axis=2).transpose(1, 0, 2)
            rows[picked[these]] = target_rows[at].mean(axis=1)
    return hidden, rows


class OccurrenceCache:
    """Occurrence encodings computed before, most recent last, at most ``size`` of them; keyed by
    text, span, layers and pooling (one cache per model). Safe to share between threads."""

    def __init__(self, size: int = 100_000):
        self.size = size
        self._entries: OrderedDict[tuple, OccurrenceEncoding] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> OccurrenceEncoding | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def put(self, key: tuple, enc: OccurrenceEncoding) -> None:
        with self._lock:
            self._entries[key] = enc
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def encode_occurrences(
    model: Backbone,
    occurrences: Sequence[Occurrence],
    layers: Sequence[int] | None = None,
    pooling: Pooling = "mean",
    batch_size: int = 32,
    show_progress_bar: bool = False,
    cache: OccurrenceCache | None = None,
) -> list[OccurrenceEncoding]:
    """Input rows and hidden states of each occurrence's target, pooled over its tokens.

    Results come back in input order; repeated requests are served from the model's cache.
    """
    check_pooling(pooling)
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    wanted = model.check_layers(layers)
    results: list[OccurrenceEncoding | None] = [None] * len(occurrences)
    todo: list[tuple[int, Occurrence]] = []
    for i, occ in enumerate(occurrences):
        hit = None if cache is None else cache.get((occ.text, occ.start, occ.end, wanted, pooling))
        if hit is not None:
            results[i] = hit
        else:
            todo.append((i, occ))
    if todo:
        toks = tokenize_many(model, [o for _, o in todo])
        hidden, rows = extract_targets(model, toks, wanted, pooling, batch_size, show_progress_bar)
        for k, ((i, occ), tok) in enumerate(zip(todo, toks, strict=True)):
            enc = OccurrenceEncoding(model.name, tok, wanted, hidden[k].copy(), rows[k].copy(), pooling, model.backend)
            results[i] = enc
            if cache is not None:
                cache.put((occ.text, occ.start, occ.end, wanted, pooling), enc)
    return results  # type: ignore[return-value]


def forward_one(
    model: Backbone, occurrence: Occurrence, attentions: bool = False, through: int | None = None
) -> ForwardPass:
    """Hidden states 0..``through`` (and optionally the attentions of blocks 1..``through``) of
    every token of one text; ``through=None`` is the top layer. Blocks above ``through`` are not
    run (:mod:`contextlens.core.layer_forward`); the states and weights are the full forward's."""
    top = model.num_layers if through is None else model.check_layers([through])[0]
    tok = tokenize_many(model, [occurrence])[0]
    ids, mask = model.pad([tok.input_ids])
    att = None
    if attentions:
        try:
            states, weights = model.run_with_attentions(ids, mask, top)
        except LookupError:
            raise InputError(f"{model.name} does not return attention weights") from None
        seq = len(tok.input_ids)
        att = model.arrays.stack_first(weights) if weights else np.zeros((0, model.num_heads, seq, seq))
    else:
        states = model.run_layers(ids, mask, tuple(range(top + 1)))
    hidden = model.arrays.stack_first(states)
    rows = np.array(model.input_rows(tok.input_ids), dtype=np.float32)
    return ForwardPass(tok, hidden, att, rows, model.position_rows(len(tok.input_ids)))


def token_states(
    model: Backbone,
    texts: Sequence[str],
    layers: Sequence[int] | None = None,
    batch_size: int = 32,
    show_progress_bar: bool = False,
) -> list[TokenStates]:
    """Hidden states of every (non-special) token of each text at the requested layers.

    For corpus statistics over all tokens; texts longer than the model's maximum length are
    truncated at the end (``TokenStates.truncated`` says so).
    """
    wanted = model.check_layers(layers)
    items = []
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"text {i} is empty; every text must contain something to encode")
        enc = model.tokenizer(
            text, return_offsets_mapping=True, return_special_tokens_mask=True, truncation=False, verbose=False
        )
        ids = list(enc["input_ids"])
        truncated = len(ids) > model.max_length
        items.append((i, ids[: model.max_length], enc, truncated))
    results: list[TokenStates | None] = [None] * len(texts)
    for batch in model.batches([(i, ids) for i, ids, _, _ in items], batch_size, show_progress_bar, "tokens"):
        stacked = model.arrays.stack(model.run_layers(*model.pad([ids for _, ids in batch]), wanted))
        for row, (i, ids) in enumerate(batch):
            _, _, enc, truncated = items[i]
            special = enc["special_tokens_mask"][: len(ids)]
            keep = [p for p, s in enumerate(special) if not s]
            results[i] = TokenStates(
                text=texts[i],
                token_ids=tuple(ids[p] for p in keep),
                tokens=tuple(model.tokenizer.convert_ids_to_tokens([ids[p] for p in keep])),
                offsets=tuple(tuple(enc["offset_mapping"][p]) for p in keep),
                layers=wanted,
                states=model.arrays.select(stacked, row, keep),
                truncated=truncated,
            )
    return results  # type: ignore[return-value]


def _rows_into(ops: Any, buffer: Any, flat: Any, layers: Sequence[int]) -> Callable[[Any], Any]:
    """What a hooked layer keeps: only the target rows (``flat`` indexes the batch's rows
    flattened, row * width + position), written into ``buffer[k]`` for ``layers[k]``. The hooks
    fire in forward order, lowest layer first."""
    return ops.rows_into([buffer[k] for k in sorted(range(len(layers)), key=lambda k: layers[k])], flat)
