"""HDF5 feature extraction vs a plain inference loop over the same model and data, in one run.

    .venv/bin/python benchmarks/extract_features.py [--n 4000] [--width 1.0] [--repeats 3]
    .venv/bin/python benchmarks/extract_features.py --model resnet50 --images 240 --repeats 4

The plain loop does what any evaluation must: batches through the loader, normalisation, the forward
pass, and the outputs moved to host memory.  The extraction additionally computes predictions and
writes logits, features, labels, predictions, correctness, ids and confidence to a compressed,
chunked HDF5 file (renamed into place at the end).  Both use the same loader (csfbench's
``make_loader`` with the model's geometry and ``--workers`` DataLoader workers), the same device and
the same mixed precision (bf16/fp16 autocast on CUDA, none on CPU).  The two are timed in ABBA order
(round r runs plain then extraction when r is even, extraction then plain when odd) so that drift and
background load affect both alike; the report gives every round, the medians, the overhead of the
medians and the median of the per-round overheads.  Target: overhead ≤ 10 % of the medians (exit code 1
above).  The CPU time of each run (this process and its reaped DataLoader workers) is reported as well: on
a shared machine it is less disturbed by other processes than the wall time.  So is the third estimate: the
extraction's extra work timed alone (predictions and the HDF5 file written from outputs already in memory,
random float32 so incompressible) divided by the plain loop's median.

Two further measurements tell which side bounds the throughput (median over the rounds):

* loader alone: the same DataLoader iterated without a model (for JPEGs: decode, resize, crop);
* model alone: normalisation + forward + outputs to host on uint8 tensors already in memory (on the
  device), ``--model-images`` per round — no decoding, no loader.

The smaller of the two images/s is the bound; on a machine where the DataLoader workers and the
forward pass share the same cores the pipeline is slower than either.

Models (``--model``):

* ``vgg13`` (default): csfbench's VGG-13 (DeVries paradigm) on ``--n`` random 32×32 images held in
  memory, default bilinear stretch; results in benchmarks/out/extract_features.json.
* ``resnet50``: torchvision's ResNet-50 (random initialisation, ``weights=None``: no download; the
  timing does not depend on the weights), built as the workflow builds a torchvision classifier
  (``library="torchvision"``, paradigm ``random``), at 224 px through the real ImageNet evaluation
  pipeline: ``--images`` JPEG files of ImageNet-like sizes (500×375, 375×500, 500×333, 640×480, ...)
  written with PIL to ``--data`` (reused while its parameters match), read through the ``imglist``
  format (an OpenOOD image list) as a lazily decoded ``FileImageSet``, then decode → resize the
  shorter side to 256 → centre crop 224 (``geometry="resize_crop"``, ``crop_pct=0.875``,
  bilinear: torchvision's IMAGENET1K_V1 evaluation) and ImageNet normalisation.  The files are read
  from the page cache (just written); a cold disk would slow the loader only.  Results in
  benchmarks/out/extract_features_resnet50_<device>.json.

GPU: the device is ``cuda`` whenever ``torch.cuda.is_available()`` (``--device cpu`` forces the CPU).
On a GPU machine give the loader the cores it has and a larger batch, e.g.

    .venv/bin/python benchmarks/extract_features.py --model resnet50 --images 2000 --batch-size 128 \\
        --workers 8 --threads 4 --repeats 4

where the loader (CPU) rather than the model is expected to bound the throughput.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from csfbench.data.base import ArrayImageSet, ImageSet
from csfbench.data.formats import open_dataset
from csfbench.data.loader import make_loader
from csfbench.data.transforms import normalize
from csfbench.features.extract import extract_features, feature_attrs, predict
from csfbench.features.store import FeatureWriter
from csfbench.models import build_model
from csfbench.specs import DatasetSpec, ModelSpec
from csfbench.training.loop import autocast

MODELS = ("vgg13", "resnet50")
#: (width, height) of the generated JPEGs and how often each is drawn: the common ILSVRC-2012 shapes, most
#: 500 px on the longer side and landscape (about 0.2 megapixels on average, as ImageNet's validation images)
JPEG_SIZES = ((500, 375), (375, 500), (500, 333), (333, 500), (500, 500), (500, 400), (640, 480), (480, 640),
              (500, 281), (400, 300), (800, 600), (1024, 768))
JPEG_SIZE_WEIGHTS = (40, 15, 10, 5, 5, 5, 5, 2, 3, 4, 4, 2)
JPEG_FORMAT_VERSION = 2
DEFAULT_DATA = Path(tempfile.gettempdir()) / "csfbench_bench_jpeg"


# ---------------------------------------------------------------------------------------------
# Data and models


def _synthetic_jpeg(rng: np.random.Generator, width: int, height: int) -> Image.Image:
    """A photo-like test image: a smooth colour field, a few filled shapes (edges) and sensor-like grain, so
    that JPEG sizes and decode times are those of natural images rather than of white noise."""
    low = rng.integers(0, 256, (int(rng.integers(3, 9)), int(rng.integers(3, 9)), 3), dtype=np.uint8)
    img = Image.fromarray(low).resize((width, height), Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(5, 25))):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        x1, y1 = x0 + int(rng.integers(5, width // 2)), y0 + int(rng.integers(5, height // 2))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)((x0, y0, x1, y1), fill=colour)
    grain = rng.normal(0, 12, (height, width, 1)) + rng.normal(0, 4, (height, width, 3))
    return Image.fromarray(np.clip(np.asarray(img, np.float32) + grain, 0, 255).astype(np.uint8))


def jpeg_image_set(folder: Path, n: int, seed: int = 0, quality: int = 90) -> tuple[ImageSet, dict]:
    """``n`` JPEG files under ``folder/images/cXX/`` listed in ``folder/imglist.txt`` (10 classes), read back
    through csfbench's ``imglist`` format.  Files from an earlier call with the same parameters are reused."""
    folder = Path(folder)
    meta_path = folder / "bench_meta.json"
    wanted = {"n": n, "seed": seed, "quality": quality, "version": JPEG_FORMAT_VERSION}
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    if {k: meta.get(k) for k in wanted} != wanted or not (folder / "imglist.txt").is_file():
        rng = np.random.default_rng(seed)
        lines, n_bytes, pixels = [], 0, 0
        for i in range(n):
            weights = np.asarray(JPEG_SIZE_WEIGHTS, float)
            width, height = JPEG_SIZES[int(rng.choice(len(JPEG_SIZES), p=weights / weights.sum()))]
            rel = f"images/c{i % 10:02d}/{i:05d}.JPEG"
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            _synthetic_jpeg(rng, width, height).save(folder / rel, "JPEG", quality=quality)
            n_bytes += (folder / rel).stat().st_size
            pixels += width * height
            lines.append(f"{rel} {i % 10}\n")
        (folder / "imglist.txt").write_text("".join(lines))
        meta = {**wanted, "mean_kb": round(n_bytes / n / 1024, 1), "mean_megapixels": round(pixels / n / 1e6, 3)}
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    images = open_dataset("imglist", folder, "test", "bench_jpeg", imglist="imglist.txt")
    if len(images) != n:
        raise RuntimeError(f"{folder / 'imglist.txt'}: {len(images)} images read back, {n} written")
    return images, meta


