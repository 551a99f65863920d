"""Evaluation geometry of the loader against torchvision's and timm's own transforms (independent references)."""
import itertools

import numpy as np
import pytest
import torch
from PIL import Image

from csfbench.data.base import ArrayImageSet
from csfbench.data.loader import TorchImages, fit_geometry, make_loader, resize_size
from csfbench.torch_compat import ensure_torchvision

ensure_torchvision()
import timm.data  # noqa: E402
from torchvision import transforms as T  # noqa: E402
from torchvision.transforms import InterpolationMode  # noqa: E402

MODES = {"bilinear": InterpolationMode.BILINEAR, "bicubic": InterpolationMode.BICUBIC,
         "nearest": InterpolationMode.NEAREST}
SHAPES = [(13, 7), (7, 20), (30, 17), (11, 11), (5, 9)]  # H×W, tall, wide, square, smaller than S


def _image(h, w, seed=0):
    return np.random.default_rng(seed + 31 * h + w).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _reference(img, transform):
    return np.asarray(transform(Image.fromarray(img)))


@pytest.mark.parametrize("interp", list(MODES))
@pytest.mark.parametrize("size,crop_pct", [(8, 0.875), (12, 0.9), (6, 1.0)])
def test_resize_crop_equals_torchvision_resize_then_center_crop(size, crop_pct, interp):
    scale = int(np.floor(size / crop_pct))
    ref = T.Compose([T.Resize(scale, interpolation=MODES[interp]), T.CenterCrop(size)])
    for h, w in SHAPES:
        img = _image(h, w)
        out = fit_geometry(img, size, "resize_crop", crop_pct=crop_pct, interpolation=interp)
        assert out.shape == (size, size, 3) and out.dtype == np.uint8
        np.testing.assert_array_equal(out, _reference(img, ref), err_msg=f"{h}x{w}")


@pytest.mark.parametrize("interp", list(MODES))
@pytest.mark.parametrize("size,crop_pct", [(8, 0.875), (12, 0.9)])
def test_stretch_crop_equals_torchvision_square_resize_then_center_crop(size, crop_pct, interp):
    scale = int(np.floor(size / crop_pct))
    ref = T.Compose([T.Resize((scale, scale), interpolation=MODES[interp]), T.CenterCrop(size)])
    for h, w in SHAPES:
        img = _image(h, w)
        np.testing.assert_array_equal(fit_geometry(img, size, "stretch_crop", crop_pct, interp),
                                      _reference(img, ref), err_msg=f"{h}x{w}")


@pytest.mark.parametrize("interp", list(MODES))
@pytest.mark.parametrize("fill", [0, 128, (10, 200, 30)])
def test_pad_equals_torchvision_pad_then_resize(interp, fill):
    size = 8
    for h, w in SHAPES:
        img = _image(h, w)
        side = max(h, w)
        left, top = (side - w) // 2, (side - h) // 2
        ref = T.Compose([T.Pad((left, top, side - w - left, side - h - top), fill=fill),
                         T.Resize((size, size), interpolation=MODES[interp])])
        out = fit_geometry(img, size, "pad", 0.875, interp, fill=fill)
        np.testing.assert_array_equal(out, _reference(img, ref), err_msg=f"{h}x{w}")


def test_pad_keeps_the_whole_image_and_fills_the_border():
    img = np.full((2, 6, 3), 255, dtype=np.uint8)
    out = fit_geometry(img, 6, "pad", 0.875, "nearest", fill=7)
    assert (out[:2] == 7).all() and (out[4:] == 7).all() and (out[2:4] == 255).all()


@pytest.mark.parametrize("interp", list(MODES))
def test_stretch_equals_torchvision_resize_to_square(interp):
    for h, w in SHAPES:
        img = _image(h, w)
        ref = T.Resize((8, 8), interpolation=MODES[interp])
        np.testing.assert_array_equal(fit_geometry(img, 8, "stretch", 0.875, interp), _reference(img, ref))


