"""What each shipped model *is*, in one line a learner can read beside its numbers.

Why: the lesson is written about BERT, but the shipped encoders are sentence-similarity
fine-tunes (contrastive training on sentence pairs, the last layer mean-pooled into a sentence
vector). That explains what a learner sees in their upper layers - a word's last-layer vector
carries much of its sentence, the cosine of "bank" across senses drops at the last layer, the
norm falls, the last layers are nearly isotropic - and it was said only in the benchmark docs.
Every face prints :func:`model_kind` where it prints the model's numbers. Plain text, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelKind:
    """The base architecture, how it was trained, and what that does to the layers."""

    name: str
    base: str  # the pretrained network it starts from
    training: str  # what it was fine-tuned for
    effect: str  # what that does to the hidden states a learner looks at

    summary: str = ""  # one short line for a terminal

    @property
    def line(self) -> str:
        return f"{self.name} is {self.base}, {self.training}: {self.effect}"

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "base": self.base,
            "training": self.training,
            "effect": self.effect,
            "summary": self.summary,
        }


_SENTENCE_FINE_TUNE = (
    "fine-tuned by sentence-transformers for sentence similarity "
    "(contrastive loss on about a billion sentence pairs, mean-pooled last layer)"
)
_SENTENCE_EFFECT = (
    "not plain BERT - its last layers are shaped to encode the whole sentence, so a word's "
    "last-layer vector carries much of its sentence (cosines across sentences drop there, "
    "norms fall, the space is nearly isotropic)"
)

KINDS: dict[str, ModelKind] = {
    "mpnet": ModelKind(
        "mpnet (all-mpnet-base-v2)",
        "MPNet-base (12 layers)",
        _SENTENCE_FINE_TUNE,
        _SENTENCE_EFFECT,
        "mpnet = MPNet-base fine-tuned for sentence similarity, not plain BERT: its last layer encodes the sentence",
    ),
    "minilm": ModelKind(
        "minilm (all-MiniLM-L6-v2)",
        "MiniLM-L6 (6 layers, distilled)",
        _SENTENCE_FINE_TUNE,
        _SENTENCE_EFFECT,
        "minilm = MiniLM-L6 fine-tuned for sentence similarity, not plain BERT: its last layer encodes the sentence",
    ),
    "smollm2": ModelKind(
        "smollm2 (SmolLM2-135M-Instruct)",
        "a decoder (causal language model)",
        "instruction-tuned for chat",
        "each token sees only the words to its left, so a sense the right-hand words decide is invisible to it",
        "smollm2 = a decoder: each token sees only the words to its left",
    ),
}


def model_kind(name: str) -> ModelKind | None:
    """What the registered model ``name`` is; None for a model folder contextlens does not know."""
    return KINDS.get(name)