def vgg13_spec(width: float) -> ModelSpec:
    return ModelSpec(source="bench", model="vgg13_devries_do0_rew0_run1", backbone="vgg13", paradigm="devries",
                     dropout=0, reward=0.0, run=1, seed=0, n_classes=10, image_size=32,
                     normalize={"mean": [0.5] * 3, "std": [0.25] * 3}, arch={"width": width}, mcd_samples=0,
                     optim={}, paradigm_params={}, dataset=DatasetSpec("bench", "npy", "unused"), val_size=0)


def resnet50_spec() -> ModelSpec:
    """torchvision's ResNet-50 as :func:`csfbench.workflow.grid._library_model_spec` builds it (paradigm ``random``:
    default initialisation seeded by the run, no weights file), with the IMAGENET1K_V1 evaluation preprocessing
    read from torchvision (:func:`csfbench.models.pretrained.eval_preprocessing`)."""
    from csfbench.models.pretrained import eval_preprocessing

    prep = eval_preprocessing("torchvision", "resnet50")
    return ModelSpec(source="bench", model="resnet50_random_do0_rew0_run1", backbone="resnet50", paradigm="random",
                     dropout=0, reward=0.0, run=1, seed=0, n_classes=1000, image_size=int(prep.input_size),
                     normalize=prep.normalize_kwargs(), arch={"name": "resnet50"}, mcd_samples=0, optim={},
                     paradigm_params={}, dataset=DatasetSpec("bench", "imglist", "unused"), val_size=0,
                     library="torchvision", weights=None,
                     geometry={"mode": prep.geometry, "crop_pct": prep.crop_pct, "interpolation": prep.interpolation})


