"""`contextlens tune`: fine-tune a shipped encoder so that a word's hidden state at one layer
separates its senses, on WordNet lemmas no benchmark scores (:mod:`.data`), with the objective of
:mod:`.objective`; the result is a model folder registered by name (:mod:`.folder`).

What a run guarantees:

* **Reproducible.** No dropout (the network runs in eval mode while it learns: the objective has
  no need for its noise), lemma order per epoch from the seed, the learning rate a function of
  the step: on one thread the same settings give the same weights, bit for bit.
* **Early stopping** on the dev lemmas' within-lemma AUC, evaluated before the first step (the
  base model's score) and every ``eval_every`` steps; the weights kept are the best evaluation's,
  which may be the base model's own when tuning never helps on dev.
* **Resumable.** A checkpoint (trainable weights, optimizer, best weights, history) is written
  atomically every ``checkpoint_every`` steps and at each evaluation; a run started again with
  the same settings continues from it, to the same weights an unbroken run gives.

Only the transformer blocks up to the tuned layer learn: the input embedding table (the "input
rows") stays the base model's, the blocks above the layer are untouched, and the forward pass
stops at the layer.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from contextlens.analyses.tuning.data import LemmaGroup, TuningData, build_tuning_data
from contextlens.analyses.tuning.folder import check_new_name, work_dir, write_tuned
from contextlens.analyses.tuning.objective import lemma_contrastive, pooled_targets, within_lemma_auc
from contextlens.analyses.tuning.settings import TuneSettings, check_base
from contextlens.core.alignment import TokenizedOccurrence, tokenize_many
from contextlens.core.atomic_files import atomic_path
from contextlens.core.progress import progress_bar
from contextlens.core.threads import current_threads
from contextlens.errors import InputError, ParameterError

CHECKPOINT = "checkpoint.pt"
WARMUP_SHARE = 0.1


@dataclass(frozen=True)
class TuneStep:
    """What a face shows after each step: the loss, and the dev score when it was evaluated."""

    step: int
    total: int
    loss: float
    dev_auc: float | None
    best_step: int
    best_dev_auc: float


@dataclass
class TuneResult:
    """A tuned model: its name (pass it as ``model``), folder, and how it was made."""

    name: str
    path: str
    base: str
    layer: int
    steps: int
    best_step: int
    dev_auc_base: float
    dev_auc_best: float
    stopped: str  # "early" (patience ran out), "steps" (max_steps), "epochs"
    resumed_from: int
    train_seconds: float
    threads: int
    weights_sha256: str
    settings: dict[str, Any]
    data: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    onnx: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _State:
    """Everything a checkpoint holds: enough to continue exactly where a run stopped."""

    step: int
    best_step: int
    best_auc: float
    base_auc: float
    stale: int
    seconds: float
    history: list[dict[str, Any]]
    best_weights: dict[str, torch.Tensor]


class _Tokenizer:
    """The attributes :func:`tokenize_many` reads from a model, for the base model's tokenizer."""

    def __init__(self, name: str, tokenizer: Any, max_length: int):
        self.name, self.tokenizer, self.max_length = name, tokenizer, max_length


def tune(
    base: str = "minilm",
    name: str | None = None,
    *,
    force: bool = False,
    restart: bool = False,
    export_onnx: bool = True,
    show_progress_bar: bool = False,
    on_step: Callable[[TuneStep], None] | None = None,
    **settings: Any,
) -> TuneResult:
    """Fine-tune ``base`` and register the result as ``name``; ``settings`` are the fields of
    :class:`~contextlens.analyses.tuning.settings.TuneSettings` (layer, epochs, max_steps, ...).
    Started again after a kill with the same settings, it resumes from its checkpoint."""
    try:
        wanted = TuneSettings(**settings)
    except TypeError as exc:
        raise InputError(f"unknown tuning setting ({exc}); see TuneSettings for the settings") from exc
    name = check_new_name(name, force)
    facts = check_base(base)
    wanted = wanted.checked(facts.num_layers)
    data = build_tuning_data(
        max_lemmas=wanted.max_lemmas,
        dev_share=wanted.dev_share,
        max_per_sense=wanted.max_per_sense,
        seed=wanted.seed,
        glosses=wanted.glosses,
    )
    if not data.check.clean:  # cannot happen by construction; counted so that it is shown, not assumed
        raise InputError(f"the tuning data overlaps the benchmarks ({vars(data.check)}); report this as a bug")
    run = _Run(base, name, wanted, data)
    state, resumed = run.start(restart)
    bar = progress_bar(f"tune {name}", run.total) if show_progress_bar else None
    with bar if bar is not None else _no_bar() as tell:
        stopped = run.loop(state, lambda s: _tell(s, tell, on_step))
    path, digest = write_tuned(name, run, state, stopped, data, resumed)
    shutil.rmtree(work_dir(name), ignore_errors=True)
    onnx = _export(name) if export_onnx else None
    return TuneResult(
        name, str(path), run.base_name, wanted.layer, state.step, state.best_step, state.base_auc, state.best_auc,
        stopped, resumed, round(state.seconds, 2), current_threads(), digest, asdict(wanted), data.to_dict(),
        state.history, onnx,
    )  # fmt: skip


