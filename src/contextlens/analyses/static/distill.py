"""`static distill`: a static model distilled from a contextual model's own folder, offline, by
model2vec's recipe computed here.

model2vec (PyPI) distills only through its ``distill`` extra, which pins ``transformers<5.4`` and
adds ``skeletoken``; contextlens runs on transformers 5.24, so installing it would downgrade the
project's transformers. The recipe is small and is computed here, step for step as model2vec 0.10
does it (model2vec/distill/distillation.py and inference.py):

1. every token of the teacher's vocabulary except its special tokens and ``[unused..]`` slots, in
   id order, is run through the teacher alone between its special tokens (``[CLS] tok [SEP]``);
   its vector is the mean of the last layer over those positions (``pooling="mean"``);
2. PCA to ``pca_dims`` components (an eigendecomposition of the covariance, each component's sign
   fixed so that its largest score is positive);
3. each row weighted by SIF, ``sif / (sif + p(rank))`` with ``p`` Zipf's law over the id order
   (the tokenizer's order stands for frequency, as in model2vec).

A text is then the normalized mean of its tokens' rows (core.static_models.DistilledStaticModel).
model2vec also stores float16; this keeps float32.
"""

from __future__ import annotations

import re
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contextlens.core import arguments, atomic_files
from contextlens.core.progress import Progress, progress_bar
from contextlens.core.static_store import TOKENIZER, VECTORS, check_new, save_made
from contextlens.errors import InputError, ParameterError

UNUSED = re.compile(r"\[unused\d+\]")


@dataclass(frozen=True)
class DistilledModel:
    name: str
    path: str
    teacher: str
    teacher_kind: str
    tokens: int
    dim: int
    teacher_dim: int
    pca_dims: int
    explained_variance: float
    sif_coefficient: float
    pooling: str
    seconds: float
    recipe: str = "model2vec 0.10 distill (PCA, SIF with Zipf weights, mean pooling), computed here"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def vocabulary_tokens(tokenizer: Any) -> list[tuple[int, str]]:
    """``(id, token)`` of every vocabulary token a text can be cut into, in id order: special
    (added) tokens and BERT's ``[unused..]`` slots left out."""
    special = set(tokenizer.all_special_ids)
    added = set(tokenizer.get_added_vocab().values())
    vocab = tokenizer.get_vocab()
    return sorted((i, t) for t, i in vocab.items() if i not in special and i not in added and not UNUSED.fullmatch(t))


def token_embeddings(
    model: Any, ids: list[int], batch_size: int = 256, show_progress_bar: bool = False, progress: Progress | None = None
) -> np.ndarray:
    """The teacher's last layer averaged over ``[CLS] tok [SEP]`` for each token id (model2vec's
    ``create_embeddings`` with mean pooling)."""
    import torch

    wrapped = model.tokenizer("", add_special_tokens=True)["input_ids"]
    prefix, suffix = list(wrapped[:1]), list(wrapped[1:])
    rows = []
    with progress_bar(f"{model.name}: vocabulary tokens", len(ids)) if show_progress_bar else nullcontext() as bar:
        for start in range(0, len(ids), batch_size):
            chunk = ids[start : start + batch_size]
            seqs = torch.tensor([[*prefix, i, *suffix] for i in chunk], dtype=torch.long)
            mask = torch.ones_like(seqs)
            hidden = model.run(seqs, mask, hidden_states=False).last_hidden_state.float()
            rows.append(hidden.mean(dim=1).numpy())
            for tell in (bar, progress):
                if tell is not None:
                    tell(min(start + batch_size, len(ids)), len(ids))
    return np.nan_to_num(np.concatenate(rows).astype(np.float64))


def pca(matrix: np.ndarray, n_components: int) -> tuple[np.ndarray, float]:
    """model2vec's PCA: the scores on the top components, signs fixed; and the variance share kept."""
    centered = matrix - matrix.mean(axis=0)
    cov = centered.T @ centered / (len(matrix) - 1)
    eigvals, eigvecs = np.linalg.eigh(cov)
    eigvals, eigvecs = np.clip(eigvals[::-1], 0, None), eigvecs[:, ::-1]
    components = eigvecs[:, :n_components].T
    scores = centered @ components.T
    biggest = np.argmax(np.abs(scores), axis=0)
    scores *= np.sign(scores[biggest, range(scores.shape[1])])
    return scores, float(eigvals[:n_components].sum() / eigvals.sum())


