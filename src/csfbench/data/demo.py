"""Embedded demo datasets, generated from a seed without any download.

Every set is written in the csfbench ``npy`` layout::

    {out_dir}/{dataset}/{split}/images.npy   N×S×S×3 uint8 (0..255, S = spec["image_size"])
    {out_dir}/{dataset}/{split}/labels.npy   N int64 (-1 = no label of a source)

The generator takes the complete ``demo.spec`` of a validated config: its keys, bounds and defaults
(sizes of the sets, intra-class variation) are described in ``config/schema.yaml`` and filled in by
:func:`csfbench.workflow.settings.validate_config`; this module supplies no defaults of its own.

Datasets:

* ``demo10`` / ``demo40`` (sources, splits ``train`` and ``test``) and ``near`` (held-out classes,
  labels -1) come from one procedural *shape world*: each class is a prototype (shape, fill pattern,
  background texture, colours, size, angle, ...) and every image is a randomly varied rendering of
  it (position, scale, rotation, colour jitter, clutter shapes, occlusion, blur, pixel noise).
  Prototypes are drawn in pairs, the second a *sibling* of the first that differs in one attribute
  only, so that every source holds deliberately confusable classes.
* ``digits`` (mid shift): sklearn's 8×8 digits, smoothly upsampled, randomly coloured and matched to
  the sources' per-channel mean and std.
* ``photos`` (far shift): random patches of the photos and textures bundled with scikit-learn and
  scikit-image.
* ``noise`` (far shift): uniform, Gaussian and smoothed (blob) noise.
  (``digits``, ``photos`` and ``noise`` are drawn by :mod:`csfbench.data.demo_images`.)
* ``pretrain`` (split ``train``, labelled; split ``test`` when ``pretrain.n_test`` > 0): a separate prototype
  family for pretraining the demo ViT; it shares no (shape, fill, texture) combination with the shape world.
  Its test split lets the pretrained ViT itself be evaluated as a classifier without training.

Everything derives from ``seed`` through independent random streams keyed by dataset and split, so
the same seed and spec give identical bytes and changing one set's size leaves the others alone.
"""
from __future__ import annotations

import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from csfbench.atomic import save_npy
from csfbench.data.demo_images import blur, digits_images, noise_images, photo_patches, to_uint8
from csfbench.errors import ConfigError

SHAPEWORLD = ("demo10", "demo40", "near")
SOURCES = ("demo10", "demo40")
SHIFTED = ("near", "digits", "photos", "noise")  # labels -1, split "test"
DATASETS = (*SOURCES, *SHIFTED, "pretrain")
# (dataset, split) in generation order: the sources' train images set the colour statistics of digits
SPLITS = (("demo10", "train"), ("demo10", "test"), ("demo40", "train"), ("demo40", "test"), ("pretrain", "train"),
          ("pretrain", "test"), *((name, "test") for name in SHIFTED))
_CHUNK = 256  # images rendered per vectorised batch (bounds the float32 temporaries)


def demo_splits(spec: dict) -> list[tuple[str, str]]:
    """The (dataset, split) pairs a ``demo.spec`` generates, in :data:`SPLITS` order: the pretraining set's
    test split only when ``pretrain.n_test`` > 0 (it makes the set an ID source of its own)."""
    return [(name, split) for name, split in SPLITS if (name, split) != ("pretrain", "test") or spec["pretrain"]["n_test"]]


# --------------------------------------------------------------------------------------------------
# random streams


def _stream(seed: int, *keys: str) -> np.random.SeedSequence:
    """The independent seed sequence of ``seed`` and the stream named by ``keys`` (e.g. "demo10", "train")."""
    return np.random.SeedSequence(int(seed), spawn_key=tuple(zlib.crc32(k.encode()) for k in keys))


def _rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator on :func:`_stream` ``(seed, *keys)``."""
    return np.random.default_rng(_stream(seed, *keys))


# --------------------------------------------------------------------------------------------------
# shapes: signed distances in object coordinates (u, v), radius units, negative inside


def _sdf_disc(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Unit disc."""
    return np.hypot(u, v) - 1.0


