"""Corruption generator: determinism, shape/dtype/range, monotone severity, official archive layout."""
import numpy as np
import pytest
from PIL import Image
from skimage import data

from csfbench.data.readers import read_cifar_c
from csfbench.shifts.corruptions import CORRUPTIONS, SEVERITIES, corrupt_image, corrupt_images
from csfbench.shifts.cifar_c import write_cifar_c_archive


@pytest.fixture(scope="module")
def images():
    photos = [data.astronaut(), data.chelsea(), data.coffee(), data.rocket()]
    return np.stack([np.asarray(Image.fromarray(p).resize((32, 32), Image.BILINEAR)) for p in photos])


@pytest.mark.parametrize("family", sorted(CORRUPTIONS))
def test_deterministic_shape_range(images, family):
    first = corrupt_images(images, family, 3, seed=7)
    again = corrupt_images(images, family, 3, seed=7)
    assert first.shape == images.shape and first.dtype == np.uint8
    np.testing.assert_array_equal(first, again)
    # row i depends only on (seed, family, severity, i): a single image equals its row in the batch
    np.testing.assert_array_equal(corrupt_image(images[2], family, 3, seed=7, index=2), first[2])
    assert not np.array_equal(first, images)


@pytest.mark.parametrize("family", sorted(CORRUPTIONS))
def test_monotone_in_severity(images, family):
    change = [np.abs(corrupt_images(images, family, s, seed=0).astype(float) - images).mean() for s in SEVERITIES]
    assert np.all(np.diff(change) > 0), change


@pytest.mark.parametrize("family", ["gaussian_noise", "impulse_noise", "motion_blur"])
def test_seed_changes_random_families(images, family):
    assert not np.array_equal(corrupt_images(images, family, 2, seed=0), corrupt_images(images, family, 2, seed=1))


def test_contrast_matches_hand_computation(images):
    x = images[0].astype(float) / 255
    expected = np.uint8(np.clip((x - x.mean(axis=(0, 1))) * 0.5 + x.mean(axis=(0, 1)), 0, 1) * 255 + 0.5)
    np.testing.assert_array_equal(corrupt_image(images[0], "contrast", 2, seed=0, index=0), expected)


def test_bad_arguments(images):
    with pytest.raises(ValueError, match="unknown corruption 'fog'"):
        corrupt_images(images, "fog", 1, 0)
    with pytest.raises(ValueError, match="severity must be one of"):
        corrupt_images(images, "contrast", 6, 0)
    with pytest.raises(ValueError, match="uint8 H×W×3"):
        corrupt_image(images[0].astype(float), "contrast", 1, 0, 0)


def test_archive_in_official_layout_reads_back(tmp_path, images):
    labels = np.array([3, 1, 4, 1])
    write_cifar_c_archive(tmp_path, images, labels, ["contrast", "pixelate"], seed=0)
    assert np.load(tmp_path / "contrast.npy").shape == (5 * 4, 32, 32, 3)
    assert np.load(tmp_path / "labels.npy").shape == (20,)
    for severity in (1, 4):
        read = read_cifar_c(tmp_path, "test", "c10c", corruption="pixelate", severity=severity)
        np.testing.assert_array_equal(read.labels, labels)
        np.testing.assert_array_equal(np.stack([read.image(i) for i in range(4)]),
                                      corrupt_images(images, "pixelate", severity, 0))
