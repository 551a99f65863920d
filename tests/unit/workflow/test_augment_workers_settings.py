"""Config side of the random-resized-crop augmentation and of the DataLoader workers that follow a job's threads."""
import dataclasses
import os

import pandas as pd
import pytest

from csfbench.errors import ConfigError
from csfbench.workflow.resources import loader_workers
from csfbench.workflow.settings import validate_config
from csfbench.stages.train import train
from tests.helpers.demo_config import demo_config, edited
from tests.helpers.training import tiny_spec, write_blobs

AUGMENT = ("training", "vit", "common", "augment")


def test_random_resized_crop_defaults_are_torchvisions_and_absent_means_off():
    config = validate_config(edited(demo_config(None), AUGMENT, {"hflip": True, "random_resized_crop": {}}))
    assert config["training"]["vit"]["common"]["augment"]["random_resized_crop"] == {
        "scale": [0.08, 1.0], "ratio": [3 / 4, 4 / 3]}
    # without the key nothing is added, so the model specs (and their results) of existing configs are unchanged
    assert "random_resized_crop" not in validate_config(demo_config(None))["training"]["vit"]["common"]["augment"]


def test_random_resized_crop_with_a_padded_crop_or_disordered_range_names_the_key():
    with pytest.raises(ConfigError, match="training/vit/common/augment/crop_padding"):
        validate_config(edited(demo_config(None), AUGMENT, {"crop_padding": 4, "random_resized_crop": {}}))
    with pytest.raises(ConfigError, match="training/vit/common/augment/random_resized_crop/ratio"):
        validate_config(edited(demo_config(None), AUGMENT, {"random_resized_crop": {"ratio": [2.0, 0.5]}}))
    config = edited(demo_config(None), ("training", "vgg13", "common", "augment"), {"crop_padding": 2})
    source = next(iter(config["sources"]))  # a source's override meets the padded crop of the training section
    config["sources"][source]["training"] = {"vgg13": {"common": {"augment": {"random_resized_crop": {}}}}}
    with pytest.raises(ConfigError, match=f"sources/{source}/training/vgg13/common/augment/crop_padding"):
        validate_config(config)


def test_loader_workers_follow_threads_unless_configured(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert loader_workers(None, 1) == 0  # one thread: the main process loads
    assert loader_workers(None, 3) == 2
    assert loader_workers(None, 8) == 3  # capped by the 4 CPUs this process may use, one kept for the model
    assert loader_workers(0, 8) == 0 and loader_workers(6, 2) == 6  # an explicit value wins


def test_num_workers_defaults_to_following_threads():
    config = validate_config(demo_config(None))
    assert all(entry["num_workers"] is None for entry in config["resources"].values())
    config = validate_config(edited(demo_config(None), ("resources", "train"),
                                    {"threads": 2, "mem_mb": 1000, "runtime": 5, "num_workers": 4}))
    assert config["resources"]["train"]["num_workers"] == 4


def test_training_with_random_resized_crop_and_flip(tmp_path):
    blobs = write_blobs(tmp_path / "blobs", n_train=64, n_test=80)
    spec = tiny_spec(blobs, "dg", epochs=1)
    spec = dataclasses.replace(spec, optim={**spec.optim, "augment": {
        "crop_padding": 0, "hflip": True, "cutout": 0, "random_resized_crop": {"scale": [0.08, 1.0],
                                                                                "ratio": [0.75, 4 / 3]}}})
    train(spec, tmp_path / "checkpoint.pt", tmp_path / "history.csv")
    history = pd.read_csv(tmp_path / "history.csv")
    assert len(history) == 1 and history["train_loss"].notna().all()