def sif_weights(n: int, sif_coefficient: float) -> np.ndarray:
    """model2vec's ``compute_weights``: Zipf probability of rank 2..n+1, then ``a / (a + p)``."""
    inv_rank = 1 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    return sif_coefficient / (sif_coefficient + proba)


def check_arguments(
    pca_dims: Any, sif_coefficient: Any, batch_size: Any, teacher: Any = None
) -> tuple[int, float, int]:
    """The distillation's numbers, checked before any weights load; with ``teacher`` (a loaded model
    or its config facts: ``name``, ``hidden_size``), ``pca_dims`` against its hidden size too."""
    pca_dims = arguments.whole_number(pca_dims, "pca_dims", minimum=2, maximum=4096)
    hidden = getattr(teacher, "hidden_size", None)
    if hidden is not None and pca_dims > hidden:
        raise ParameterError(
            "pca_dims", f"must be at most {hidden}, the hidden size of {teacher.name} (PCA keeps at most as many "
            f"dimensions as the teacher has), got {pca_dims}"
        )  # fmt: skip
    batch_size = arguments.batch_size(batch_size)
    if isinstance(sif_coefficient, bool) or not isinstance(sif_coefficient, float | int) or not 0 < sif_coefficient < 1:
        raise ParameterError("sif_coefficient", f"must be between 0 and 1 (model2vec: 1e-4), got {sif_coefficient!r}")
    return pca_dims, float(sif_coefficient), batch_size


def distill_static(
    model: Any = "minilm",
    *,
    name: str,
    pca_dims: int = 256,
    sif_coefficient: float = 1e-4,
    batch_size: int = 256,
    force: bool = False,
    show_progress_bar: bool = False,
    progress: Progress | None = None,
) -> DistilledModel:
    """Distill ``model`` (a registered name or a model folder, read offline) into the static model ``name``."""
    check_new(name, arguments.flag(force, "force"))
    pca_dims, sif_coefficient, batch_size = check_arguments(pca_dims, sif_coefficient, batch_size)
    from contextlens.core.contextual_models import as_contextual

    teacher = as_contextual(model)
    check_arguments(pca_dims, sif_coefficient, batch_size, teacher)
    teacher.require_torch("distillation")
    if teacher.is_decoder:
        raise InputError(f"{teacher.name} is a decoder; distill an encoder (minilm, mpnet, a BERT-like folder)")
    started = time.perf_counter()
    tokens = vocabulary_tokens(teacher.tokenizer)
    if len(tokens) <= pca_dims:
        raise InputError(f"{teacher.name} has {len(tokens)} tokens, not more than `pca_dims` {pca_dims}")
    raw = token_embeddings(teacher, [i for i, _ in tokens], batch_size, show_progress_bar, progress)
    dims = min(pca_dims, raw.shape[1])
    reduced, kept = pca(raw, dims)
    vectors = (reduced * sif_weights(len(reduced), sif_coefficient)[:, None]).astype(np.float32)
    seconds = time.perf_counter() - started
    result = DistilledModel(
        name=name,
        path="",
        teacher=teacher.name,
        teacher_kind="sentence encoder" if (Path(teacher.source) / "modules.json").is_file() else "contextual",
        tokens=len(tokens),
        dim=dims,
        teacher_dim=int(raw.shape[1]),
        pca_dims=pca_dims,
        explained_variance=round(kept, 4),
        sif_coefficient=float(sif_coefficient),
        pooling="mean",
        seconds=round(seconds, 2),
    )

    def write(folder: Path) -> None:
        from gensim.models import KeyedVectors

        kv = KeyedVectors(dims, dtype=np.float32)
        kv.add_vectors([t for _, t in tokens], vectors)
        kv.save(str(folder / VECTORS))
        atomic_files.write_text(folder / TOKENIZER, teacher.tokenizer.backend_tokenizer.to_str())

    provenance = {**result.to_dict(), "method": "distilled", "teacher_source": str(teacher.source)}
    del provenance["path"], provenance["name"]
    folder = save_made(name, write, provenance)
    return DistilledModel(**{**result.to_dict(), "path": str(folder)})
