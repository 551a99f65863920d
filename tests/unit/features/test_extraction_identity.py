"""The extraction identity of the feature files shared between studies (csfbench.features.identity): what enters it,
what does not, how the consumers check a shared file, and the jobs of rule extract_pretrained_features."""
from __future__ import annotations

import copy
import dataclasses
import json

import numpy as np
import pytest
import yaml

from csfbench.audit.readers import read_accuracy
from csfbench.errors import FeatureFileError
from csfbench.features.identity import (EXTRACTION_VERSION, extraction_identity, identity_attrs, model_hash,
                                        model_identity, shares_features)
from csfbench.features.store import REQUIRED_ATTRS, FeatureWriter, feature_expect, run_attrs, validate_feature_file
from csfbench.stages.features import extract_shared
from csfbench.workflow.jobs import Jobs
from csfbench.workflow.settings import validate_config

from tests.helpers.repo import REPO

DEMO = yaml.safe_load((REPO / "config/config.yaml").read_text())
PRETRAINED = "vittiny_pretrained_do0_rew0_run1"


def _jobs(edit=None) -> Jobs:
    config = copy.deepcopy(DEMO)
    if edit is not None:
        edit(config)
    return Jobs(validate_config(config))


def _identity(jobs: Jobs, dataset: str, source: str = "pretrain20", model: str = PRETRAINED) -> dict:
    return json.loads(jobs.extraction_json(source, model, dataset))


def _renamed(config):
    """Another study of the same weights on the same data: other source, backbone and seed, run number, batch size,
    workers and regime."""
    config["seed"] = 11
    config["sources"]["study2"] = config["sources"].pop("pretrain20")
    config["sources"]["study2"]["image_size"] = {"tinyvit": 32}
    config["sources"]["study2"]["ood"]["near"]["regime"] = "far"
    config["backbones"]["tinyvit"] = config["backbones"].pop("vittiny")
    config["backbones"]["tinyvit"].update(runs=[4], sources=["study2"])
    config["features"]["batch_size"] = 17
    config.setdefault("resources", {})["extract_features"] = {"threads": 1, "mem_mb": 1000, "runtime": 5,
                                                              "num_workers": 3}


@pytest.mark.parametrize("dataset", ["train", "val", "test", "near"])
def test_the_identity_ignores_names_seed_run_batch_size_workers_and_regime(dataset):
    other = _jobs(_renamed)
    assert _identity(_jobs(), dataset) == _identity(other, dataset, "study2", "tinyvit_pretrained_do0_rew0_run4")
    assert model_hash(_jobs().model_spec("pretrain20", PRETRAINED)) == \
        model_hash(other.model_spec("study2", "tinyvit_pretrained_do0_rew0_run4"))


