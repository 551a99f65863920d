"""The embedded demo data generator: layout, determinism, labels, prototypes and variation."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from csfbench.data.demo import (
    DATASETS,
    SHIFTED,
    SPLITS,
    demo_splits,
    TEXTURES,
    demo_prototypes,
    generate_demo,
)
from csfbench.errors import ConfigError
from csfbench.workflow.settings import validate_config

from tests.helpers.demo_config import demo_config, full_spec


SMALL = {
    "demo10": {"n_train": 200, "n_test": 30},
    "demo40": {"n_train": 80, "n_test": 40},
    "near": {"n_ood": 20},
    "digits": {"n_ood": 20},
    "photos": {"n_ood": 20},
    "noise": {"n_ood": 20},
    "pretrain": {"n_train": 40, "n_test": 20},
}


def _arrays(root: Path) -> dict[tuple[str, str, str], np.ndarray]:
    """Every array of a generated tree, keyed by (dataset, split, file stem)."""
    return {
        (name, split, stem): np.load(root / name / split / f"{stem}.npy")
        for name, split in SPLITS
        for stem in ("images", "labels")
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("demo_seed0")
    return root, generate_demo(root, 0, full_spec(SMALL), threads=1)


@pytest.fixture(scope="module")
def arrays(generated) -> dict:
    return _arrays(generated[0])


def test_same_seed_gives_identical_bytes_whatever_the_threads(generated, tmp_path):
    root, _ = generated
    generate_demo(tmp_path, 0, full_spec(SMALL), threads=3)
    for name, split in SPLITS:
        for file in ("images.npy", "labels.npy"):
            first, second = root / name / split / file, tmp_path / name / split / file
            assert first.read_bytes() == second.read_bytes(), (name, split, file)


def test_different_seed_gives_different_images(arrays, tmp_path):
    generate_demo(tmp_path, 1, full_spec(SMALL))
    other = _arrays(tmp_path)
    for name, split in SPLITS:
        assert not np.array_equal(arrays[name, split, "images"], other[name, split, "images"]), name


def test_layout_shapes_and_dtypes(generated, arrays):
    root, summary = generated
    spec = full_spec(SMALL)
    for name, split in SPLITS:
        n = spec[name]["n_ood" if name in SHIFTED else f"n_{split}"]
        images, labels = arrays[name, split, "images"], arrays[name, split, "labels"]
        assert images.shape == (n, 32, 32, 3) and images.dtype == np.uint8, name
        assert labels.shape == (n,) and labels.dtype == np.int64, name
        assert images.std() > 10, f"{name}: images are nearly constant"
        assert summary[name]["splits"][split] == n
    assert set(summary) == set(DATASETS)


def test_only_final_files_exist(generated):
    root, _ = generated
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    expected = sorted(f"{name}/{split}/{stem}.npy" for name, split in SPLITS for stem in ("images", "labels"))
    assert files == expected


def test_interrupted_write_leaves_no_complete_looking_file(tmp_path, monkeypatch):
    def crash(handle, array):
        handle.write(b"\x93NUMPY truncated")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        generate_demo(tmp_path, 0, full_spec(SMALL))
    assert not list(tmp_path.rglob("*.npy"))


@pytest.mark.parametrize("name, n_classes", [("demo10", 10), ("demo40", 40), ("pretrain", 20)])
def test_labelled_sets_cover_every_class_evenly(arrays, generated, name, n_classes):
    splits = [split for dataset, split in SPLITS if dataset == name]
    for split in splits:
        labels = arrays[name, split, "labels"]
        assert labels.min() >= 0 and labels.max() < n_classes
        counts = np.bincount(labels, minlength=n_classes)
        assert counts.max() - counts.min() <= 1, (name, split, counts)
    assert generated[1][name]["classes"] == n_classes


def test_shifted_sets_have_no_labels(arrays, generated):
    for name in SHIFTED:
        assert np.all(arrays[name, "test", "labels"] == -1), name
        assert generated[1][name]["classes"] == 0


def test_prototypes_are_disjoint_between_sets():
    protos = demo_prototypes(0, full_spec())
    assert {name: len(p) for name, p in protos.items()} == {"demo10": 10, "demo40": 40, "near": 10, "pretrain": 20}
    ids = [p.pid for plist in protos.values() for p in plist]
    assert len(ids) == len(set(ids))
    world = {p.combo for name in ("demo10", "demo40", "near") for p in protos[name]}
    assert world.isdisjoint(p.combo for p in protos["pretrain"])
    assert {p.family for p in protos["pretrain"]} == {"pretrain"}


def test_every_class_differs_visibly_from_its_sibling():
    """Pairs (2k, 2k+1) are confusable by design but must differ in something that is rendered."""
    spec = full_spec()
    for seed in range(3):
        protos = demo_prototypes(seed, spec)
        for family in (protos["demo10"] + protos["demo40"] + protos["near"], protos["pretrain"]):
            for base, sibling in zip(family[0::2], family[1::2]):
                texture = (base.texture_freq, base.texture_angle) != (sibling.texture_freq, sibling.texture_angle)
                assert (
                    base.shape != sibling.shape
                    or base.fg != sibling.fg
                    or base.bg != sibling.bg
                    or (texture and TEXTURES[base.texture] != "flat")
                ), (base, sibling)


def test_images_of_one_class_vary(arrays):
    images, labels = arrays["demo10", "train", "images"], arrays["demo10", "train", "labels"]
    for label in range(10):
        members = images[labels == label].astype(np.float32)
        assert len(np.unique(members.reshape(len(members), -1), axis=0)) == len(members)
        assert members.std(axis=0).mean() > 20, f"class {label}: too little variation across its images"


def test_digits_match_the_sources_colour_statistics(arrays):
    sources = np.concatenate([arrays[n, "train", "images"].reshape(-1, 3) for n in ("demo10", "demo40")])
    digits = arrays["digits", "test", "images"].reshape(-1, 3)
    assert np.allclose(digits.mean(0), sources.mean(0), atol=15)
    assert np.allclose(digits.std(0), sources.std(0), atol=15)


def test_default_sizes():
    """Without a ``spec`` the schema's defaults give the full sizes (exact values: test_demo_settings.py)."""
    spec = full_spec()
    assert spec["image_size"] == 32
    assert all(spec[name]["n_ood"] >= 500 for name in SHIFTED)
    assert (spec["demo10"]["n_classes"], spec["demo40"]["n_classes"]) == (10, 40)
    assert spec["demo10"]["n_train"] >= 4000 and spec["demo40"]["n_train"] >= 6000
    assert spec == full_spec({})


