# ruff: noqa: E501 -- the source's own lines and comments, kept as written
"""picoGPT's GPT-2 forward (https://github.com/jaymody/picoGPT, ``gpt2.py``, MIT License):
``gelu``, ``softmax``, ``layer_norm``, ``linear``, ``ffn``, ``attention``, ``mha``,
``transformer_block`` and ``gpt2``.

Changes: annotations only. The layers' weights come as dicts passed on with ``**``
(``linear(x, **c_attn)``), the heads as ``np.split`` by an argument, ``map`` of a lambda and
``zip(*qkv_heads)``, the causal mask from ``np.tri``. ``gpt2`` itself stays refused: its
``blocks`` mix dicts of arrays and dicts of dicts under one dict type, which no annotation
of the language spells.
"""

from typing import Dict, List, Optional

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp

Linear = Dict[str, Tensor]


def gelu(x: Tensor):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x: Tensor):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x: Tensor, g: Tensor, b: Tensor, eps: float = 1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)  # normalize x to have mean=0 and var=1 over last axis
    return g * x + b  # scale and offset with gamma/beta params


def linear(x: Tensor, w: Tensor, b: Tensor):  # [m, in], [in, out], [out] -> [m, out]
    return x @ w + b


def ffn(x: Tensor, c_fc: Linear, c_proj: Linear):  # [n_seq, n_embd] -> [n_seq, n_embd]
    # project up
    a = gelu(linear(x, **c_fc))  # [n_seq, n_embd] -> [n_seq, 4*n_embd]

    # project back down
    x = linear(a, **c_proj)  # [n_seq, 4*n_embd] -> [n_seq, n_embd]

    return x


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor):  # [n_q, d_k], [n_k, d_k], [n_k, d_v], [n_q, n_k] -> [n_q, d_v]
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x: Tensor, c_attn: Linear, c_proj: Linear, n_head: int):  # [n_seq, n_embd] -> [n_seq, n_embd]
    # qkv projection
    x = linear(x, **c_attn)  # [n_seq, n_embd] -> [n_seq, 3*n_embd]

    # split into qkv
    qkv = np.split(x, 3, axis=-1)  # [n_seq, 3*n_embd] -> [3, n_seq, n_embd]

    # split into heads
    qkv_heads = list(map(lambda x: np.split(x, n_head, axis=-1), qkv))  # [3, n_seq, n_embd] -> [3, n_head, n_seq, n_embd/n_head]

    # causal mask to hide future inputs from being attended to
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10  # [n_seq, n_seq]

    # perform attention over each head
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads)]  # [3, n_head, n_seq, n_embd/n_head] -> [n_head, n_seq, n_embd/n_head]

    # merge heads
    x = np.hstack(out_heads)  # [n_head, n_seq, n_embd/n_head] -> [n_seq, n_embd]

    # out projection
    x = linear(x, **c_proj)  # [n_seq, n_embd] -> [n_seq, n_embd]

    return x


def transformer_block(x: Tensor, mlp: Dict[str, Linear], attn: Dict[str, Linear],
                      ln_1: Dict[str, Tensor], ln_2: Dict[str, Tensor], n_head: int):  # [n_seq, n_embd] -> [n_seq, n_embd]
    # multi-head causal self attention
    x = x + mha(layer_norm(x, **ln_1), **attn, n_head=n_head)  # [n_seq, n_embd] -> [n_seq, n_embd]

    # position-wise feed forward network
    x = x + ffn(layer_norm(x, **ln_2), **mlp)  # [n_seq, n_embd] -> [n_seq, n_embd]

    return x