def _sdf_ring(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Ring between radii 0.4 and 1."""
    return np.abs(np.hypot(u, v) - 0.7) - 0.3


def _sdf_square(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Square of half-side 0.8."""
    return np.maximum(np.abs(u), np.abs(v)) - 0.8


def _sdf_diamond(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Square standing on a corner, corners at distance 1."""
    return (np.abs(u) + np.abs(v) - 1.0) * np.float32(0.7071)


def _sdf_triangle(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Equilateral triangle with circumradius 1."""
    return np.maximum(np.abs(u) * np.float32(0.866) + v * 0.5, -v) - 0.5


def _sdf_cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Plus sign with arms of half-width 0.3."""
    au, av = np.abs(u), np.abs(v)
    return np.minimum(np.maximum(au - 0.3, av - 0.95), np.maximum(av - 0.3, au - 0.95))


def _sdf_star(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Five-pointed star (approximate distance)."""
    return np.hypot(u, v) - (0.65 + 0.3 * np.cos(5.0 * np.arctan2(v, u)))


def _sdf_bar(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Bar of half-size 0.95 × 0.35."""
    return np.maximum(np.abs(u) - 0.95, np.abs(v) - 0.35)


def _sdf_crescent(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Unit disc minus an offset disc."""
    return np.maximum(np.hypot(u, v) - 1.0, 0.85 - np.hypot(u - 0.45, v))


SHAPES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "disc": _sdf_disc,
    "ring": _sdf_ring,
    "square": _sdf_square,
    "diamond": _sdf_diamond,
    "triangle": _sdf_triangle,
    "cross": _sdf_cross,
    "star": _sdf_star,
    "bar": _sdf_bar,
    "crescent": _sdf_crescent,
}
SHAPE_NAMES = tuple(SHAPES)
_SHAPE_EXTENT = 1.15  # every shape lies within this many radii of its centre
# the look-alike a sibling swaps its shape for
SHAPE_SIBLING = {
    "disc": "ring", "ring": "crescent", "square": "diamond", "diamond": "triangle", "triangle": "diamond",
    "cross": "star", "star": "cross", "bar": "square", "crescent": "disc",
}
FILLS = ("solid", "stripes", "dots")
TEXTURES = ("flat", "stripes", "checker", "gradient")
SIBLING_KINDS = ("shape", "fg", "texture", "bg")  # what the sibling of pair k changes: kind k mod 4


# --------------------------------------------------------------------------------------------------
# prototypes


@dataclass(frozen=True)
class Prototype:
    """One class of a shape family; colours are RGB in 0..1, lengths in units of half the image side."""

    pid: int  # unique over all families (pretrain ids follow the shape-world ids)
    family: str  # "shapeworld" or "pretrain"
    shape: int  # index into SHAPE_NAMES
    fill: int  # index into FILLS (pattern inside the object)
    texture: int  # index into TEXTURES (background pattern)
    fg: tuple[float, float, float]
    bg: tuple[float, float, float]
    bg2: tuple[float, float, float]  # second background colour of the texture
    radius: float
    angle: float  # radians
    fill_freq: float  # cycles per radius
    texture_freq: float  # cycles per half image side
    texture_angle: float  # radians

    @property
    def combo(self) -> tuple[int, int, int]:
        """The discrete (shape, fill, texture) combination; families never share one."""
        return (self.shape, self.fill, self.texture)


def demo_prototypes(seed: int, spec: dict) -> dict[str, list[Prototype]]:
    """The prototypes of demo10, demo40, near and pretrain; label k of a set is its k-th prototype.

    ``spec``: the complete, validated ``demo.spec`` (see the module docstring).  The number of classes
    is bounded by the distinct (shape, fill, texture) combinations: :class:`ConfigError` if the shape
    world (demo10 + demo40 + near) or pretrain asks for more.
    """
    counts = [spec[name]["n_classes"] for name in SHAPEWORLD]
    shift = spec["variation"]["sibling_shift"]
    world = _draw_family(_rng(seed, "prototypes", "shapeworld"), sum(counts), 0, "shapeworld", set(), shift,
                         "demo/spec/{demo10,demo40,near}/n_classes (in all)")
    pretrain = _draw_family(
        _rng(seed, "prototypes", "pretrain"), spec["pretrain"]["n_classes"], len(world), "pretrain",
        {p.combo for p in world}, shift, "demo/spec/pretrain/n_classes",
    )
    bounds = np.cumsum([0, *counts])
    sets = {name: world[bounds[i]:bounds[i + 1]] for i, name in enumerate(SHAPEWORLD)}
    return {**sets, "pretrain": pretrain}


def _draw_family(
    rng: np.random.Generator, n: int, first_pid: int, family: str, excluded: set, shift: float, key_path: str
) -> list[Prototype]:
    """``n`` prototypes in (base, sibling) pairs (ids ``first_pid``...); the base combos are distinct
    and none is in ``excluded``; ``shift`` is the colour distance of colour siblings.  Too many classes
    for the combos left raise :class:`ConfigError` naming the config's ``key_path``."""
    combos = [
        (s, f, t) for s in range(len(SHAPES)) for f in range(len(FILLS)) for t in range(len(TEXTURES))
        if (s, f, t) not in excluded
    ]
    n_base = (n + 1) // 2
    if n_base > len(combos):
        raise ConfigError(key_path, f"at most {2 * len(combos)} classes", n)
    picks = rng.choice(len(combos), size=n_base, replace=False)
    taken = set(excluded) | {combos[i] for i in picks}
    protos: list[Prototype] = []
    for pair, i in enumerate(picks):
        base = _random_prototype(rng, first_pid + len(protos), family, combos[i])
        protos.append(base)
        if len(protos) < n:
            kind = SIBLING_KINDS[pair % len(SIBLING_KINDS)]
            protos.append(_sibling(rng, base, first_pid + len(protos), kind, taken, shift))
    return protos


def _random_prototype(rng: np.random.Generator, pid: int, family: str, combo: tuple) -> Prototype:
    """A prototype with the given (shape, fill, texture) and random colours and geometry."""
    fg, bg = _contrasting_colours(rng)
    bg2 = _shifted_colour(rng, bg, rng.uniform(0.3, 0.5))
    return Prototype(
        pid=pid, family=family, shape=combo[0], fill=combo[1], texture=combo[2],
        fg=tuple(fg), bg=tuple(bg), bg2=tuple(bg2),
        radius=float(rng.uniform(0.38, 0.55)), angle=float(rng.uniform(0.0, np.pi)),
        fill_freq=float(rng.uniform(1.0, 2.0)), texture_freq=float(rng.uniform(1.5, 4.0)),
        texture_angle=float(rng.uniform(0.0, np.pi)),
    )


def _contrasting_colours(rng: np.random.Generator, min_distance: float = 0.45) -> tuple[np.ndarray, np.ndarray]:
    """An object and a background colour (RGB 0..1) at least ``min_distance`` apart."""
    while True:
        fg, bg = rng.uniform(0.05, 0.95, (2, 3))
        if np.linalg.norm(fg - bg) >= min_distance:
            return fg, bg


def _sibling(
    rng: np.random.Generator, base: Prototype, pid: int, kind: str, taken: set, shift: float
) -> Prototype:
    """A confusable copy of ``base`` that differs visibly in one attribute, by ``kind``: "shape" (its
    look-alike; the object colour instead if that combination is taken), "fg" or "bg" (the object or
    background colour moves by ``shift``), "texture" (frequency and angle; the background colour
    instead on a flat background)."""
    shape = SHAPE_NAMES.index(SHAPE_SIBLING[SHAPE_NAMES[base.shape]])
    if kind == "shape" and (shape, base.fill, base.texture) in taken:
        kind = "fg"
    if kind == "texture" and TEXTURES[base.texture] == "flat":
        kind = "bg"
    if kind == "shape":
        taken.add((shape, base.fill, base.texture))
        return _replace(base, pid=pid, shape=shape)
    if kind == "texture":
        ratio = 1.6 if base.texture_freq < 2.5 else 1 / 1.6  # stays coarse enough to survive blur
        return _replace(
            base, pid=pid, texture_freq=base.texture_freq * ratio, texture_angle=base.texture_angle + np.pi / 4
        )
    moved = _shifted_colour(rng, np.asarray(getattr(base, kind)), shift)
    return _replace(base, pid=pid, **{kind: tuple(moved)})


def _shifted_colour(rng: np.random.Generator, colour: np.ndarray, shift: float) -> np.ndarray:
    """A colour (RGB 0..1) at distance ``shift`` from ``colour`` in a random direction inside the cube."""
    while True:
        direction = rng.normal(0.0, 1.0, 3)
        moved = colour + shift * direction / np.linalg.norm(direction)
        if np.all((moved >= 0.0) & (moved <= 1.0)):
            return moved


def _replace(proto: Prototype, **changes) -> Prototype:
    """``proto`` with some fields changed."""
    return Prototype(**{**proto.__dict__, **changes})


def _prototype_table(protos: list[Prototype]) -> dict[str, np.ndarray]:
    """The prototypes' fields as float32/int arrays indexed by label (for vectorised rendering)."""
    fields = [f for f in Prototype.__dataclass_fields__ if f not in ("pid", "family")]
    table = {f: np.asarray([getattr(p, f) for p in protos]) for f in fields}
    return {f: v.astype(np.float32) if v.dtype.kind == "f" else v for f, v in table.items()}


# --------------------------------------------------------------------------------------------------
# rendering of the shape world


def render(
    protos: list[Prototype], labels: np.ndarray, stream: np.random.SeedSequence, size: int, variation: dict,
    threads: int = 1,
) -> np.ndarray:
    """Random renderings of ``protos[labels[i]]``: N×size×size×3 uint8.

    Images are rendered in chunks of :data:`_CHUNK`, chunk k from the k-th child of ``stream``, on
    ``threads`` threads; the bytes do not depend on the number of threads.
    """
    table = _prototype_table(protos)
    starts = range(0, len(labels), _CHUNK)

    def chunk(args: tuple[int, np.random.SeedSequence]) -> np.ndarray:
        start, child = args
        rows = {k: v[labels[start:start + _CHUNK]] for k, v in table.items()}
        return _render_chunk(rows, table["fg"], np.random.default_rng(child), size, variation)

    out = np.empty((len(labels), size, size, 3), dtype=np.uint8)
    with ThreadPoolExecutor(max(1, threads)) as pool:
        for start, images in zip(starts, pool.map(chunk, zip(starts, stream.spawn(len(starts))))):
            out[start:start + _CHUNK] = images
    return out


def _render_chunk(p: dict, palette: np.ndarray, rng: np.random.Generator, size: int, var: dict) -> np.ndarray:
    """One batch: background, clutter, the object, an occluder, then gain, blur and noise (uint8 out)."""
    n, sd = len(p["shape"]), var["colour_jitter"]
    bg, bg2 = _jitter_colours(rng, p["bg"], sd), _jitter_colours(rng, p["bg2"], sd)
    img = _background(rng, p["texture"], bg, bg2, p["texture_freq"], p["texture_angle"], size)
    for _ in range(var["distractors"]):
        on = np.flatnonzero(rng.random(n) < var["distractor_prob"])
        colour = _jitter_colours(rng, palette[rng.integers(len(palette), size=len(on))], sd)
        _paint_shapes(img, on, rng.integers(len(SHAPES), size=len(on)), rng.uniform(-0.85, 0.85, (len(on), 2)),
                      rng.uniform(0.12, 0.25, len(on)), rng.uniform(0, np.pi, len(on)), colour)
    centre = rng.uniform(-var["position"], var["position"], (n, 2))
    radius = p["radius"] * rng.uniform(*var["scale"], n)
    angle = p["angle"] + np.deg2rad(var["rotation_deg"]) * rng.normal(0.0, 1.0, n)
    fill = (p["fill"], p["fill_freq"] * rng.uniform(0.85, 1.15, n), rng.uniform(0, 2 * np.pi, (n, 2)))
    _paint_shapes(img, np.arange(n), p["shape"], centre, radius, angle, _jitter_colours(rng, p["fg"], sd), fill)
    on = np.flatnonzero(rng.random(n) < var["occlusion_prob"])
    offset = radius[on, None] * rng.uniform(0.6, 1.1, (len(on), 1)) * _unit_vectors(rng, len(on))
    _paint_shapes(img, on, np.full(len(on), SHAPE_NAMES.index("bar")), centre[on] + offset,
                  radius[on] * rng.uniform(0.6, 0.9, len(on)), rng.uniform(0, np.pi, len(on)),
                  rng.uniform(0, 1, (len(on), 3)))
    img *= rng.uniform(1 - var["brightness"], 1 + var["brightness"], (n, 1, 1, 1)).astype(np.float32)
    blur(img, rng.choice(np.asarray(var["blur_sigmas_px"], dtype=float), n))
    noise_std = rng.uniform(0, var["noise_std"], (n, 1, 1, 1)).astype(np.float32)
    img += rng.standard_normal(img.shape, dtype=np.float32) * noise_std
    return to_uint8(img)


def _jitter_colours(rng: np.random.Generator, colours: np.ndarray, std: float) -> np.ndarray:
    """n×3 RGB colours (0..1) plus independent Gaussian noise of ``std`` per channel, clipped, float32."""
    return np.clip(colours + rng.normal(0.0, std, colours.shape), 0.0, 1.0).astype(np.float32)


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-centre coordinates (x, y), each size×size float32 in (-1, 1), y pointing down."""
    axis = ((np.arange(size, dtype=np.float32) + 0.5) / size) * 2 - 1
    y, x = np.meshgrid(axis, axis, indexing="ij")
    return x, y


def _unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` random directions as an n×2 array."""
    phi = rng.uniform(0, 2 * np.pi, n)
    return np.stack([np.cos(phi), np.sin(phi)], axis=1)


def _background(rng, texture, bg, bg2, freq, angle, size) -> np.ndarray:
    """N×S×S×3 float32 background: ``bg`` blended into ``bg2`` by each image's texture pattern
    (flat: ``bg`` only)."""
    n = len(texture)
    x, y = _grid(size)
    a = (angle + rng.normal(0.0, 0.15, n)).astype(np.float32)[:, None, None]
    f = (np.pi * freq * rng.uniform(0.85, 1.15, n)).astype(np.float32)[:, None, None]
    phase = rng.uniform(0, 2 * np.pi, (2, n, 1, 1)).astype(np.float32)
    t = x * np.cos(a) + y * np.sin(a)
    s = y * np.cos(a) - x * np.sin(a)
    patterns = {
        "flat": lambda i: np.full_like(t[i], -1.0),
        "stripes": lambda i: np.sin(f[i] * t[i] + phase[0, i]),
        "checker": lambda i: np.clip(
            2 * np.sin(f[i] * t[i] + phase[0, i]) * np.sin(f[i] * s[i] + phase[1, i]), -1.0, 1.0
        ),
        "gradient": lambda i: np.clip(t[i], -1, 1),
    }
    w = np.empty_like(t)
    for k, name in enumerate(TEXTURES):
        idx = np.flatnonzero(texture == k)
        w[idx] = patterns[name](idx)
    mix = (0.5 + 0.5 * w)[..., None]
    return bg[:, None, None, :] + (bg2 - bg)[:, None, None, :] * mix


def _paint_shapes(img, idx, shape, centre, radius, angle, colour, fill=None) -> None:
    """Composite one anti-aliased shape onto each image ``img[idx]`` (N×S×S×3 float32) in place.

    ``centre`` (n×2, x then y), ``radius`` (n) in units of half the image side, ``angle`` in
    radians, ``colour`` n×3 RGB 0..1; ``fill`` = (fill kind, cycles per radius, n×2 phases) darkens
    a pattern inside.  Only a square window around each centre that holds the whole shape is
    evaluated, so small shapes are cheap.
    """
    if len(idx) == 0:
        return
    size = img.shape[1]
    half = size / 2
    r = np.asarray(radius, dtype=np.float32)[:, None, None]
    width = min(size, 2 * int(np.ceil(float(r.max()) * half * _SHAPE_EXTENT + 1.5)))
    corner = np.clip(np.rint((centre + 1) * half - width / 2).astype(int), 0, size - width)
    cols, rows = (corner[:, axis, None] + np.arange(width) for axis in (0, 1))  # n×width pixel indices
    dx = ((cols + 0.5) / half - 1 - centre[:, 0, None]).astype(np.float32)[:, None, :]
    dy = ((rows + 0.5) / half - 1 - centre[:, 1, None]).astype(np.float32)[:, :, None]
    c = np.cos(angle).astype(np.float32)[:, None, None]
    s = np.sin(angle).astype(np.float32)[:, None, None]
    u, v = (c * dx + s * dy) / r, (c * dy - s * dx) / r
    dist = np.empty_like(u)
    for k, sdf in enumerate(SHAPES.values()):
        sel = np.flatnonzero(shape == k)
        dist[sel] = sdf(u[sel], v[sel])
    dist *= -r * np.float32(half)  # signed distance in pixels, positive inside
    alpha = np.clip(dist + 0.5, 0.0, 1.0, out=dist)[..., None]
    paint = colour[:, None, None, :].astype(np.float32)
    if fill is not None:
        paint = paint * (1 - 0.5 * _fill_pattern(*fill, u, v)[..., None])
    window = (np.asarray(idx)[:, None, None], rows[:, :, None], cols[:, None, :])
    target = img[window]
    target += alpha * (paint - target)
    img[window] = target


def _fill_pattern(
    kind: np.ndarray, freq: np.ndarray, phase: np.ndarray, u: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Pattern strength 0..1 inside objects: 0 for solid, sinusoidal stripes or dots otherwise."""
    f = (2 * np.pi * freq).astype(np.float32)[:, None, None]
    ph = phase.astype(np.float32)[:, :, None, None]
    stripes = 0.5 + 0.5 * np.sin(f * u + ph[:, 0])
    dots = stripes * (0.5 + 0.5 * np.sin(f * v + ph[:, 1]))
    return np.select([kind[:, None, None] == FILLS.index("stripes"), kind[:, None, None] == FILLS.index("dots")],
                     [stripes, dots], 0.0).astype(np.float32)


# --------------------------------------------------------------------------------------------------
# writing


def generate_demo(out_dir: Path, seed: int, spec: dict, threads: int | None = None) -> dict:
    """Write every demo dataset under ``out_dir`` in the ``npy`` layout and return a summary
    ``{dataset: {"splits": {split: n_images}, "classes": n_classes}}`` (``classes`` 0 for the shifted
    sets, whose labels are all -1).  ``spec``: the complete, validated ``demo.spec`` (see the module
    docstring).  ``threads`` (default: the CPUs available) only changes the speed."""
    out_dir, size, var = Path(out_dir), spec["image_size"], spec["variation"]
    threads = threads or _available_cpus()
    protos = demo_prototypes(seed, spec)
    source_images: list[np.ndarray] = []
    makers = {
        "digits": lambda rng, n: digits_images(rng, n, size, *_channel_stats(source_images)),
        "photos": lambda rng, n: photo_patches(rng, n, size),
        "noise": lambda rng, n: noise_images(rng, n, size),
    }
    summary: dict = {}
    for name, split in demo_splits(spec):
        n = spec[name]["n_ood" if name in SHIFTED else f"n_{split}"]
        if name in protos:
            labels = _balanced_labels(_rng(seed, name, split, "labels"), n, len(protos[name]))
            images = render(protos[name], labels, _stream(seed, name, split, "images"), size, var, threads)
        else:
            images = makers[name](_rng(seed, name, split), n)
        if name in SHIFTED:
            labels = np.full(n, -1, dtype=np.int64)
        elif name in SOURCES and split == "train":
            source_images.append(images)
        _write_split(out_dir / name / split, images, labels)
        entry = summary.setdefault(name, {"splits": {}, "classes": 0 if name in SHIFTED else len(protos[name])})
        entry["splits"][split] = n
    return summary


def _available_cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _balanced_labels(rng: np.random.Generator, n: int, n_classes: int) -> np.ndarray:
    """``n`` int64 labels in 0..n_classes-1, counts differing by at most one, in random order."""
    return rng.permutation(np.arange(n, dtype=np.int64) % n_classes)


def _channel_stats(image_sets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and std (0..255) over uint8 image arrays (N×S×S×3 each), from exact
    histograms; mid-grey with std 64 if there are no pixels."""
    hist = np.zeros((3, 256), dtype=np.int64)
    for images in image_sets:
        hist += np.stack([np.bincount(images[..., c].ravel(), minlength=256) for c in range(3)])
    if hist.sum() == 0:
        return np.full(3, 127.5), np.full(3, 64.0)
    values = np.arange(256.0)
    mean = hist @ values / hist.sum(1)
    return mean, np.sqrt(hist @ values**2 / hist.sum(1) - mean**2)


def _write_split(folder: Path, images: np.ndarray, labels: np.ndarray) -> None:
    """``images.npy`` and ``labels.npy`` in ``folder``, each written atomically (never a truncated array)."""
    for name, array in (("images.npy", images), ("labels.npy", labels)):
        save_npy(array, folder / name)