# ---------------------------------------------------------------------------------------------
# Timed runs (each returns wall seconds)


def _host(*tensors) -> tuple:
    return tuple(t.float().cpu().numpy() for t in tensors if t is not None)


def plain_inference(model, spec, images, batch_size, device: torch.device, workers: int) -> float:
    t0 = time.perf_counter()
    outputs = []
    with torch.no_grad():
        for raw, _, _ in make_loader(images, spec.image_size, batch_size, num_workers=workers,
                                     **spec.loader_geometry):
            x = normalize(raw.to(device, non_blocking=True), **spec.normalize)
            with autocast(device):
                out = model(x)
            outputs.append(_host(out.logits, out.features, out.confidence))
    return time.perf_counter() - t0


def hdf5_extraction(model, spec, images, batch_size, folder: Path, compression: str, device: torch.device,
                    workers: int) -> float:
    t0 = time.perf_counter()
    extract_features(model, spec, images, folder / "bench.h5", "bench", "test", "id", batch_size, device,
                     compression=compression, num_workers=workers)
    return time.perf_counter() - t0


def hdf5_write_only(model, spec, images, batch_size, folder: Path, compression: str) -> float:
    """The extraction's extra work alone, without loader or model: the predictions and the HDF5 file of
    ``len(images)`` rows (as :func:`extract_features` builds them) written from outputs already in host memory.
    The outputs are random float32, incompressible: a worst case for gzip."""
    rng = np.random.default_rng(0)
    n, n_out, dim, has_conf = len(images), model.head.out_features, model.feature_dim, model.paradigm != "ce"
    batches = []
    for start in range(0, n, batch_size):
        index = np.arange(start, min(n, start + batch_size))
        batches.append((torch.from_numpy(rng.standard_normal((len(index), n_out), dtype=np.float32)),
                        rng.standard_normal((len(index), dim), dtype=np.float32),
                        rng.random(len(index), dtype=np.float32), index))
    t0 = time.perf_counter()
    attrs = feature_attrs(spec, "bench", "test", "id", dim)
    with FeatureWriter(folder / "write_only.h5", n, n_out, dim, 0, has_conf, attrs, compression) as writer:
        for logits, features, conf, index in batches:
            pred = predict(logits[:, : spec.n_classes]).numpy()
            labels = images.labels[index].astype(np.int64)
            rows = {"logits": logits.numpy(), "features": features, "labels": labels, "pred": pred,
                    "correct": (pred == labels) & (labels >= 0), "sample_id": images.sample_ids[index].astype(object)}
            if has_conf:
                rows["confidence"] = conf
            writer.write_batch(rows)
    return time.perf_counter() - t0


def loader_only(spec, images, batch_size, workers: int) -> float:
    """The DataLoader alone (for JPEGs: read, decode, resize, crop, collate), batches discarded."""
    t0 = time.perf_counter()
    n = 0
    for raw, _, _ in make_loader(images, spec.image_size, batch_size, num_workers=workers, **spec.loader_geometry):
        n += raw.shape[0]
    assert n == len(images)
    return time.perf_counter() - t0


