import numpy as np
import pytest
import torch

from csfbench.data.transforms import augment, normalize, resized_crop_box
from csfbench.torch_compat import ensure_torchvision

ensure_torchvision()


def test_normalize_units():
    batch = torch.full((1, 3, 2, 2), 255, dtype=torch.uint8)
    out = normalize(batch, mean=[0.5, 0.5, 0.5], std=[0.25, 0.5, 1.0])
    assert out.dtype == torch.float32
    assert out[0, :, 0, 0].tolist() == [2.0, 1.0, 0.5]


def test_no_augmentation_is_identity():
    x = torch.randn(4, 3, 8, 8)
    assert torch.equal(augment(x, torch.Generator().manual_seed(0)), x)


def test_augmentation_is_deterministic_for_a_seed_and_varies_across_seeds():
    x = torch.randn(16, 3, 32, 32)
    a = augment(x, torch.Generator().manual_seed(1), crop_padding=4, hflip=True, cutout=16)
    b = augment(x, torch.Generator().manual_seed(1), crop_padding=4, hflip=True, cutout=16)
    c = augment(x, torch.Generator().manual_seed(2), crop_padding=4, hflip=True, cutout=16)
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == x.shape


def test_crop_is_a_shifted_window_of_the_zero_padded_image():
    x = torch.arange(1, 3 * 6 * 6 + 1, dtype=torch.float32).view(1, 3, 6, 6)
    out = augment(x, torch.Generator().manual_seed(3), crop_padding=2)
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2))
    windows = [padded[0, :, dy:dy + 6, dx:dx + 6] for dy in range(5) for dx in range(5)]
    assert any(torch.equal(out[0], w) for w in windows)


def test_cutout_zeroes_a_square_of_the_given_side():
    x = torch.ones(64, 1, 32, 32)
    out = augment(x, torch.Generator().manual_seed(0), cutout=8)
    zeros = (out == 0).sum(dim=(1, 2, 3)).numpy()
    assert zeros.max() == 64 and zeros.min() > 0  # full 8×8 inside the image, clipped at borders
    for img, n in zip(out, zeros):
        rows = np.nonzero((img[0] == 0).any(1).numpy())[0]
        cols = np.nonzero((img[0] == 0).any(0).numpy())[0]
        assert len(rows) * len(cols) == n  # one axis-aligned rectangle


def test_random_resized_crop_box_equals_torchvision_get_params():
    from torchvision.transforms import RandomResizedCrop

    for seed in range(200):  # includes boxes found on a later try and, for the 20×3 image, the fallback
        for h, w in ((32, 32), (24, 40), (20, 3)):
            torch.manual_seed(seed)
            expected = RandomResizedCrop.get_params(torch.zeros(3, h, w), [0.08, 1.0], [3 / 4, 4 / 3])
            assert resized_crop_box(h, w, torch.Generator().manual_seed(seed)) == tuple(expected)


def test_random_resized_crop_boxes_lie_in_the_scale_and_ratio_ranges():
    g = torch.Generator().manual_seed(0)
    for _ in range(500):
        top, left, h, w = resized_crop_box(64, 64, g)
        assert 0 <= top <= 64 - h and 0 <= left <= 64 - w
        # the box's side lengths are rounded to pixels: up to half a pixel per side
        assert 0.08 * 64 * 64 - 64 <= h * w <= 64 * 64
        assert (w - 0.5) / (h + 0.5) <= 4 / 3 and (w + 0.5) / (h - 0.5) >= 3 / 4
    top, left, h, w = resized_crop_box(64, 64, torch.Generator().manual_seed(1), scale=(0.5, 0.5), ratio=(1.0, 1.0))
    assert (h, w) == (45, 45)  # round(sqrt(0.5 * 64²))


def test_random_resized_crop_resamples_torchvisions_crop():
    from torchvision.transforms.functional import resized_crop

    x = torch.randn(6, 3, 32, 32)
    out = augment(x, torch.Generator().manual_seed(4), random_resized_crop={"scale": [0.08, 1.0], "ratio": [0.75, 4 / 3]})
    g = torch.Generator().manual_seed(4)
    boxes = [resized_crop_box(32, 32, g) for _ in range(6)]
    assert out.shape == x.shape and out.dtype == x.dtype
    for img, crop, (top, left, h, w) in zip(x, out, boxes):
        assert torch.allclose(crop, resized_crop(img, top, left, h, w, [32, 32], antialias=True), atol=1e-6)


def test_random_resized_crop_and_flip_are_deterministic_for_a_seed():
    x = torch.randn(8, 3, 16, 16)
    settings = {"hflip": True, "random_resized_crop": {}}
    a = augment(x, torch.Generator().manual_seed(5), **settings)
    b = augment(x, torch.Generator().manual_seed(5), **settings)
    c = augment(x, torch.Generator().manual_seed(6), **settings)
    assert torch.equal(a, b) and not torch.equal(a, c) and a.shape == x.shape


def test_full_scale_square_crop_with_flip_is_a_flip_or_the_image():
    x = torch.randn(16, 3, 12, 12)
    out = augment(x, torch.Generator().manual_seed(0), hflip=True,
                  random_resized_crop={"scale": [1.0, 1.0], "ratio": [1.0, 1.0]})
    flipped = [torch.equal(o, i.flip(-1)) for o, i in zip(out, x)]
    kept = [torch.allclose(o, i, atol=1e-6) for o, i in zip(out, x)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)


def test_random_resized_crop_excludes_the_padded_crop_and_disordered_ranges():
    x = torch.randn(2, 3, 8, 8)
    with pytest.raises(ValueError, match="crop_padding and random_resized_crop"):
        augment(x, torch.Generator(), crop_padding=2, random_resized_crop={})
    with pytest.raises(ValueError, match="random_resized_crop.scale"):
        augment(x, torch.Generator(), random_resized_crop={"scale": [0.9, 0.1]})
