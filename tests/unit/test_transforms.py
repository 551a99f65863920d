import numpy as np
import torch

from csfbench.data.transforms import augment, normalize


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
