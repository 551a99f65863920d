"""csfbench.heads.class_outputs: the C class outputs split from Deep Gamblers' abstention output."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from csfbench.heads import class_outputs

C = 4


@pytest.mark.parametrize("k", [C, C + 1])
def test_numpy_logits_keep_the_first_c_columns_as_a_view(k):
    logits = np.arange(3 * k, dtype=np.float64).reshape(3, k)
    out = class_outputs(logits, C)
    assert out.shape == (3, C) and np.shares_memory(out, logits)
    np.testing.assert_array_equal(out, logits[:, :C])


@pytest.mark.parametrize("k", [C, C + 1])
def test_numpy_pass_logits_split_on_the_last_axis(k):
    passes = np.random.default_rng(0).normal(size=(5, 3, k))
    np.testing.assert_array_equal(class_outputs(passes, C), passes[:, :, :C])


@pytest.mark.parametrize("k", [C, C + 1])
def test_torch_logits_keep_the_first_c_columns_and_their_gradient(k):
    logits = torch.randn(3, k, requires_grad=True)
    out = class_outputs(logits, C)
    assert out.shape == (3, C) and torch.equal(out, logits[:, :C])
    out.sum().backward()
    assert torch.equal(logits.grad, torch.cat([torch.ones(3, C), torch.zeros(3, k - C)], 1))


def test_the_dg_abstention_column_is_the_one_dropped():
    logits = np.array([[1.0, 2.0, 3.0, 4.0, -9.0]])
    assert class_outputs(logits, C).tolist() == [[1.0, 2.0, 3.0, 4.0]]
    assert class_outputs(torch.tensor(logits), C).tolist() == [[1.0, 2.0, 3.0, 4.0]]


@pytest.mark.parametrize("k", [C, C + 1])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_head_rows_split_on_axis_0(k, as_tensor):
    weight = np.arange(k * 6, dtype=np.float32).reshape(k, 6)
    bias = np.arange(k, dtype=np.float32)
    if as_tensor:
        weight, bias = torch.from_numpy(weight), torch.from_numpy(bias)
    w, b = class_outputs(weight, C, axis=0), class_outputs(bias, C, axis=0)
    assert tuple(w.shape) == (C, 6) and tuple(b.shape) == (C,)
    assert np.asarray(w).tolist() == np.asarray(weight[:C]).tolist() and np.asarray(b).tolist() == list(range(C))


@pytest.mark.parametrize("k", [C - 1, C + 2])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_neither_c_nor_c_plus_one_outputs_is_refused(k, as_tensor):
    logits = np.zeros((2, k))
    with pytest.raises(ValueError, match=f"C = {C} class outputs.*got {k}"):
        class_outputs(torch.from_numpy(logits) if as_tensor else logits, C)
    with pytest.raises(ValueError, match="along axis 0"):
        class_outputs(np.zeros((k, 3)), C, axis=0)
