"""The three kinds of "embedding", side by side for the same two texts (the seed's "Clarifying the names").

For one target word in two texts (the river bank, the money bank) each kind answers a different
question, with a different shape:

* **static word vector** (GloVe, word2vec): one vector per word *type*, looked up, no context:
  the two "bank"s get the same vector, cosine exactly 1.0;
* **input row** (the transformer's own embedding table): also one row per token id, also 1.0;
* **hidden state** (the vector at the target after layer L): one vector per token *position*,
  context mixed in: the two "bank"s move apart (cosine below 1);
* **sentence embedding** (the model's own sentence-transformers pooling): one vector per *text*,
  for retrieval: it compares the two texts, not the word.

Each row gives its dimension, how many vectors the text yields, the bytes of one (float32), its
norm in the first text and the cosine between the two texts, so a learner reads the difference
in numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.occurrences import Occurrence, parse_marked, words_in
from contextlens.core.similarity import cosine, cosine_values
from contextlens.core.static_models import StaticModel, as_static
from contextlens.errors import InputError


@dataclass(frozen=True)
class Kind:
    kind: str
    source: str  # the model it comes from
    unit: str  # what one vector stands for
    dimensions: int
    vectors_per_text: list[int]  # for each text
    norm: float  # of the first text's vector
    cosine: float  # between the two texts' vectors
    context: str  # what the cosine says
    baseline: float | None = None  # mean cosine of random pairs of different words, same kind and layer
    percentile: float | None = None  # of ``cosine`` among those random pairs


@dataclass(frozen=True)
class ThreeKinds:
    texts: list[str]
    word: str
    layer: int
    kinds: list[Kind]

    def to_dict(self) -> dict[str, object]:
        return {
            "texts": self.texts,
            "word": self.word,
            "layer": self.layer,
            "bytes_per_dimension": 4,
            "baseline": "random pairs of different WordNet words, same model, kind and layer (word_baseline.py)",
            "kinds": [k.__dict__ | {"bytes_per_vector": 4 * k.dimensions} for k in self.kinds],
        }


def three_kinds(
    occurrences: Sequence[Occurrence | str], model: ContextualModel | str, static: StaticModel | str, layer: int = -1
) -> ThreeKinds:
    """The four vectors (static, input row, hidden state at ``layer``, sentence embedding) of two
    occurrences of one word. Raises InputError unless there are exactly two of the same word."""
    occs = [parse_marked(o) if isinstance(o, str) else o for o in occurrences]
    if len(occs) != 2:
        raise InputError(f"`occurrences`: give exactly two texts with the same [target], got {len(occs)}")
    if occs[0].word.lower() != occs[1].word.lower():
        raise InputError(f"the two targets differ ({occs[0].word!r}, {occs[1].word!r}); mark the same word in both")
    model, static = as_contextual(model), as_static(static)
    a, b = model.encode_occurrences(occs, layers=[layer])
    real = a.layers[0]
    texts = [o.text for o in occs]
    sentences = model.embed_sentences(texts)
    tokens = [len(e.tokenized.tokens) for e in (a, b)]
    words = [len(words_in(t)) for t in texts]
    sa, sb = static.vector(occs[0].word), static.vector(occs[1].word)
    hidden_cos = cosine(a.hidden_state(real), b.hidden_state(real))
    base = _baseline(model)
    hidden_base = (None, None) if base is None else (float(base.means[real]), base.percentile(real, hidden_cos))
    kinds = [
        Kind("static word vector", static.name, "one word type, any sentence", int(sa.values.shape[0]), words,
             _norm(sa.values), cosine(sa, sb), "the same vector in both texts: no context at all"),
        Kind("input row", model.name, "one token id, before any layer", int(a.input_row_values.shape[0]), tokens,
             _norm(a.input_row_values), cosine(a.input_row(), b.input_row()),
             "the model's own lookup table: also the same in both texts"),
        Kind(f"hidden state (layer {real})", model.name, "one token position, after the layers",
             int(a.hidden.shape[1]), tokens, _norm(a.hidden[0]), hidden_cos,
             "the word in its context: the two uses move apart", *hidden_base),
        Kind("sentence embedding", model.name, "one whole text", int(sentences.shape[1]), [1, 1],
             _norm(sentences[0]), cosine_values(sentences[0], sentences[1]),
             "compares the two texts, not the word: what a search index stores"),
    ]  # fmt: skip
    return ThreeKinds(texts, occs[0].word, real, kinds)


def _baseline(model: ContextualModel):
    """The model's random-word cosine baseline, or None without WordNet."""
    from contextlens.analyses.measures.word_baseline import random_word_baseline
    from contextlens.core.wordnet import WordNetNotInstalledError

    try:
        return random_word_baseline(model, "mean")
    except WordNetNotInstalledError:
        return None


def _norm(values: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(values, dtype=np.float64)))