def gpt2(inputs: Tensor, wte: Tensor, wpe: Tensor, blocks: List[Dict[str, Dict[str, Linear]]],
         ln_f: Dict[str, Tensor], n_head: int):  # [n_seq] -> [n_seq, n_vocab]
    # token + positional embeddings
    x = wte[inputs] + wpe[range(len(inputs))]  # [n_seq] -> [n_seq, n_embd]

    # forward pass through n_layer transformer blocks
    for block in blocks:
        x = transformer_block(x, **block, n_head=n_head)  # [n_seq, n_embd] -> [n_seq, n_embd]

    # projection to vocab
    x = layer_norm(x, **ln_f)  # [n_seq, n_embd] -> [n_seq, n_embd]
    return x @ wte.T  # [n_seq, n_embd] -> [n_seq, n_vocab]


D, HEADS = 8, 2


def _linear(r, n_in, n_out):
    return {"w": 0.3 * r.standard_normal((n_in, n_out)), "b": 0.1 * r.standard_normal(n_out)}


def _norm(r):
    return {"g": 1.0 + 0.1 * r.standard_normal(D), "b": 0.1 * r.standard_normal(D)}


def block(r):
    return {"mlp": {"c_fc": _linear(r, D, 4 * D), "c_proj": _linear(r, 4 * D, D)},
            "attn": {"c_attn": _linear(r, D, 3 * D), "c_proj": _linear(r, D, D)},
            "ln_1": _norm(r), "ln_2": _norm(r)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_transformer_block_compiles_with_annotations_only(dtype):
    r = np.random.default_rng(0)
    b = block(r)
    x = r.standard_normal((5, D))
    cast = lambda tree: {k: cast(v) for k, v in tree.items()} if isinstance(tree, dict) \
        else tree.astype(dtype)  # noqa: E731
    b, x = cast(b), x.astype(dtype)
    args = (x, b["mlp"], b["attn"], b["ln_1"], b["ln_2"], HEADS)
    got, want = script(transformer_block)(*args), transformer_block(*args)
    assert got.dtype == want.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    attn = b["attn"]
    np.testing.assert_allclose(script(mha)(x, attn["c_attn"], attn["c_proj"], HEADS),
                               mha(x, attn["c_attn"], attn["c_proj"], HEADS), rtol=tol, atol=tol)


def test_gradients_of_the_feed_forward_and_layer_norm():
    r = np.random.default_rng(1)
    b = block(r)
    x = r.standard_normal((5, D))
    check_vjp(ffn, (x, b["mlp"]["c_fc"], b["mlp"]["c_proj"]))
    check_vjp(layer_norm, (x, b["ln_1"]["g"], b["ln_1"]["b"]))


def test_a_dict_spread_into_a_function_checks_its_keys_as_python_does():
    r = np.random.default_rng(2)
    x, layer = r.standard_normal((2, D)), _linear(r, D, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bias'"):
        script(ffn)(x, {**layer, "bias": layer["b"]}, _linear(r, 3, D))
    # a key missing: Python's TypeError, also where the callee's ops could not take the dict's
    # other values (the code after the raise is never typed)
    with pytest.raises(TypeError, match="missing 1 required argument: 'b'"):
        script(ffn)(x, {"w": layer["w"]}, _linear(r, 3, D))


def affine(x: Tensor, w: Tensor, b: Optional[Tensor] = None):
    return x @ w if b is None else x @ w + b


def projected(x: Tensor, layer: Linear):
    return affine(x, **layer)  # b where the dict holds one: decided per call's keys


def test_a_defaulted_parameter_comes_from_the_dict_where_it_holds_it():
    r = np.random.default_rng(4)
    x, layer = r.standard_normal((2, D)), _linear(r, D, 3)
    for given in (layer, {"w": layer["w"]}):
        np.testing.assert_allclose(script(projected)(x, given), projected(x, given),
                                   rtol=1e-12)
    check_vjp(projected, (x, {"w": layer["w"]}))


def test_the_whole_model_is_refused_at_its_blocks():
    r = np.random.default_rng(3)
    wte, wpe = r.standard_normal((11, D)), r.standard_normal((7, D))
    with pytest.raises(ScriptError, match="ln_1"):
        script(gpt2)(np.array([1, 4, 2]), wte, wpe, [block(r)], _norm(r), HEADS)