def test_imagenet_resize_256_crop_224_like_torchvision_weights():
    """torchvision's ResNet50_Weights.IMAGENET1K_V1.transforms(): resize 256 (bilinear), centre crop 224."""
    img = _image(300, 410)
    ref = T.Compose([T.Resize(256, interpolation=InterpolationMode.BILINEAR), T.CenterCrop(224)])
    np.testing.assert_array_equal(fit_geometry(img, 224, "resize_crop", 0.875, "bilinear"), _reference(img, ref))
    assert resize_size(224, 0.875) == 256
    assert resize_size(224, 224 / 232) == 232 and resize_size(224, 224 / 236) == 236  # IMAGENET1K_V2, ConvNeXt


@pytest.mark.parametrize("crop_mode,geometry", [("center", "resize_crop"), ("squash", "stretch_crop")])
@pytest.mark.parametrize("crop_pct,interp", [(0.875, "bicubic"), (0.95, "bilinear"), (0.9, "bicubic")])
def test_crop_modes_equal_timm_eval_transform(crop_mode, geometry, crop_pct, interp):
    size = 12
    tf = timm.data.create_transform(input_size=(3, size, size), is_training=False, interpolation=interp,
                                    crop_pct=crop_pct, crop_mode=crop_mode, use_prefetcher=True)
    for h, w in SHAPES + [(40, 23)]:
        img = _image(h, w, seed=5)
        ref = tf(Image.fromarray(img)).permute(1, 2, 0).numpy()
        np.testing.assert_array_equal(fit_geometry(img, size, geometry, crop_pct, interp), ref)


def test_stretch_leaves_a_square_image_of_the_right_size_untouched():
    img = _image(8, 8)
    assert fit_geometry(img, 8, "stretch", 0.875, "bilinear") is img


def test_make_loader_defaults_to_the_bilinear_stretch():
    imgs = np.stack([_image(10, 10, seed=i) for i in range(3)])
    images = ArrayImageSet("s", imgs, np.arange(3), np.arange(3))
    batch, labels, index = next(iter(make_loader(images, 6, batch_size=3)))
    expected = np.stack([np.asarray(Image.fromarray(im).resize((6, 6), Image.BILINEAR)) for im in imgs])
    assert torch.equal(batch, torch.from_numpy(expected).permute(0, 3, 1, 2))
    assert labels.tolist() == [0, 1, 2] and index.tolist() == [0, 1, 2]


def test_make_loader_passes_the_geometry_through():
    wide = np.stack([_image(9, 14, seed=i) for i in range(2)])
    images = ArrayImageSet("w", wide, np.zeros(2), np.arange(2))
    for geometry, interp in itertools.product(["resize_crop", "stretch_crop", "pad"], ["bicubic", "nearest"]):
        batch, _, _ = next(iter(make_loader(images, 8, 2, geometry=geometry, crop_pct=0.9, interpolation=interp,
                                            fill=3)))
        for i in range(2):
            expected = fit_geometry(wide[i], 8, geometry, 0.9, interp, fill=3)
            assert torch.equal(batch[i], torch.from_numpy(expected.copy()).permute(2, 0, 1))


@pytest.mark.parametrize("kwargs,match", [
    ({"geometry": "letterbox"}, "geometry"),
    ({"interpolation": "lanczos"}, "interpolation"),
    ({"crop_pct": 0.0}, "crop_pct"),
    ({"crop_pct": 1.2}, "crop_pct"),
])
def test_bad_geometry_settings_are_refused(kwargs, match):
    images = ArrayImageSet("s", np.zeros((1, 4, 4, 3), np.uint8), np.zeros(1), np.zeros(1))
    valid = {"crop_pct": 0.875, "interpolation": "bilinear"}
    with pytest.raises(ValueError, match=match):
        TorchImages(images, 4, **{"geometry": "stretch", **valid, **kwargs})
    with pytest.raises(ValueError, match=match):
        fit_geometry(np.zeros((4, 5, 3), np.uint8), 4, **{"geometry": "resize_crop", **valid, **kwargs})
