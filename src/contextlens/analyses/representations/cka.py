"""Linear CKA between every layer of two models on the same token positions.

Hidden states of two models live in different spaces, so a cosine between them means nothing
(contextlens refuses it, see core.vectors). What can be compared is the *geometry* each model
gives the same inputs: centred kernel alignment (Kornblith, Norouzi, Lee & Hinton, "Similarity
of Neural Network Representations Revisited", ICML 2019). With ``X`` (n x d1) and ``Y`` (n x d2)
the column-centred states of the same n tokens,

    CKA(X, Y) = ||Y^T X||_F^2 / (||X^T X||_F * ||Y^T Y||_F)

It is 1 for identical geometry, invariant to orthogonal rotations and isotropic scaling of either
side, works across widths (384 vs 768), and is near 0 for unrelated features once n >> d.

Alignment rule (tokenizers differ): a token's span is its character offsets with surrounding
whitespace trimmed (byte-level BPE puts the space inside the token). Token i of A is paired with
token j of B when their trimmed spans are identical; tokens with no identical span on the other
side (a word split differently) are dropped. A text is skipped (and counted) when fewer than
half of either model's tokens are paired.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from contextlens.core import arguments
from contextlens.core.arguments import whole_number
from contextlens.core.jsonable import plain_json
from contextlens.data.text_sets import corpus_texts
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel, TokenStates

MIN_TEXTS = 20  # aligned texts; fewer gives a CKA dominated by its small-sample bias
MIN_PAIRED_SHARE = 0.5  # a text with fewer paired tokens than this (either side) is skipped


@dataclass
class CkaResult:
    """``matrix[i, j]`` = linear CKA of layer ``layers_a[i]`` of A and ``layers_b[j]`` of B."""

    model_a: str
    model_b: str
    layers_a: list[int]
    layers_b: list[int]
    matrix: np.ndarray = field(repr=False)
    corpus: str
    texts: int  # texts given
    aligned_texts: int  # texts used
    skipped_texts: int  # texts whose tokens could not be aligned
    tokens: int  # paired token positions (n)
    dropped_tokens: int  # tokens of A without an identical span in B (in the texts used)
    seconds: float = 0.0
    precision_a: str = "fp32"  # the precision each model ran at (fp32, or int8: core/precision.py)
    precision_b: str = "fp32"
    runtime_a: str = "torch"  # the runtime each model ran on (torch, or onnx: core/onnx_runtime.py)
    runtime_b: str = "torch"

    def best_match(self) -> list[int]:
        """For each layer of A, the layer of B with the highest CKA."""
        return [self.layers_b[int(j)] for j in np.argmax(self.matrix, axis=1)]

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        return {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "precision_a": self.precision_a,
            "precision_b": self.precision_b,
            "runtime_a": self.runtime_a,
            "runtime_b": self.runtime_b,
            "layers_a": self.layers_a,
            "layers_b": self.layers_b,
            "matrix": self.matrix,
            "best_match": self.best_match(),
            "corpus": self.corpus,
            "texts": self.texts,
            "aligned_texts": self.aligned_texts,
            "skipped_texts": self.skipped_texts,
            "tokens": self.tokens,
            "dropped_tokens": self.dropped_tokens,
            "seconds": self.seconds,
            "method": "linear CKA (Kornblith et al. 2019), tokens paired by identical trimmed character spans",
        }


# --- the measure ------------------------------------------------------------------------------


def centre(x: np.ndarray) -> np.ndarray:
    """Column-centred float64 copy: CKA compares centred Gram matrices."""
    x = np.asarray(x, dtype=np.float64)
    return x - x.mean(axis=0, keepdims=True)


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA of two representations of the same n examples (rows), any widths."""
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise InputError(f"CKA needs two matrices with the same number of rows, got {x.shape} and {y.shape}")
    if x.shape[0] < 2:
        raise InputError("CKA needs at least 2 examples")
    return cka_matrix([x], [y])[0, 0]


