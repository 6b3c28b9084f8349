"""A model folder's tokenizer read with the ``tokenizers`` library alone, no transformers.

Why: importing transformers costs about 2.5 s, more than the whole lean forward pass of
:mod:`contextlens.core.lean_backbone`. A fast tokenizer's ``tokenizer.json`` already holds
everything that decides ids, offsets and special tokens (normalizer, pre-tokenizer, model,
post-processor, added tokens); transformers adds padding, truncation and the names of the special
tokens, read here from ``tokenizer_config.json`` and ``special_tokens_map.json``.

:class:`FolderTokenizer` answers the part of the transformers tokenizer API that contextlens calls
(``__call__`` with offsets and special-token masks, ``convert_ids_to_tokens``, the special ids and
``model_max_length``), with the same results: tests/test_lean_path.py compares ids, offsets and
masks with transformers' own tokenizer on every WordNet usage example.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contextlens.errors import ModelLoadError

VERY_LARGE_LENGTH = int(1e30)  # what transformers reports when the folder names no limit
SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class Encoded(dict):
    """``input_ids`` (and ``offset_mapping``, ``special_tokens_mask`` when asked), plus the Rust
    ``encodings`` themselves, as transformers' ``BatchEncoding`` offers them."""

    encodings: list[Any]


class FolderTokenizer:
    """The tokenizer of a model folder that has a ``tokenizer.json``."""

    def __init__(self, folder: str | Path):
        from tokenizers import Tokenizer

        folder = Path(folder)
        try:
            self.backend_tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # the Rust error types are not exported; its message says what broke
            raise ModelLoadError(f"cannot read {folder / 'tokenizer.json'} ({exc}); copy the model again") from exc
        self.backend_tokenizer.no_padding()
        self.backend_tokenizer.no_truncation()
        config = _json(folder / "tokenizer_config.json")
        names = config | _json(folder / "special_tokens_map.json")
        limit = config.get("model_max_length")
        self.model_max_length = (
            int(limit) if isinstance(limit, int | float) and limit < VERY_LARGE_LENGTH else (VERY_LARGE_LENGTH)
        )
        self.special_tokens: dict[str, str] = {}
        for name in SPECIAL_NAMES:
            token = names.get(name)
            if isinstance(token, dict):  # an AddedToken written out: {"content": "<s>", ...}
                token = token.get("content")
            if isinstance(token, str):
                self.special_tokens[name] = token

    # --- the special tokens, as transformers names them --------------------------------------

    def _token(self, name: str) -> str | None:
        return self.special_tokens.get(name)

    def _id(self, name: str) -> int | None:
        token = self._token(name)
        return None if token is None else self.backend_tokenizer.token_to_id(token)

    @property
    def pad_token(self) -> str | None:
        return self._token("pad_token")

    @property
    def pad_token_id(self) -> int | None:
        return self._id("pad_token")

    @property
    def unk_token(self) -> str | None:
        return self._token("unk_token")

    @property
    def unk_token_id(self) -> int | None:
        return self._id("unk_token")

    @property
    def eos_token(self) -> str | None:
        return self._token("eos_token")

    @property
    def all_special_ids(self) -> list[int]:
        ids = {self.backend_tokenizer.token_to_id(token) for token in self.special_tokens.values()}
        return sorted(i for i in ids if i is not None)

    @property
    def is_fast(self) -> bool:
        return True

    def get_vocab(self) -> dict[str, int]:
        return self.backend_tokenizer.get_vocab(with_added_tokens=True)

    def get_added_vocab(self) -> dict[str, int]:
        return {token.content: i for i, token in self.backend_tokenizer.get_added_tokens_decoder().items()}

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return (
            self.backend_tokenizer.post_processor.num_special_tokens_to_add(pair)
            if (self.backend_tokenizer.post_processor is not None)
            else 0
        )

    def __len__(self) -> int:
        return self.backend_tokenizer.get_vocab_size(with_added_tokens=True)

    # --- encoding ------------------------------------------------------------------------------

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.backend_tokenizer.id_to_token(int(i)) for i in ids]

    def __call__(
        self,
        text: str | Sequence[str],
        add_special_tokens: bool = True,
        truncation: bool = False,
        max_length: int | None = None,
        return_offsets_mapping: bool = False,
        return_special_tokens_mask: bool = False,
        verbose: bool = False,
    ) -> Encoded:
        """What transformers' fast tokenizer returns for these arguments (no padding: contextlens
        pads its batches itself); a single text gives flat lists, a list of texts a list of them."""
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        tok = self.backend_tokenizer
        if truncation:
            limit = max_length if max_length is not None else self.model_max_length
            tok.enable_truncation(max_length=int(limit))
        try:
            encodings = tok.encode_batch(texts, add_special_tokens=add_special_tokens)
        finally:
            if truncation:
                tok.no_truncation()
        out = Encoded()
        fields = {"input_ids": lambda e: list(e.ids)}
        if return_offsets_mapping:
            fields["offset_mapping"] = lambda e: [tuple(o) for o in e.offsets]
        if return_special_tokens_mask:
            fields["special_tokens_mask"] = lambda e: list(e.special_tokens_mask)
        for key, read in fields.items():
            values = [read(e) for e in encodings]
            out[key] = values[0] if single else values
        out.encodings = encodings
        return out


def has_folder_tokenizer(folder: str | Path) -> bool:
    """Whether :class:`FolderTokenizer` can read this folder (a fast tokenizer's files)."""
    return (Path(folder) / "tokenizer.json").is_file()


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelLoadError(f"cannot read {path} ({exc}); copy the model again") from exc
    return data if isinstance(data, dict) else {}