def _normalize(config):
    config["backbones"]["vittiny"]["eval"]["normalize"] = {"mean": [0.4, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}


def _set(*path_and_value):
    *path, value = path_and_value

    def edit(config):
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


@pytest.mark.parametrize("edit, part", [
    (_normalize, "model"),
    (_set("backbones", "vittiny", "eval", "interpolation", "bicubic"), "model"),
    (_set("sources", "pretrain20", "image_size", "vittiny", 48), "model"),
    (_set("backbones", "vittiny", "arch", "depth", 3), "model"),
    (_set("features", "feature_dtype", "float16"), "storage"),
    (_set("features", "compression", "lzf"), "storage"),
    (_set("data_root", "results/data/other"), "data"),
])
def test_what_determines_the_arrays_changes_the_identity(edit, part):
    before, after = _identity(_jobs(), "test"), _identity(_jobs(edit), "test")
    assert before[part] != after[part]
    assert {k for k in before if before[k] != after[k]} == {part}


def test_the_validation_size_enters_only_the_splits_it_divides():
    jobs, other = _jobs(), _jobs(_set("sources", "pretrain20", "val_size", 150))
    assert _identity(jobs, "train") == _identity(other, "train")
    assert _identity(jobs, "val") != _identity(other, "val") and _identity(jobs, "test") != _identity(other, "test")


def test_a_label_space_and_its_mask_enter_the_identity():
    jobs = _jobs()
    spec, near = jobs.model_spec("pretrain20", PRETRAINED), jobs.eval_set_spec("pretrain20", "near")
    restricted = dataclasses.replace(near, label_space=(0, 3), logit_mask="restrict")
    assert extraction_identity(spec, near, "float32", "gzip")["data"] != \
        extraction_identity(spec, restricted, "float32", "gzip")["data"]
    assert extraction_identity(spec, restricted, "float32", "gzip")["data"]["label_space"] == [0, 3]


def test_the_data_path_is_absolute_so_that_two_run_folders_never_share_a_relative_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _identity(_jobs(), "near")["data"]["dataset"]["path"]
    assert path == str(tmp_path.resolve() / "results/data/demo/near")


def test_only_pretrained_classifiers_share_their_features():
    jobs = _jobs()
    assert jobs.shared_feature_models() == (PRETRAINED,)
    assert shares_features(jobs.model_spec("pretrain20", PRETRAINED))
    for source, model in (("pretrain20", "vittiny_random_do0_rew0_run1"), ("demo10", "vit_ce_do0_rew0_run1"),
                          ("demo10", "vgg13_dg_do1_rew2.2_run1")):
        spec = jobs.model_spec(source, model)
        assert not shares_features(spec) and feature_expect(spec) == run_attrs(spec)
        with pytest.raises(ValueError, match="not shared between studies"):
            model_identity(spec)
    spec = jobs.model_spec("pretrain20", PRETRAINED)
    assert feature_expect(spec) == {"extraction_model": model_hash(spec)}
    assert model_identity(spec)["version"] == EXTRACTION_VERSION


def test_the_weights_file_is_an_input_when_the_workflow_writes_it_or_once_it_exists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    jobs = _jobs()  # the demo: the weights are the output of its ViT pretraining
    assert jobs.shared_extract_inputs("pretrain20", PRETRAINED, "near") == {
        "weights": "results/pretrained/vit_demo.safetensors", "index": "results/data/index/near.json"}
    user = _jobs(lambda c: (c.pop("pretrain"), c["backbones"]["vittiny"].update(weights={"file": "mine.pt"}),
                            c["backbones"].pop("vit"), c.pop("proximity"), c.pop("ensembles")))
    assert user.shared_extract_inputs("pretrain20", PRETRAINED, "test") == {"index": "results/data/index/pretrain.json"}
    (tmp_path / "mine.pt").write_bytes(b"weights")
    assert user.shared_extract_inputs("pretrain20", PRETRAINED, "test")["weights"] == "mine.pt"


def test_a_job_whose_identity_param_is_not_its_own_is_refused(tmp_path):
    jobs = _jobs()
    spec, near = jobs.model_spec("pretrain20", PRETRAINED), jobs.eval_set_spec("pretrain20", "near")
    wrong = extraction_identity(spec, near, "float16", "gzip")
    with pytest.raises(ValueError, match="is not that of the job's model"):
        extract_shared(spec, near, json.dumps(wrong), tmp_path / "near.h5", 8, "gzip", feature_dtype="float32")
    assert not (tmp_path / "near.h5").exists()


def _shared_file(path, identity, source="pretrain20", model=PRETRAINED):
    rng = np.random.default_rng(0)
    attrs = {k: "x" for k in REQUIRED_ATTRS}
    attrs.update(source=source, model=model, dataset="test", paradigm="pretrained", shift_type="id", n_classes=3,
                 feature_dim=2, mcd_samples=0, **identity_attrs(identity))
    with FeatureWriter(path, 4, n_outputs=3, feature_dim=2, mcd_samples=0, has_confidence=False, attrs=attrs) as w:
        labels = np.array([0, 1, 2, 0])
        logits = rng.normal(size=(4, 3)).astype("f4")
        w.write_batch({"logits": logits, "features": rng.normal(size=(4, 2)).astype("f4"), "labels": labels,
                       "pred": logits.argmax(1), "correct": logits.argmax(1) == labels,
                       "sample_id": np.array([f"{i}" for i in range(4)], object)})
    return path


def test_a_consumer_accepts_another_studys_file_of_its_extraction_and_refuses_another_extraction(tmp_path):
    jobs, renamed, other = _jobs(), _jobs(_renamed), _jobs(_normalize)
    spec = jobs.model_spec("pretrain20", PRETRAINED)
    path = _shared_file(tmp_path / "test.h5", extraction_identity(spec, jobs.eval_set_spec("pretrain20", "test"),
                                                                   "float32", "gzip"))
    mine = renamed.model_spec("study2", "tinyvit_pretrained_do0_rew0_run4")
    assert validate_feature_file(path, {**feature_expect(mine), "dataset": "test"})["source"] == "pretrain20"
    with pytest.raises(FeatureFileError, match="attribute 'extraction_model'"):
        validate_feature_file(path, feature_expect(other.model_spec("pretrain20", PRETRAINED)))
    with pytest.raises(FeatureFileError, match="attribute 'source'"):  # a trained model's check is unchanged
        validate_feature_file(path, feature_expect(jobs.model_spec("demo10", "vit_ce_do0_rew0_run1")))


def test_the_audit_names_a_shared_file_by_its_place_in_this_run(tmp_path):
    jobs = _jobs()
    spec = jobs.model_spec("pretrain20", PRETRAINED)
    folder = tmp_path / "features/study2/tinyvit_pretrained_do0_rew0_run4"
    folder.mkdir(parents=True)
    path = _shared_file(folder / "test.h5", extraction_identity(spec, jobs.eval_set_spec("pretrain20", "test"),
                                                                 "float32", "gzip"))
    record = read_accuracy(path)
    assert (record.source, record.model, record.n_labelled) == ("study2", "tinyvit_pretrained_do0_rew0_run4", 4)
