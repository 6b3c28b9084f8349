"""Contextual models: input rows, hidden states, attentions and sentence embeddings.

:class:`ContextualModel` wraps a Hugging Face encoder (or decoder) for the three questions the
lesson asks about a target word:

* its **input row** - ``get_input_embeddings().weight[id]``, static, identical across sentences;
* its **hidden states** - ``hidden_states[0]`` (embedding output) to ``hidden_states[L]``;
* for sentence-embedding models, the **sentence embedding** with the model's own pooling config.

Targets are located by character span (:class:`~contextlens.core.occurrences.Occurrence`) and
mapped onto tokens through the tokenizer's offset mapping, so a word split into several tokens
(``river ##bank``) is pooled over all of them. Inputs are sorted by length and batched with
dynamic padding under ``torch.inference_mode``; per batch only the target positions of the
requested layers are kept. A text longer than the model's maximum length is cut to a window
around the target and the result says so.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from contextlens.core.occurrences import Occurrence
from contextlens.core.resources import resolve_contextual
from contextlens.core.vectors import Provenance, Vector
from contextlens.errors import InputError, UnknownModelError

Pooling = Literal["mean", "first", "last"]
POOLINGS: tuple[str, ...] = ("mean", "first", "last")


@dataclass(frozen=True)
class TokenizedOccurrence:
    """An occurrence mapped onto the model's tokens (after any windowing)."""

    occurrence: Occurrence
    input_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    offsets: tuple[tuple[int, int], ...]  # character spans in the original text; (0, 0) special
    special: tuple[bool, ...]
    target_positions: tuple[int, ...]
    truncated: bool = False
    window: tuple[int, int] | None = None  # characters of the original text that were kept

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(frozen=True)
class OccurrenceEncoding:
    """What a model makes of one occurrence: tokens, input row, hidden states per layer."""

    model: str
    tokenized: TokenizedOccurrence
    layers: tuple[int, ...]
    hidden: np.ndarray = field(repr=False)  # (len(layers), hidden_size), pooled over the word
    input_row_values: np.ndarray = field(repr=False)  # (hidden_size,), pooled the same way
    pooling: str = "mean"

    @property
    def occurrence(self) -> Occurrence:
        return self.tokenized.occurrence

    @property
    def target_tokens(self) -> list[str]:
        return [self.tokenized.tokens[i] for i in self.tokenized.target_positions]

    @property
    def truncated(self) -> bool:
        return self.tokenized.truncated

    def hidden_state(self, layer: int) -> Vector:
        """The pooled hidden state after ``layer`` (0 = embedding output)."""
        if layer < 0:
            layer = self.layers[-1] + 1 + layer
        if layer not in self.layers:
            raise InputError(f"layer {layer} was not extracted; extracted layers: {list(self.layers)}")
        row = self.hidden[self.layers.index(layer)]
        return Vector(row, Provenance(self.model, "hidden-state", layer, self.pooling))

    def hidden_states(self) -> list[Vector]:
        return [self.hidden_state(layer) for layer in self.layers]

    def input_row(self) -> Vector:
        return Vector(self.input_row_values, Provenance(self.model, "input-row", None, self.pooling))


@dataclass(frozen=True)
class ForwardPass:
    """Everything one text produces (single text, all tokens): used by trace and attention."""

    tokenized: TokenizedOccurrence
    hidden_states: np.ndarray  # (L+1, seq, d)
    attentions: np.ndarray | None  # (L, heads, seq, seq) when asked for
    input_rows: np.ndarray  # (seq, d)
    position_rows: np.ndarray | None  # (seq, d) learned absolute position embeddings, if any


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


