"""HDF5 feature extraction vs a plain inference loop over the same model and data, in one run.

    .venv/bin/python benchmarks/extract_features.py [--n 4000] [--width 1.0] [--repeats 3]

The plain loop does what any evaluation must: batches through the loader, normalisation, the forward
pass, and the outputs moved to host memory.  The extraction additionally computes predictions and
writes logits, features, labels, predictions, correctness, ids and confidence to a compressed,
chunked HDF5 file (renamed into place at the end).  Reports median wall times and the overhead
ratio; target: overhead ≤ 10 %.  Results go to benchmarks/out/extract_features.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from csfbench.data.base import ArrayImageSet
from csfbench.data.loader import make_loader
from csfbench.data.transforms import normalize
from csfbench.features.extract import extract_features
from csfbench.models import build_model
from csfbench.specs import DatasetSpec, ModelSpec


def plain_inference(model, spec, images, batch_size) -> float:
    t0 = time.perf_counter()
    outputs = []
    with torch.no_grad():
        for raw, _, _ in make_loader(images, spec.image_size, batch_size):
            out = model(normalize(raw, **spec.normalize))
            outputs.append((out.logits.numpy(), out.features.numpy(), out.confidence.numpy()))
    return time.perf_counter() - t0


def hdf5_extraction(model, spec, images, batch_size, folder: Path, compression: str) -> float:
    t0 = time.perf_counter()
    extract_features(model, spec, images, folder / "bench.h5", "bench", "test", "id", batch_size,
                     torch.device("cpu"), compression=compression)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=4000, help="images (32×32 RGB)")
    parser.add_argument("--width", type=float, default=1.0, help="VGG-13 width multiplier (1.0 = paper)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compression", default="gzip", choices=["gzip", "lzf", "none"])
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    images = ArrayImageSet("bench", rng.integers(0, 256, (args.n, 32, 32, 3), dtype=np.uint8),
                           rng.integers(0, 10, args.n), np.arange(args.n))
    spec = ModelSpec(source="bench", model="vgg13_devries_do0_rew0_run1", backbone="vgg13", paradigm="devries",
                     dropout=0, reward=0.0, run=1, seed=0, n_classes=10, image_size=32,
                     normalize={"mean": [0.5] * 3, "std": [0.25] * 3}, arch={"width": args.width}, mcd_samples=0,
                     optim={}, paradigm_params={}, dataset=DatasetSpec("bench", "npy", "unused"), val_size=0)
    model = build_model(spec).eval()
    plain, hdf5 = [], []
    with tempfile.TemporaryDirectory() as tmp:
        plain_inference(model, spec, images.subset(np.arange(min(512, args.n))), args.batch_size)  # warm-up
        for _ in range(args.repeats):  # interleaved so drift affects both equally
            plain.append(plain_inference(model, spec, images, args.batch_size))
            hdf5.append(hdf5_extraction(model, spec, images, args.batch_size, Path(tmp), args.compression))
        size_mb = (Path(tmp) / "bench.h5").stat().st_size / 2**20
    result = {"n_images": args.n, "width": args.width, "threads": args.threads, "compression": args.compression,
              "plain_s": statistics.median(plain), "hdf5_s": statistics.median(hdf5), "file_mb": round(size_mb, 2),
              "plain_runs": plain, "hdf5_runs": hdf5}
    result["overhead"] = result["hdf5_s"] / result["plain_s"] - 1
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    (out / "extract_features.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"plain inference  {result['plain_s']:.2f} s  ({args.n / result['plain_s']:.0f} img/s)")
    print(f"HDF5 extraction  {result['hdf5_s']:.2f} s  ({args.n / result['hdf5_s']:.0f} img/s), "
          f"file {size_mb:.1f} MB ({args.compression})")
    print(f"overhead         {100 * result['overhead']:+.1f} %  (target ≤ +10 %)")
    return 0 if result["overhead"] <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