def model_only(model, spec, n_images: int, batch_size: int, device: torch.device) -> float:
    """Normalisation + forward + outputs to host on a uint8 batch already in memory (on ``device``)."""
    gen = torch.Generator().manual_seed(0)
    raw = torch.randint(0, 256, (batch_size, 3, spec.image_size, spec.image_size), generator=gen,
                        dtype=torch.uint8).to(device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        for start in range(0, n_images, batch_size):
            x = normalize(raw[: min(batch_size, n_images - start)], **spec.normalize)
            with autocast(device):
                out = model(x)
            _host(out.logits, out.features, out.confidence)
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------------------------


def _cpu_seconds() -> float:
    """User + system CPU time of this process and of its reaped children (the DataLoader workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(cpu: list, fn, *args) -> float:
    """``fn(*args)`` (which returns its wall seconds); its CPU seconds are appended to ``cpu``."""
    c0 = _cpu_seconds()
    wall = fn(*args)
    cpu.append(_cpu_seconds() - c0)
    return wall


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="vgg13", choices=MODELS,
                        help="vgg13: random 32×32 arrays in memory; resnet50: JPEG files at 224 px (default vgg13)")
    parser.add_argument("--n", "--images", dest="n", type=int, default=None,
                        help="images (default: 4000 for vgg13, 240 JPEGs for resnet50)")
    parser.add_argument("--width", type=float, default=1.0, help="VGG-13 width multiplier (1.0 = paper)")
    parser.add_argument("--batch-size", type=int, default=None, help="default: 256 for vgg13, 32 for resnet50")
    parser.add_argument("--repeats", "--rounds", dest="repeats", type=int, default=None,
                        help="rounds, in ABBA order (default: 3 for vgg13, 4 for resnet50)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the main process")
    parser.add_argument("--workers", type=int, default=None,
                        help="DataLoader workers (default: 0 for vgg13, 2 for resnet50)")
    parser.add_argument("--model-images", type=int, default=None,
                        help="images per round of the model-alone timing (default: min(n, 2 batches))")
    parser.add_argument("--device", default=None, choices=["cpu", "cuda"],
                        help="default: cuda when available, else cpu")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"folder of the generated JPEGs (resnet50; default {DEFAULT_DATA})")
    parser.add_argument("--compression", default="gzip", choices=["gzip", "lzf", "none"])
    args = parser.parse_args(argv)
    resnet = args.model == "resnet50"
    n = args.n if args.n is not None else (240 if resnet else 4000)
    batch_size = args.batch_size or (32 if resnet else 256)
    repeats = args.repeats or (4 if resnet else 3)
    workers = args.workers if args.workers is not None else (2 if resnet else 0)
    model_images = args.model_images or min(n, 2 * batch_size)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.set_num_threads(args.threads)

    data_meta: dict = {}
    if resnet:
        t0 = time.perf_counter()
        images, data_meta = jpeg_image_set(args.data, n)
        print(f"{n} JPEGs in {args.data} ({data_meta['mean_kb']} kB, {data_meta['mean_megapixels']} MP on average; "
              f"ready in {time.perf_counter() - t0:.1f} s)", flush=True)
        spec = resnet50_spec()
    else:
        rng = np.random.default_rng(0)
        images = ArrayImageSet("bench", rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8),
                               rng.integers(0, 10, n), np.arange(n))
        spec = vgg13_spec(args.width)
    model = build_model(spec).eval().to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{args.model}: {n_params / 1e6:.1f} M parameters, {spec.image_size} px, "
          f"{spec.loader_geometry or 'stretch'}, device {device}, {args.threads} threads, {workers} workers, "
          f"batch {batch_size}", flush=True)

    plain, hdf5, loader_s, model_s, order = [], [], [], [], []
    plain_cpu, hdf5_cpu, write_s = [], [], []
    load_before = _load()
    with tempfile.TemporaryDirectory() as tmp:
        warm = images.subset(np.arange(min(batch_size, n)))
        plain_inference(model, spec, warm, batch_size, device, workers)  # warm-up (allocator, oneDNN/cuDNN)
        for r in range(repeats):  # ABBA: drift and background load affect both equally
            pair = ("plain", "hdf5") if r % 2 == 0 else ("hdf5", "plain")
            for what in pair:
                if what == "plain":
                    plain.append(timed(plain_cpu, plain_inference, model, spec, images, batch_size, device, workers))
                else:
                    hdf5.append(timed(hdf5_cpu, hdf5_extraction, model, spec, images, batch_size, Path(tmp),
                                      args.compression, device, workers))
                order.append(what)
            print(f"round {r + 1}/{repeats} ({' → '.join(pair)}): plain {plain[-1]:.2f} s, HDF5 {hdf5[-1]:.2f} s, "
                  f"overhead {100 * (hdf5[-1] / plain[-1] - 1):+.1f} % "
                  f"(CPU time: {plain_cpu[-1]:.1f} s, {hdf5_cpu[-1]:.1f} s, "
                  f"{100 * (hdf5_cpu[-1] / plain_cpu[-1] - 1):+.1f} %)", flush=True)
        size_mb = (Path(tmp) / "bench.h5").stat().st_size / 2**20
        for r in range(repeats):  # the two sides alone, and the writing alone, after the pipeline runs
            loader_s.append(loader_only(spec, images, batch_size, workers))
            model_s.append(model_only(model, spec, model_images, batch_size, device))
            write_s.append(hdf5_write_only(model, spec, images, batch_size, Path(tmp), args.compression))
            print(f"alone {r + 1}/{repeats}: loader {n / loader_s[-1]:.1f} img/s, "
                  f"model {model_images / model_s[-1]:.1f} img/s, HDF5 writing {write_s[-1]:.3f} s", flush=True)
    load_after = _load()

    per_round = [h / p - 1 for p, h in zip(plain, hdf5)]
    loader_ips, model_ips = n / statistics.median(loader_s), model_images / statistics.median(model_s)
    result = {"model": args.model, "n_images": n, "image_size": spec.image_size, "geometry": spec.loader_geometry,
              "device": str(device), "threads": args.threads, "workers": workers, "batch_size": batch_size,
              "compression": args.compression, "n_parameters": n_params, "cpu_count": os.cpu_count(),
              "load_average_1min": [load_before, load_after], "order": order,
              "plain_s": statistics.median(plain), "hdf5_s": statistics.median(hdf5), "file_mb": round(size_mb, 2),
              "plain_runs": plain, "hdf5_runs": hdf5, "overhead_runs": per_round,
              "overhead_median_of_rounds": statistics.median(per_round),
              "plain_cpu_runs": plain_cpu, "hdf5_cpu_runs": hdf5_cpu,
              "cpu_overhead": statistics.median(hdf5_cpu) / statistics.median(plain_cpu) - 1,
              "loader_only_runs_s": loader_s, "model_only_runs_s": model_s, "model_only_images": model_images,
              "loader_only_img_s": loader_ips, "model_only_img_s": model_ips,
              "bound": "model" if model_ips < loader_ips else "loader",
              "write_only_runs_s": write_s, "write_only_s": statistics.median(write_s)}
    if resnet:
        result["data"] = {"folder": str(args.data), **data_meta}
    else:
        result["width"] = args.width
    result["overhead"] = result["hdf5_s"] / result["plain_s"] - 1
    result["pipeline_img_s"] = n / result["plain_s"]
    result["write_only_overhead"] = result["write_only_s"] / result["plain_s"]
    if device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name(device)
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    name = "extract_features.json" if not resnet else f"extract_features_resnet50_{device.type}.json"
    (out / name).write_text(json.dumps(result, indent=2) + "\n")
    print(f"plain inference  {result['plain_s']:.2f} s  ({n / result['plain_s']:.1f} img/s)")
    print(f"HDF5 extraction  {result['hdf5_s']:.2f} s  ({n / result['hdf5_s']:.1f} img/s), "
          f"file {size_mb:.1f} MB ({args.compression})")
    print(f"overhead         {100 * result['overhead']:+.1f} % of the medians, "
          f"{100 * result['overhead_median_of_rounds']:+.1f} % median of the rounds  (target ≤ +10 %); "
          f"CPU time {100 * result['cpu_overhead']:+.1f} %")
    print(f"HDF5 writing     {result['write_only_s']:.3f} s alone (predictions + file, no loader or model) = "
          f"{100 * result['write_only_overhead']:+.2f} % of the plain loop")
    print(f"loader alone     {loader_ips:.1f} img/s   model alone {model_ips:.1f} img/s   "
          f"→ bound by the {result['bound']}")
    print(f"results in {out / name}")
    return 0 if result["overhead"] <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
