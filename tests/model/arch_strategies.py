"""Hypothesis strategies and checks shared by the model tests."""
import numpy as np
from hypothesis import strategies as st

from workbook.scenario import Architecture


@st.composite
def small_models(draw):
    """A small dense transformer: 8-32 heads of 64 or 128, 4-48 layers, grouped KV heads that divide
    the heads, a 2-4x MLP, one of two vocabularies, gated or not."""
    heads = draw(st.sampled_from([8, 16, 32]))
    head_dim = draw(st.sampled_from([64, 128]))
    return Architecture(layers=draw(st.integers(4, 48)), hidden=heads * head_dim, heads=heads,
                        kv_heads=draw(st.sampled_from([h for h in (1, 2, 4, 8, heads) if heads % h == 0])),
                        ffn_hidden=draw(st.sampled_from([2, 3, 4])) * heads * head_dim,
                        vocab=draw(st.sampled_from([32000, 128256])), gated_mlp=draw(st.booleans()))


def same_arrays(got: dict, ref: dict) -> None:
    """Every value of ``ref`` equals ``got``'s under the same key: arrays of the same dtype and elements,
    other values equal (the keys ``got`` has beyond ``ref``'s are not read)."""
    for k, v in ref.items():
        if isinstance(v, np.ndarray):
            assert got[k].dtype == v.dtype and got[k].tolist() == v.tolist(), k
        else:
            assert got[k] == v, k
