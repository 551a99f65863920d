"""Pixel helpers of the demo generator and its shifted sets that are not shape worlds.

``digits`` (sklearn's bundled digits), ``photos`` (patches of photos bundled with scikit-learn and
scikit-image) and ``noise``: each an N×size×size×3 uint8 array drawn from a given generator, so the
demo stays deterministic for a seed and needs no download.
"""
from __future__ import annotations

import numpy as np
from scipy import ndimage


def blur(img: np.ndarray, sigmas: np.ndarray) -> None:
    """Gaussian blur of each image ``img[i]`` (N×S×S×3) with its own sigma in pixels, in place."""
    for sigma in np.unique(sigmas):
        if sigma > 0:
            idx = np.flatnonzero(sigmas == sigma)
            img[idx] = ndimage.gaussian_filter(img[idx], sigma=(0, sigma, sigma, 0), mode="nearest")


def to_uint8(img: np.ndarray) -> np.ndarray:
    """float images in 0..1 (clipped) to uint8 0..255."""
    return np.rint(np.clip(img, 0.0, 1.0) * 255).astype(np.uint8)


def digits_images(rng: np.random.Generator, n: int, size: int, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """sklearn digits as N×size×size×3 uint8: cubic upsampling with a small random affine jitter,
    random object/background colours, then a per-channel affine map to ``mean``/``std`` (0..255)."""
    if n == 0:
        return np.empty((0, size, size, 3), dtype=np.uint8)
    from sklearn.datasets import load_digits

    digits = load_digits().images.astype(np.float64) / 16.0  # 1797×8×8 in 0..1
    picks = rng.choice(len(digits), size=n, replace=n > len(digits))
    gray = np.empty((n, size, size), dtype=np.float32)
    for i, pick in enumerate(picks):
        scale, angle, shift = rng.uniform(0.9, 1.1), rng.normal(0, 0.15), rng.uniform(-0.6, 0.6, 2)
        gray[i] = _affine_resample(digits[pick], size, scale, angle, shift)
    fg, bg = rng.uniform(0, 1, (2, n, 1, 1, 3)).astype(np.float32)
    img = bg + (fg - bg) * np.clip(gray, 0, 1)[..., None]
    flat = img.reshape(-1, 3)
    img = (img - flat.mean(0)) / np.maximum(flat.std(0), 1e-6) * (std / 255) + mean / 255
    return to_uint8(img)


def _affine_resample(image: np.ndarray, size: int, scale: float, angle: float, shift: np.ndarray) -> np.ndarray:
    """``image`` (h×w) resampled to size×size by a cubic spline, zoomed by ``scale``, rotated by
    ``angle`` (radians) about the centre and shifted by ``shift`` input pixels."""
    h = image.shape[0]
    zoom = h / size / scale
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]) * zoom
    out_centre = np.full(2, (size - 1) / 2)
    offset = (h - 1) / 2 + shift - rot @ out_centre
    return ndimage.affine_transform(image, rot, offset=offset, output_shape=(size, size), order=3, mode="constant")


def photo_library() -> list[np.ndarray]:
    """The bundled photos and textures as H×W×3 uint8 (sklearn's 2 samples and offline skimage.data)."""
    from sklearn.datasets import load_sample_images
    import skimage.data

    photos = list(load_sample_images().images)
    for name in ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry",
                 "retina", "brick", "grass", "gravel", "camera", "moon", "coins", "text", "page", "clock"):
        try:
            image = np.asarray(getattr(skimage.data, name)())
        except Exception:  # an image that needs a download (or is missing in this version) is left out
            continue
        photos.append(np.repeat(image[..., None], 3, axis=2) if image.ndim == 2 else image[..., :3])
    return photos


def photo_patches(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """Random square patches of :func:`photo_library`, side log-uniform from size/2 pixels to the whole
    short side, antialiased resize to size×size, random horizontal flip: N×size×size×3 uint8."""
    from PIL import Image

    library = [Image.fromarray(np.ascontiguousarray(p, dtype=np.uint8)) for p in photo_library()]
    out = np.empty((n, size, size, 3), dtype=np.uint8)
    for i, pick in enumerate(rng.integers(len(library), size=n)):
        photo = library[pick]
        short = min(photo.size)
        side = float(np.exp(rng.uniform(np.log(size / 2), np.log(short))))
        left, top = rng.uniform(0, photo.size[0] - side), rng.uniform(0, photo.size[1] - side)
        box = (left, top, left + side, top + side)
        patch = np.asarray(photo.resize((size, size), Image.Resampling.BILINEAR, box=box))
        out[i] = patch[:, ::-1] if rng.random() < 0.5 else patch
    return out


def noise_images(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """N×size×size×3 uint8 noise, one third each: uniform 0..255, Gaussian and smoothed Gaussian blobs
    (sigma 1..4 pixels); the Gaussian kinds get a random mean (0.3..0.7) and std (0.1..0.3) of 0..1."""
    kind = rng.integers(3, size=n)
    img = rng.standard_normal((n, size, size, 3), dtype=np.float32)
    blur(img, np.where(kind == 2, rng.choice([1.0, 2.0, 3.0, 4.0], n), 0.0))
    img /= img.std(axis=(1, 2, 3), keepdims=True)
    img = img * rng.uniform(0.1, 0.3, (n, 1, 1, 1)) + rng.uniform(0.3, 0.7, (n, 1, 1, 1))
    uniform = np.flatnonzero(kind == 0)
    img[uniform] = rng.uniform(0.0, 1.0, (len(uniform), size, size, 3))
    return to_uint8(img)