def cka_matrix(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> np.ndarray:
    """``out[i, j]`` = linear CKA of ``xs[i]`` and ``ys[j]`` (all with the same rows).

    ``||Y^T X||_F^2`` is also ``<X X^T, Y Y^T>_F``: with n rows fewer than the widths (the demo's
    ~600 tokens against 768 dimensions and 13 layers), one n x n Gram matrix per representation and
    one inner product per pair cost far less than one d x d product per pair (mpnet's layer x layer
    matrix: 169 such products). The same numbers to float rounding (1e-15); the cheaper way is
    chosen by its multiply count, and the Gram way only while its matrices fit in GRAM_BYTES."""
    cx = [centre(x) for x in xs]
    cy = cx if ys is xs else [centre(y) for y in ys]
    n = cx[0].shape[0] if cx else 0
    direct = sum(x.shape[1] * y.shape[1] for x in cx for y in cy) * n
    grams = sum(x.shape[1] for x in cx) * n * n + (0 if ys is xs else sum(y.shape[1] for y in cy) * n * n)
    kept = (len(cx) + (0 if ys is xs else len(cy))) * n * n * 8
    if grams + len(cx) * len(cy) * n * n < direct and kept <= GRAM_BYTES:
        gx = [x @ x.T for x in cx]
        gy = gx if ys is xs else [y @ y.T for y in cy]
        nx = [np.linalg.norm(g) for g in gx]
        ny = nx if ys is xs else [np.linalg.norm(g) for g in gy]
        cross = lambda i, j: float(np.vdot(gx[i], gy[j]))  # noqa: E731
    else:
        nx = [np.linalg.norm(x.T @ x) for x in cx]
        ny = nx if ys is xs else [np.linalg.norm(y.T @ y) for y in cy]
        cross = lambda i, j: float(np.linalg.norm(cy[j].T @ cx[i]) ** 2)  # noqa: E731
    out = np.zeros((len(cx), len(cy)))
    for i in range(len(cx)):
        for j in range(len(cy)):
            denom = nx[i] * ny[j]
            out[i, j] = cross(i, j) / denom if denom > 0 else np.nan
    return out


GRAM_BYTES = 1 << 29  # 512 MiB of Gram matrices at most (13 layers of 2,000 tokens: 416 MiB)


# --- alignment across tokenizers -------------------------------------------------------------


def trimmed_spans(states: TokenStates) -> list[tuple[int, int]]:
    """Each token's character span without the whitespace a BPE token may carry."""
    text = states.text
    spans = []
    for start, end in states.offsets:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        spans.append((start, end))
    return spans


def align(a: TokenStates, b: TokenStates) -> tuple[list[int], list[int]]:
    """Indices of A's and B's tokens paired by identical trimmed spans (first token of a span wins)."""
    where_b: dict[tuple[int, int], int] = {}
    for j, span in enumerate(trimmed_spans(b)):
        if span[1] > span[0]:
            where_b.setdefault(span, j)
    ia, ib, used = [], [], set()
    for i, span in enumerate(trimmed_spans(a)):
        j = where_b.get(span)
        if j is not None and j not in used:
            used.add(j)
            ia.append(i)
            ib.append(j)
    return ia, ib


# --- the analysis -----------------------------------------------------------------------------


def _checked_states(states: Sequence[TokenStates], texts: Sequence[str], num_layers: int) -> list[TokenStates]:
    """``states`` when they are of ``texts``, in order, at every layer; else InputError."""
    states = list(states)
    every = tuple(range(num_layers + 1))
    if [s.text for s in states] != list(texts) or any(s.layers != every for s in states):
        raise InputError("`states` must be the token states of the CKA's texts, in order, at every layer")
    return states


def check_cka_arguments(limit: int, batch_size: int = 32) -> None:
    """Refuse a negative ``limit`` or a ``batch_size`` below 1 (cheap: check before loading)."""
    whole_number(limit, "limit", minimum=0)
    arguments.batch_size(batch_size)


def compare_layers(
    model_a: ContextualModel | str,
    model_b: ContextualModel | str | None = None,
    texts: Sequence[str] | None = None,
    corpus: str = "wordnet",
    limit: int = 400,
    batch_size: int = 32,
    show_progress_bar: bool = False,
    states: Sequence[TokenStates] | None = None,
) -> CkaResult:
    """Linear CKA between every layer of A and every layer of B (A itself when B is None).
    ``limit`` caps the texts used (0: all of ``texts``). ``states``: A's token states of those
    texts at every layer, already computed (the lesson shares them with the input-row share:
    analyses/lesson/shared_states.py); None runs A's forward pass here."""
    import time

    check_cka_arguments(limit, batch_size)
    started = time.perf_counter()
    from contextlens.core.contextual_models import as_contextual  # torch: once the arguments are checked

    a = as_contextual(model_a)
    b = a if model_b is None else as_contextual(model_b)
    name = corpus
    if texts is None:
        texts = corpus_texts(corpus, limit)
    else:
        texts = list(texts)[:limit] if limit else list(texts)
        name = "sentences"
    if len(texts) < MIN_TEXTS:
        raise InputError(f"CKA needs at least {MIN_TEXTS} sentences, got {len(texts)}; give more sentences")
    if states is None:
        states_a = a.token_states(texts, batch_size=batch_size, show_progress_bar=show_progress_bar)
    else:
        states_a = _checked_states(states, texts, a.num_layers)
    states_b = states_a if b is a else b.token_states(texts, batch_size=batch_size, show_progress_bar=show_progress_bar)
    xa, xb, aligned, skipped, dropped = _aligned_rows(states_a, states_b, len(texts))
    layers_of_a = list(xa)
    matrix = cka_matrix(layers_of_a, layers_of_a if b is a else list(xb))  # the same list: A's Grams once
    if b is a:  # symmetric by definition; remove float noise
        matrix = (matrix + matrix.T) / 2
    return CkaResult(
        model_a=a.name, model_b=b.name, layers_a=list(states_a[0].layers), layers_b=list(states_b[0].layers),
        matrix=matrix, corpus=name, texts=len(texts), aligned_texts=aligned, skipped_texts=skipped,
        tokens=int(xa.shape[1]), dropped_tokens=dropped, seconds=time.perf_counter() - started,
        precision_a=a.precision, precision_b=b.precision, runtime_a=a.runtime, runtime_b=b.runtime,
    )  # fmt: skip


def _aligned_rows(states_a, states_b, texts: int) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """Both models' states on the tokens they share, text by text (a text aligned too little is skipped):
    the two (layers, n, d) arrays, how many texts aligned and were skipped, and the tokens dropped."""
    rows_a: list[np.ndarray] = []
    rows_b: list[np.ndarray] = []
    skipped = dropped = 0
    for sa, sb in zip(states_a, states_b, strict=True):
        ia, ib = align(sa, sb)
        n_a, n_b = len(sa.offsets), len(sb.offsets)
        if not ia or len(ia) < MIN_PAIRED_SHARE * n_a or len(ib) < MIN_PAIRED_SHARE * n_b:
            skipped += 1
            continue
        dropped += n_a - len(ia)
        rows_a.append(sa.states[:, ia, :])
        rows_b.append(sb.states[:, ib, :])
    aligned = len(rows_a)
    if aligned < MIN_TEXTS:
        raise InputError(
            f"CKA needs at least {MIN_TEXTS} sentences whose tokens align across the two models, "
            f"got {aligned} ({skipped} of {texts} could not be aligned); give more sentences"
        )
    return np.concatenate(rows_a, axis=1), np.concatenate(rows_b, axis=1), aligned, skipped, dropped