def test_the_pretraining_set_has_a_test_split_only_when_asked(tmp_path):
    spec = full_spec({**SMALL, "pretrain": {"n_train": 40}})
    assert ("pretrain", "test") not in demo_splits(spec) and demo_splits(full_spec(SMALL)) == list(SPLITS)
    summary = generate_demo(tmp_path, 0, spec)
    assert summary["pretrain"]["splits"] == {"train": 40} and not (tmp_path / "pretrain" / "test").exists()


def test_image_size_is_a_parameter(tmp_path):
    default = full_spec()
    tiny = {name: {key: 4 for key in default[name] if key != "n_classes"} for name in DATASETS}
    generate_demo(tmp_path, 0, full_spec({**tiny, "image_size": 16}))
    for name, split in SPLITS:
        assert np.load(tmp_path / name / split / "images.npy").shape == (4, 16, 16, 3)


@pytest.mark.parametrize(
    "spec, key_path, expected, found",
    [({"demo10": {"n_trian": 5}}, "demo/spec/demo10", "n_train", "n_trian"),
     ({"colour": 1}, "demo/spec", "image_size", "colour"),
     ({"digits": {"n_ood": -1}}, "demo/spec/digits/n_ood", "minimum 0", "-1"),
     ({"near": {"n_classes": 0}}, "demo/spec/near/n_classes", "minimum 1", "0"),
     ({"variation": {"sibling_shift": 2.0}}, "demo/spec/variation/sibling_shift", "maximum 0.5", "2.0")],
)
def test_bad_spec_raises(spec, key_path, expected, found):
    """A bad demo spec fails when the config is validated (before the DAG is built), naming the key."""
    with pytest.raises(ConfigError) as info:
        validate_config(demo_config(spec))
    assert info.value.key_path == key_path
    assert expected in info.value.expected
    assert found in str(info.value.found)


def test_too_many_classes_for_the_shape_world_raise():
    """The class count is bounded by the distinct prototype combinations, across demo10, demo40 and near."""
    spec = full_spec({"demo40": {"n_classes": 150}, "near": {"n_classes": 100}})
    with pytest.raises(ConfigError, match="n_classes") as info:
        demo_prototypes(0, spec)
    assert info.value.found == 260
