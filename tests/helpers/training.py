"""A tiny learnable dataset in the npy format and a matching model spec, for training tests."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from csfbench.workflow.grid import Grid
from csfbench.workflow.ids import ModelId
from csfbench.workflow.settings import validate_config
from csfbench.specs import ModelSpec


def write_blobs(root: Path, n_train: int = 256, n_test: int = 128, n_classes: int = 4, seed: int = 0) -> Path:
    """Class = colour of a noisy square; a tiny VGG learns it within an epoch or two."""
    rng = np.random.default_rng(seed)
    colours = rng.integers(40, 215, (n_classes, 3))
    for split, n in (("train", n_train), ("test", n_test)):
        labels = rng.integers(0, n_classes, n)
        images = rng.integers(0, 60, (n, 32, 32, 3))
        for i, y in enumerate(labels):
            r, c = rng.integers(0, 16, 2)
            images[i, r:r + 16, c:c + 16] = colours[y] + rng.integers(-30, 30, 3)
        (root / split).mkdir(parents=True, exist_ok=True)
        np.save(root / split / "images.npy", np.clip(images, 0, 255).astype(np.uint8))
        np.save(root / split / "labels.npy", labels.astype(np.int64))
    return root


def tiny_config(data_root: Path, paradigm: str = "dg", dropout: int = 1, epochs: int = 3, mcd: int = 2) -> dict:
    """A validated config (schema defaults filled in) with one tiny VGG-13 of ``paradigm`` on the blobs."""
    params = {"dg": {"epochs": epochs, "pretrain_epochs": 1},
              "devries": {"epochs": epochs, "budget": 0.3, "lambda_init": 0.1},
              "confidnet": {"epochs_backbone": 1, "epochs_head": max(1, epochs - 2), "epochs_finetune": 1,
                            "head_hidden": 16}}[paradigm]
    config = {
        "seed": 0,
        "data_root": str(data_root),
        "datasets": {"blobs": {"format": "npy", "path": ".", "split": "test"}},
        "sources": {"blobs": {"dataset": "blobs", "n_classes": 4, "val_size": 64, "image_size": {"vgg13": 32},
                              "normalize": {"mean": [0.3] * 3, "std": [0.3] * 3}, "dg_rewards": [2.2], "ood": {}}},
        "backbones": {"vgg13": {"paradigms": [paradigm], "dropout": [dropout], "runs": [1],
                                "arch": {"width": 0.125}, "mcd_samples": mcd}},
        "training": {"vgg13": {"common": {"batch_size": 32, "lr": 0.05, "momentum": 0.9, "weight_decay": 5e-4,
                                          "augment": {"crop_padding": 2, "hflip": True, "cutout": 8}},
                               paradigm: params}},
        "features": {"batch_size": 64},
        "csf": {"groups": ["none"], "tuning": {"init_points": 2, "n_iter": 1}},
    }
    return validate_config(config, origin="training_helpers.tiny_config")


def tiny_spec(data_root: Path, paradigm: str = "dg", dropout: int = 1, epochs: int = 3, mcd: int = 2) -> ModelSpec:
    """The complete spec (grid.model_spec of :func:`tiny_config`) of the tiny model, with a fixed seed."""
    config = tiny_config(data_root, paradigm, dropout, epochs, mcd)
    reward = 2.2 if paradigm == "dg" else 0.0
    spec = Grid(config).model_spec("blobs", ModelId("vgg13", paradigm, dropout, reward, 1))
    return dataclasses.replace(spec, seed=1234)


def with_params(spec: ModelSpec, **changes) -> ModelSpec:
    """``spec`` with ``paradigm_params`` entries changed (specs are frozen)."""
    return dataclasses.replace(spec, paradigm_params={**spec.paradigm_params, **changes})
