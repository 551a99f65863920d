"""Jobs of ``rules/data.smk``: the embedded demo generator and the dataset index."""
from __future__ import annotations

import json
import logging
from pathlib import Path

from csfbench.atomic import write_json
from csfbench.data.demo import generate_demo
from csfbench.data.formats import FORMATS, open_dataset
from csfbench.specs import DatasetSpec

log = logging.getLogger(__name__)


def demo_data(out_files: list[str], seed: int, spec: dict, threads: int = 1) -> dict:
    """Generate the embedded demo datasets (see :mod:`csfbench.data.demo`) as the declared ``out_files``.

    The files are ``{root}/{dataset}/{split}/{images,labels}.npy``; the root is taken from them.
    """
    root = Path(out_files[0]).parents[2]
    summary = generate_demo(root, seed, spec, threads=threads)
    missing = [f for f in out_files if not Path(f).is_file()]
    if missing:
        raise RuntimeError(f"demo generator did not write the declared outputs {missing}")
    log.info("demo data: %s", json.dumps(summary, sort_keys=True))
    return summary


def index_dataset(dataset: DatasetSpec, splits: list[str], out_json: str | Path) -> dict:
    """Open the used official ``splits`` of a catalogue dataset, check them, record counts and label range.

    Fails fast, before any job decodes an image, with a :class:`~csfbench.errors.DatasetError`
    (dataset, path tried, problem, expected layout) when the data are missing, malformed or empty or
    a file is no image.  Whether a source fits its dataset (``n_classes``, ``val_size``) is checked
    by its training job before the first epoch (:mod:`csfbench.stages.train`), not here: the index
    is shared by every source of the dataset, and a param of its job that changed with each source
    added would rerun every model trained on it.
    """
    opened = {}
    for split in splits:
        images = open_dataset(dataset.format, dataset.path, split, dataset.name, **dataset.options)
        FORMATS[dataset.format].check_files(images)  # a known format: open_dataset has read it
        opened[split] = images
        log.info("%s/%s: %d images", dataset.name, split, len(images))
    index = {"name": dataset.name, "format": dataset.format, "path": dataset.path, "options": dataset.options,
             "splits": {split: {"n": len(images), "label_min": int(images.labels.min()),
                                "label_max": int(images.labels.max()), "first_sample_id": str(images.sample_ids[0])}
                        for split, images in opened.items()}}
    write_json(index, out_json, sort_keys=True)
    return index