class ContextualModel:
    """A transformer seen through contextlens. Load with :func:`load_contextual` (cached)."""

    def __init__(self, name: str, source: str, revision: str | None = None):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        self.name = name
        self.source = source
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
            try:
                self.model = AutoModel.from_pretrained(source, revision=revision, attn_implementation="sdpa")
            except (ValueError, ImportError):
                self.model = AutoModel.from_pretrained(source, revision=revision, attn_implementation="eager")
        except OSError as exc:
            raise UnknownModelError(
                f"could not load model {name!r} from {source} ({str(exc).splitlines()[0]}); "
                "check the name or folder, or install a shipped model (`contextlens models`)"
            ) from exc
        if not getattr(self.tokenizer, "is_fast", False):
            raise UnknownModelError(f"model {name!r} has no fast tokenizer, so character offsets are unavailable")
        self.model.eval()
        self.config = self.model.config
        self._attn_impl = self.config._attn_implementation
        self._cache: OrderedDict[tuple, OccurrenceEncoding] = OrderedDict()
        self.cache_size = 100_000
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token

    # --- facts -----------------------------------------------------------------------------

    @property
    def num_layers(self) -> int:
        """Number of transformer blocks L; hidden states run 0..L."""
        return int(self.config.num_hidden_layers)

    @property
    def hidden_size(self) -> int:
        return int(self.config.hidden_size)

    @property
    def num_heads(self) -> int:
        return int(self.config.num_attention_heads)

    @property
    def max_length(self) -> int:
        """Most tokens (specials included) one forward pass accepts."""
        tok_max = int(self.tokenizer.model_max_length)
        if tok_max < 100_000:
            return tok_max
        pos = getattr(self.config, "max_position_embeddings", None)
        return int(pos) if pos else 512

    @property
    def is_decoder(self) -> bool:
        """Decoders see left context only."""
        return not getattr(self.config, "is_encoder_decoder", False) and bool(
            getattr(self.config, "is_decoder", False) or self.config.model_type in _DECODER_TYPES
        )

    def check_layers(self, layers: Sequence[int] | None) -> tuple[int, ...]:
        """Validate requested layers (negative counts from the top); None means all 0..L."""
        top = self.num_layers
        if layers is None:
            return tuple(range(top + 1))
        out = []
        for layer in layers:
            real = top + 1 + layer if layer < 0 else layer
            if not 0 <= real <= top:
                raise InputError(f"layer {layer} is out of range for {self.name}: it has layers 0..{top}")
            out.append(real)
        if not out:
            raise InputError("no layers requested; give at least one layer")
        return tuple(sorted(set(out)))

    # --- tokenization ----------------------------------------------------------------------

    def tokenize(self, occurrence: Occurrence, max_length: int | None = None) -> TokenizedOccurrence:
        """Map an occurrence onto tokens; cut to a window around the target if it is too long."""
        return self.tokenize_many([occurrence], max_length)[0]

    def tokenize_many(
        self, occurrences: Sequence[Occurrence], max_length: int | None = None
    ) -> list[TokenizedOccurrence]:
        """:meth:`tokenize` for many occurrences in one tokenizer call (much faster)."""
        if not occurrences:
            return []
        limit = max_length or self.max_length
        encs = self.tokenizer(
            [o.text for o in occurrences],
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            add_special_tokens=True,
            truncation=False,
            verbose=False,
        )
        out = []
        for n, occurrence in enumerate(occurrences):
            ids: list[int] = list(encs["input_ids"][n])
            offsets = [tuple(o) for o in encs["offset_mapping"][n]]
            special = [bool(x) for x in encs["special_tokens_mask"][n]]
            targets = _overlapping(offsets, special, occurrence.start, occurrence.end)
            if not targets:
                raise InputError(
                    f"no token of {self.name} covers {occurrence.word!r} at characters "
                    f"{occurrence.start}:{occurrence.end} of {occurrence.text!r}; the tokenizer dropped it"
                )
            truncated, window = False, None
            if len(ids) > limit:
                ids, offsets, special, targets, window = _window(ids, offsets, special, targets, limit)
                truncated = True
            out.append(
                TokenizedOccurrence(
                    occurrence=occurrence,
                    input_ids=tuple(ids),
                    tokens=tuple(self.tokenizer.convert_ids_to_tokens(ids)),
                    offsets=tuple(offsets),
                    special=tuple(special),
                    target_positions=tuple(targets),
                    truncated=truncated,
                    window=window,
                )
            )
        return out

    # --- extraction ------------------------------------------------------------------------

    def encode_occurrences(
        self,
        occurrences: Sequence[Occurrence],
        layers: Sequence[int] | None = None,
        pooling: Pooling = "mean",
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> list[OccurrenceEncoding]:
        """Input rows and hidden states of each occurrence's target, pooled over its tokens.

        Results come back in input order; repeated requests are served from a cache.
        """
        if pooling not in POOLINGS:
            raise InputError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
        if batch_size < 1:
            raise InputError(f"batch_size must be at least 1, got {batch_size}")
        wanted = self.check_layers(layers)
        results: list[OccurrenceEncoding | None] = [None] * len(occurrences)
        todo: list[tuple[int, TokenizedOccurrence]] = []
        for i, occ in enumerate(occurrences):
            key = (occ.text, occ.start, occ.end, wanted, pooling)
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                results[i] = hit
            else:
                todo.append((i, occ))
        if todo:
            todo = [(i, tok) for (i, _), tok in zip(todo, self.tokenize_many([o for _, o in todo]), strict=True)]
            weight = self.model.get_input_embeddings().weight
            for batch in self._batches(todo, batch_size, show_progress_bar, "hidden states"):
                outputs = self._forward([t for _, t in batch], hidden_states=True)
                rows_idx = [row for row, (_, tok) in enumerate(batch) for _ in tok.target_positions]
                pos_idx = [p for _, tok in batch for p in tok.target_positions]
                # (layers, target tokens of the batch, d): only what is kept is copied out
                gathered = torch.stack([outputs.hidden_states[layer][rows_idx, pos_idx] for layer in wanted])
                target_ids = torch.tensor([tok.input_ids[p] for _, tok in batch for p in tok.target_positions])
                target_rows = weight[target_ids]
                offset = 0
                for i, tok in batch:
                    width = len(tok.target_positions)
                    hidden = _pool(gathered[:, offset : offset + width], pooling, dim=1)
                    rows = _pool(target_rows[offset : offset + width], pooling, dim=0)
                    offset += width
                    enc = OccurrenceEncoding(
                        model=self.name,
                        tokenized=tok,
                        layers=wanted,
                        hidden=hidden.float().numpy().copy(),
                        input_row_values=rows.detach().float().numpy().copy(),
                        pooling=pooling,
                    )
                    results[i] = enc
                    occ = tok.occurrence
                    self._remember((occ.text, occ.start, occ.end, wanted, pooling), enc)
        return results  # type: ignore[return-value]

    def encode(
        self, occurrence: Occurrence, layers: Sequence[int] | None = None, pooling: Pooling = "mean"
    ) -> OccurrenceEncoding:
        """One occurrence; see :meth:`encode_occurrences`."""
        return self.encode_occurrences([occurrence], layers=layers, pooling=pooling)[0]

    def forward_one(self, occurrence: Occurrence, attentions: bool = False) -> ForwardPass:
        """All hidden states (and optionally attentions) of every token of one text."""
        tok = self.tokenize(occurrence)
        if attentions:
            self._set_attention("eager")
        try:
            outputs = self._forward([tok], hidden_states=True, attentions=attentions)
        finally:
            if attentions:
                self._set_attention(self._attn_impl)
        hidden = torch.stack(outputs.hidden_states)[:, 0].float().numpy().copy()
        att = None
        if attentions:
            if outputs.attentions is None or any(a is None for a in outputs.attentions):
                raise InputError(f"{self.name} does not return attention weights")
            att = torch.stack(outputs.attentions)[:, 0].float().numpy().copy()
        weight = self.model.get_input_embeddings().weight
        rows = weight[torch.tensor(tok.input_ids)].detach().float().numpy().copy()
        return ForwardPass(tok, hidden, att, rows, self._position_rows(tok))

    def embed_sentences(
        self, texts: Sequence[str], batch_size: int = 32, show_progress_bar: bool = False
    ) -> np.ndarray:
        """Sentence embeddings with the model's own sentence-transformers pooling config."""
        cfg = sentence_config(self.source)
        if cfg is None:
            raise InputError(
                f"{self.name} has no sentence-transformers pooling config, so it is not a "
                "sentence-embedding model; use mean-pooled hidden states instead"
            )
        return self._pooled_texts(
            texts,
            layers=(self.num_layers,),
            mode=cfg.mode,
            normalize=cfg.normalize,
            max_length=min(cfg.max_seq_length, self.max_length),
            batch_size=batch_size,
            show_progress_bar=show_progress_bar,
        )[0]

    def embed_texts(
        self,
        texts: Sequence[str],
        layer: int = -1,
        mode: Literal["mean", "cls", "max"] = "mean",
        normalize: bool = False,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """One vector per text from the hidden states at ``layer``, pooled over its tokens."""
        return self.embed_texts_layers(texts, [layer], mode, normalize, batch_size, show_progress_bar)[0]

    def embed_texts_layers(
        self,
        texts: Sequence[str],
        layers: Sequence[int] | None = None,
        mode: Literal["mean", "cls", "max"] = "mean",
        normalize: bool = False,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """``(len(layers), n, d)``: :meth:`embed_texts` at several layers (default all) in one pass.

        Pooling runs over every token the attention mask keeps (specials included), as
        sentence-transformers does; texts are cut at the model's maximum length.
        """
        return self._pooled_texts(
            texts, self.check_layers(layers), mode, normalize, self.max_length, batch_size, show_progress_bar
        )

    def embed_input_rows(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """Mean of the input rows of each text's tokens (specials excluded): the seed's "design
        mistake" kept as a retrieval baseline. No forward pass is needed."""
        weight = self.model.get_input_embeddings().weight
        out = np.zeros((len(texts), self.hidden_size), dtype=np.float32)
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"text {i} is empty; every text must contain something to embed")
            ids = self.tokenizer(
                text, add_special_tokens=False, truncation=True, max_length=self.max_length, verbose=False
            )["input_ids"]
            if not ids:
                raise InputError(f"text {i} has no tokens for {self.name}")
            with torch.inference_mode():
                out[i] = weight[torch.tensor(ids)].mean(0).float().numpy()
        return out

    def encode_tokens(
        self,
        texts: Sequence[str],
        layers: Sequence[int] | None = None,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> list[TokenStates]:
        """Hidden states of every (non-special) token of each text at the requested layers.

        For corpus statistics such as Ethayarajh's contextuality metrics; texts longer than the
        model's maximum length are truncated at the end (``TokenStates.truncated`` says so).
        """
        wanted = self.check_layers(layers)
        layer_index = torch.tensor(wanted)
        items = []
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"text {i} is empty; every text must contain something to encode")
            enc = self.tokenizer(
                text, return_offsets_mapping=True, return_special_tokens_mask=True, truncation=False, verbose=False
            )
            ids = list(enc["input_ids"])
            truncated = len(ids) > self.max_length
            items.append((i, ids[: self.max_length], enc, truncated))
        results: list[TokenStates | None] = [None] * len(texts)
        for batch in self._batches([(i, ids) for i, ids, _, _ in items], batch_size, show_progress_bar, "tokens"):
            input_ids, mask = self._pad([ids for _, ids in batch])
            outputs = self._run(input_ids, mask, hidden_states=True)
            stacked = torch.stack(outputs.hidden_states)[layer_index]
            for row, (i, ids) in enumerate(batch):
                _, _, enc, truncated = items[i]
                special = enc["special_tokens_mask"][: len(ids)]
                keep = [p for p, s in enumerate(special) if not s]
                results[i] = TokenStates(
                    text=texts[i],
                    token_ids=tuple(ids[p] for p in keep),
                    tokens=tuple(self.tokenizer.convert_ids_to_tokens([ids[p] for p in keep])),
                    offsets=tuple(tuple(enc["offset_mapping"][p]) for p in keep),
                    layers=wanted,
                    states=stacked[:, row, keep, :].float().numpy().copy(),
                    truncated=truncated,
                )
        return results  # type: ignore[return-value]

    # --- internals -------------------------------------------------------------------------

    def _pooled_texts(
        self,
        texts: Sequence[str],
        layers: tuple[int, ...],
        mode: str,
        normalize: bool,
        max_length: int,
        batch_size: int,
        show_progress_bar: bool,
    ) -> np.ndarray:
        if mode not in ("mean", "cls", "max"):
            raise InputError(f"unknown text pooling {mode!r}; use mean, cls or max")
        for n, t in enumerate(texts):
            if not isinstance(t, str) or not t.strip():
                raise InputError(f"text {n} is empty; every text must contain something to embed")
        out = np.zeros((len(layers), len(texts), self.hidden_size), dtype=np.float32)
        encoded = self.tokenizer(list(texts), truncation=True, max_length=max_length, verbose=False)["input_ids"]
        items = list(enumerate(encoded))
        for batch in self._batches(items, batch_size, show_progress_bar, "texts"):
            input_ids, mask = self._pad([ids for _, ids in batch])
            outputs = self._run(input_ids, mask, hidden_states=True)
            m = mask.unsqueeze(-1).float()
            rows = [i for i, _ in batch]
            for k, layer in enumerate(layers):
                states = outputs.hidden_states[layer].float()
                if mode == "mean":
                    pooled = (states * m).sum(1) / m.sum(1).clamp(min=1)
                elif mode == "cls":
                    pooled = states[:, 0]
                else:
                    pooled = states.masked_fill(m == 0, -1e9).max(1).values
                if normalize:
                    pooled = torch.nn.functional.normalize(pooled, dim=-1)
                out[k, rows] = pooled.numpy()
        return out

    def _batches(self, items: list, batch_size: int, show_progress_bar: bool, what: str) -> Iterator[list]:
        """Longest first, so padding is small and memory peaks early; input order restored by caller."""
        ordered = sorted(items, key=lambda item: -len(item[1]))
        chunks = [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
        if not show_progress_bar or len(chunks) < 2:
            yield from chunks
            return
        from rich.progress import Progress

        with Progress(transient=True) as progress:
            task = progress.add_task(f"{self.name}: {what}", total=len(items))
            for chunk in chunks:
                yield chunk
                progress.advance(task, len(chunk))

    def _pad(self, sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(s) for s in sequences)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[row, : len(seq)] = 1
        return ids, mask

    def _forward(self, toks: Sequence[TokenizedOccurrence], hidden_states: bool, attentions: bool = False):
        ids, mask = self._pad([t.input_ids for t in toks])
        return self._run(ids, mask, hidden_states=hidden_states, attentions=attentions)

    def _run(self, ids: torch.Tensor, mask: torch.Tensor, hidden_states: bool, attentions: bool = False):
        with torch.inference_mode():
            return self.model(
                input_ids=ids,
                attention_mask=mask,
                output_hidden_states=hidden_states,
                output_attentions=attentions,
            )

    def _set_attention(self, impl: str) -> None:
        if self.model.config._attn_implementation != impl:
            self.model.set_attn_implementation(impl)

    def _position_rows(self, tok: TokenizedOccurrence) -> np.ndarray | None:
        """Learned absolute position embeddings of each position, where the model has them."""
        emb = getattr(self.model, "embeddings", None)
        table = getattr(emb, "position_embeddings", None)
        if table is None or not hasattr(table, "weight"):
            return None
        n = len(tok.input_ids)
        if self.config.model_type in {"mpnet", "roberta", "xlm-roberta"}:
            pad = self.tokenizer.pad_token_id  # positions start after the padding index
            positions = torch.arange(pad + 1, pad + 1 + n)
        else:
            positions = torch.arange(n)
        return table.weight[positions].detach().float().numpy().copy()

    def _remember(self, key: tuple, enc: OccurrenceEncoding) -> None:
        self._cache[key] = enc
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


_DECODER_TYPES = {"llama", "gpt2", "mistral", "qwen2", "gemma", "phi", "gpt_neox", "smollm3"}


@dataclass(frozen=True)
class SentenceConfig:
    mode: str
    normalize: bool
    max_seq_length: int


def sentence_config(source: str) -> SentenceConfig | None:
    """Read a sentence-transformers folder's pooling, normalization and max length."""
    folder = Path(source)
    modules_file = folder / "modules.json"
    if not modules_file.exists():
        return None
    modules = json.loads(modules_file.read_text())
    normalize = any(m.get("type", "").endswith("Normalize") for m in modules)
    pooling = next((m for m in modules if m.get("type", "").endswith("Pooling")), None)
    if pooling is None:
        return None
    cfg = json.loads((folder / pooling["path"] / "config.json").read_text())
    if cfg.get("pooling_mode_mean_tokens"):
        mode = "mean"
    elif cfg.get("pooling_mode_cls_token"):
        mode = "cls"
    elif cfg.get("pooling_mode_max_tokens"):
        mode = "max"
    else:
        return None
    st_file = folder / "sentence_bert_config.json"
    max_len = json.loads(st_file.read_text()).get("max_seq_length", 512) if st_file.exists() else 512
    return SentenceConfig(mode, normalize, int(max_len))


@lru_cache(maxsize=4)
def load_contextual(name_or_path: str = "mpnet") -> ContextualModel:
    """Load a contextual model by registry name, local folder or hub id; one instance per name."""
    name, source, revision = resolve_contextual(name_or_path)
    return ContextualModel(name, source, revision)


def _overlapping(offsets: Sequence[tuple[int, int]], special: Sequence[bool], start: int, end: int) -> list[int]:
    return [i for i, (a, b) in enumerate(offsets) if not special[i] and b > a and a < end and b > start]


def _window(ids, offsets, special, targets, limit):
    """Keep ``limit`` tokens: the specials at both ends and a body window centred on the target."""
    n = len(ids)
    head = 0
    while head < n and special[head]:
        head += 1
    tail = n
    while tail > head and special[tail - 1]:
        tail -= 1
    budget = limit - head - (n - tail)
    span = targets[-1] - targets[0] + 1
    if budget < span:
        raise InputError(f"the target spans {span} tokens, more than the {budget} that fit in one window")
    centre = (targets[0] + targets[-1]) // 2
    lo = max(head, min(centre - budget // 2, tail - budget))
    hi = lo + budget
    keep = list(range(head)) + list(range(lo, hi)) + list(range(tail, n))
    new_pos = {old: new for new, old in enumerate(keep)}
    window = (offsets[lo][0], offsets[hi - 1][1])
    return (
        [ids[i] for i in keep],
        [offsets[i] for i in keep],
        [special[i] for i in keep],
        [new_pos[t] for t in targets],
        window,
    )


def _pool(x: torch.Tensor, pooling: str, dim: int) -> torch.Tensor:
    if pooling == "mean":
        return x.mean(dim=dim)
    index = 0 if pooling == "first" else -1
    return x.select(dim, index)
