"""PGD-L∞ / FGSM: ε-ball and [0, 1] respected, error rises with ε on a trained micro model, device choice."""
import numpy as np
import pytest
import torch

from csfbench.attacks import fgsm, pgd_linf
from csfbench.attacks.sets import attack_set, pixel_forward
from csfbench.training.loop import resolve_device


def _batch(images, spec):
    x = torch.from_numpy(np.stack([images.image(i) for i in range(len(images))])).permute(0, 3, 1, 2).float() / 255
    return x, torch.from_numpy(images.labels)


def _error(forward, x, y):
    with torch.no_grad():
        return float((forward(x).argmax(1) != y).float().mean())


@pytest.mark.parametrize("random_start", [False, True])
def test_pgd_respects_eps_ball_and_pixel_range(trained, random_start):
    model, spec, _, test = trained
    x, y = _batch(test, spec)
    eps = 8 / 255
    x_adv = pgd_linf(pixel_forward(model, spec), x, y, eps, steps=5, step_size=2 / 255, random_start=random_start,
                     generator=torch.Generator().manual_seed(0))
    assert float((x_adv - x).abs().max()) <= eps + 1e-6
    assert float(x_adv.min()) >= 0.0 and float(x_adv.max()) <= 1.0
    assert float((x_adv - x).abs().max()) > eps / 2  # the attack does move the images


def test_error_rises_with_eps(trained):
    model, spec, _, test = trained
    forward = pixel_forward(model, spec)
    x, y = _batch(test, spec)
    errors = [_error(forward, pgd_linf(forward, x, y, e / 255, steps=7, step_size=2.5 * e / 255 / 7), y)
              if e else _error(forward, x, y) for e in (0, 2, 8, 32)]
    assert errors[0] < 0.3, f"the micro model did not learn the task: clean error {errors[0]}"
    assert all(b >= a for a, b in zip(errors, errors[1:])) and errors[-1] > errors[0] + 0.3, errors
    assert _error(forward, fgsm(forward, x, y, 8 / 255), y) > errors[0]


def test_fgsm_is_one_signed_gradient_step():
    weight = torch.tensor([[1.0, -2.0], [-1.0, 2.0]])

    def forward(x):
        return x.flatten(1) @ weight.T

    x, y = torch.full((1, 2), 0.5), torch.tensor([0])
    # d CE / d x = (softmax - onehot) @ W: for class 0 its sign is (-, +), so FGSM moves x by (-ε, +ε)
    np.testing.assert_allclose(fgsm(forward, x, y, 0.1).numpy(), [[0.4, 0.6]], atol=1e-7)
    np.testing.assert_array_equal(pgd_linf(forward, x, y, 0.0, 3, 0.1).numpy(), x.numpy())
    with pytest.raises(ValueError, match="steps >= 1"):
        pgd_linf(forward, x, y, 0.1, 0, 0.1)


def test_attack_set_stores_uint8_inside_eps(trained):
    model, spec, _, test = trained
    attack = {"name": "pgd", "eps": 4, "steps": 5, "step_size": 1, "random_start": False}
    adv, summary = attack_set(model, spec, test, attack, batch_size=64, device=torch.device("cpu"), seed=0)
    clean = np.stack([test.image(i) for i in range(len(test))])
    assert adv.dtype == np.uint8 and adv.shape == clean.shape
    assert np.abs(adv.astype(int) - clean).max() == 4
    assert summary["adversarial_error"] > summary["clean_error"]
    again, _ = attack_set(model, spec, test, attack, batch_size=32, device=torch.device("cpu"), seed=0)
    np.testing.assert_array_equal(adv, again)
    with pytest.raises(ValueError, match="unknown attack 'cw'"):
        attack_set(model, spec, test, {"name": "cw", "eps": 1}, 64, torch.device("cpu"), 0)


def test_device_selection_prefers_cuda():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device().type == expected


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine (CI has none)")
def test_attack_on_gpu(trained):
    model, spec, _, test = trained
    attack = {"name": "fgsm", "eps": 8}
    adv_gpu, _ = attack_set(model.to("cuda"), spec, test, attack, 64, torch.device("cuda"), 0)
    adv_cpu, _ = attack_set(model.to("cpu"), spec, test, attack, 64, torch.device("cpu"), 0)
    assert np.mean(adv_gpu != adv_cpu) < 0.01