def _tell(step: TuneStep, tell: Callable[[int, int], None] | None, on_step: Callable[[TuneStep], None] | None) -> None:
    if tell is not None:
        tell(step.step, step.total)
    if on_step is not None:
        on_step(step)


class _no_bar:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _export(name: str) -> dict[str, Any] | None:
    """The lean path's ONNX export of the tuned model, made and checked against torch now, as
    every shipped encoder's is on first use; None without the ``runtimes`` extra."""
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.onnx_graphs import export_summary, onnxruntime_installed
    from contextlens.core.resources import resolve_contextual

    if not onnxruntime_installed():
        return None
    load_contextual(name, "fp32", "onnx")
    resolved, source, _revision = resolve_contextual(name)
    return export_summary(resolved, str(source))


class _Run:
    """One tuning run: the trainable network, the tokenized data, the optimizer, the checkpoint."""

    def __init__(self, base: str, name: str, settings: TuneSettings, data: TuningData):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from contextlens.core.model_facts import loaded_window
        from contextlens.core.resources import resolve_contextual, sha256_file

        self.name, self.settings, self.data = name, settings, data
        self.base_name, source, revision = resolve_contextual(base)
        self.base_source = Path(source)
        self.base_sha256 = sha256_file(self.base_source / "model.safetensors")
        torch.manual_seed(settings.seed)
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
        self.net = AutoModel.from_pretrained(source, revision=revision, attn_implementation="eager")
        self.net.eval()  # no dropout: see the module's docstring
        self.pad_id = int(tokenizer.pad_token_id or 0)
        blocks = _blocks(self.net, self.base_name)
        self.net.encoder.layer = torch.nn.ModuleList(list(blocks)[: settings.layer])  # the forward stops there
        for parameter in self.net.parameters():
            parameter.requires_grad_(False)
        for parameter in self.net.encoder.layer.parameters():
            parameter.requires_grad_(True)
        self.trainable = [n for n, p in self.net.named_parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            [p for p in self.net.parameters() if p.requires_grad], lr=settings.learning_rate, weight_decay=0.01
        )
        tok = _Tokenizer(self.base_name, tokenizer, loaded_window(tokenizer, self.net.config))
        self.train = [_tokenized(tok, g) for g in data.train]
        self.dev = [_tokenized(tok, g) for g in data.dev]
        self.steps_per_epoch = math.ceil(len(self.train) / settings.lemmas_per_step)
        planned = settings.epochs * self.steps_per_epoch
        self.total = planned if settings.max_steps is None else min(planned, settings.max_steps)
        self.checkpoint = work_dir(name) / CHECKPOINT

    # --- checkpoint ----------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """What a checkpoint must match to be resumed: the settings, the data, the base weights."""
        return {"settings": asdict(self.settings), "split_hash": self.data.split_hash, "base": self.base_sha256}

    def start(self, restart: bool) -> tuple[_State, int]:
        """A fresh state (the base model's dev score as the first best), or the checkpoint's."""
        if self.checkpoint.is_file() and not restart:
            saved = torch.load(self.checkpoint, weights_only=False)
            if saved["identity"] != self.identity():
                raise ParameterError(
                    "restart",
                    f"an interrupted tuning of {self.name!r} with other settings or data is at "
                    f"{self.checkpoint.parent}; run it again with the same settings to resume, or pass `restart`",
                )
            self.net.load_state_dict(saved["weights"], strict=False)
            self.optimizer.load_state_dict(saved["optimizer"])
            state = _State(**saved["state"])
            return state, state.step
        auc = self.dev_auc()
        state = _State(0, 0, auc, auc, 0, 0.0, [{"step": 0, "loss": None, "dev_auc": auc}], self.weights())
        return state, 0

    def save(self, state: _State) -> None:
        body = {
            "identity": self.identity(),
            "weights": self.weights(),
            "optimizer": self.optimizer.state_dict(),
            "state": asdict(state),
        }
        with atomic_path(self.checkpoint, durable=True) as tmp:
            torch.save(body, tmp)

    def weights(self) -> dict[str, torch.Tensor]:
        params = dict(self.net.named_parameters())
        return {n: params[n].detach().clone() for n in self.trainable}

    # --- the loop ------------------------------------------------------------------------

    def loop(self, state: _State, told: Callable[[TuneStep], None]) -> str:
        """Steps until the planned total or until the dev score stops improving."""
        s = self.settings
        while state.step < self.total:
            started = time.perf_counter()
            loss = self.train_step(state.step)
            state.step += 1
            dev = None
            if state.step % s.eval_every == 0 or state.step == self.total:
                dev = self.dev_auc()
                if dev > state.best_auc:
                    state.best_auc, state.best_step, state.stale = dev, state.step, 0
                    state.best_weights = self.weights()
                else:
                    state.stale += 1
            state.seconds += time.perf_counter() - started
            if not s.keep_best:
                state.best_weights = self.weights()
            state.history.append({"step": state.step, "loss": round(loss, 6), "dev_auc": dev})
            done = dev is not None and state.stale >= s.patience
            if done or dev is not None or state.step % s.checkpoint_every == 0 or state.step == self.total:
                self.save(state)
            told(TuneStep(state.step, self.total, loss, dev, state.best_step, state.best_auc))
            if done:
                return "early"
        return "steps" if s.max_steps is not None and self.total == s.max_steps else "epochs"

    def batch(self, step: int) -> list[list[TokenizedOccurrence]]:
        """The lemmas of ``step``: its slice of its epoch's seeded order."""
        epoch, index = divmod(step, self.steps_per_epoch)
        order = np.random.default_rng([self.settings.seed, epoch]).permutation(len(self.train))
        n = self.settings.lemmas_per_step
        return [self.train[i] for i in order[index * n : (index + 1) * n]]

    def learning_rate(self, step: int) -> float:
        """Linear warm-up over the first tenth of the planned steps, then linear decay to zero."""
        warmup = max(1, round(self.total * WARMUP_SHARE))
        peak = self.settings.learning_rate
        if step < warmup:
            return peak * (step + 1) / warmup
        return peak * max(0.0, (self.total - step) / max(1, self.total - warmup))

    def train_step(self, step: int) -> float:
        lemmas = self.batch(step)
        flat = [item for lemma in lemmas for item in lemma]
        states = pooled_targets(self.net, flat, self.pad_id)
        total, anchors, row = states.sum() * 0.0, 0, 0
        for lemma in lemmas:
            synsets = [item.synset for item in lemma]  # type: ignore[attr-defined]
            part, count = lemma_contrastive(states[row : row + len(lemma)], synsets, self.settings.temperature)
            total, anchors, row = total + part, anchors + count, row + len(lemma)
        loss = total / max(1, anchors)
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate(step)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in self.net.parameters() if p.requires_grad], 1.0)
        self.optimizer.step()
        return float(loss.detach())

    def dev_auc(self, batch_size: int = 64) -> float:
        flat = [item for lemma in self.dev for item in lemma]
        order = sorted(range(len(flat)), key=lambda i: -len(flat[i]))
        out = np.zeros((len(flat), self.net.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                out[rows] = pooled_targets(self.net, [flat[i] for i in rows], self.pad_id).numpy()
        return within_lemma_auc(out, [[item.synset for item in lemma] for lemma in self.dev])  # type: ignore[attr-defined]


@dataclass(frozen=True)
class _Item(TokenizedOccurrence):
    """A tokenized usage example with its synset (the label the objective reads)."""

    synset: str = ""


def _tokenized(tok: _Tokenizer, group: LemmaGroup) -> list[_Item]:
    items = tokenize_many(tok, [e.occurrence() for e in group.examples])  # type: ignore[arg-type]
    return [_Item(**{f: getattr(t, f) for f in t.__dataclass_fields__}, synset=e.synset)
            for t, e in zip(items, group.examples, strict=True)]  # fmt: skip


def _blocks(net: Any, name: str) -> Sequence[Any]:
    encoder = getattr(net, "encoder", None)
    blocks = getattr(encoder, "layer", None)
    if not isinstance(blocks, torch.nn.ModuleList):
        raise InputError(f"tune fine-tunes BERT-style encoders (minilm, mpnet); {name!r} has no encoder.layer blocks")
    return blocks
