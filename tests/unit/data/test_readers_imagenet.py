"""Readers of image lists and class-folder trees (OpenOOD lists, ILSVRC-2012, wnid folders,
ImageNet-C, ICONIC-444), on tiny fixtures written in exactly those layouts."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from csfbench.data.base import FileImageSet
from csfbench.data.formats import FORMATS, open_dataset
from csfbench.data.list_readers import imagenet_train_subset, write_imglist
from csfbench.errors import DatasetError
from csfbench.specs import DatasetSpec, EvalSet

from tests.helpers.format_fixtures import (
    ICONIC_ALMOND,
    IMAGENET_WNIDS,
    LIST_FORMAT_OPTIONS,
    LIST_FORMAT_WRITERS,
    write_iconic444,
    write_imagenet,
    write_imagenet_c,
    write_openood,
    write_wnid_folders,
    write_wnids,
)


def read(fmt: str, root: Path, split: str = "test", **options):
    return open_dataset(fmt, root, split, "myset", **options)


def check(dataset, sample_ids: list[str], labels) -> None:
    """The dataset is a lazily decoded FileImageSet with exactly these ids and int64 labels."""
    assert isinstance(dataset, FileImageSet) and dataset.name == "myset"
    assert list(dataset.sample_ids) == list(sample_ids)
    assert dataset.labels.dtype == np.int64
    np.testing.assert_array_equal(dataset.labels, labels)
    image = dataset.image(len(dataset) - 1)
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8


def raises(fmt: str, path: Path, fragment: str, call) -> DatasetError:
    """``call`` raises a DatasetError naming the dataset, ``path``, the problem and the format's layout."""
    with pytest.raises(DatasetError) as info:
        call()
    message = str(info.value)
    assert info.value.dataset == "myset" and "'myset'" in message
    assert str(path) in message, message
    assert fragment in message, message
    layout = FORMATS[fmt].expected_layout.strip().splitlines()
    assert layout[0] in message and layout[-1] in message
    return info.value


@pytest.mark.parametrize("fmt", sorted(LIST_FORMAT_WRITERS))
def test_every_list_format_is_registered_deterministic_and_matches_its_reader(tmp_path, fmt):
    written = LIST_FORMAT_WRITERS[fmt](tmp_path)
    spec = FORMATS[fmt]
    split = spec.splits[0] if spec.splits else "test"
    options = LIST_FORMAT_OPTIONS.get(fmt, {})
    assert spec.read.__module__ == "csfbench.data.list_readers"
    first = read(fmt, written.root, split, **options)
    direct = spec.reader(written.root, split, "myset", **options)
    np.testing.assert_array_equal(first.sample_ids, direct.sample_ids)
    np.testing.assert_array_equal(first.labels, direct.labels)
    np.testing.assert_array_equal(first.image(0), direct.image(0))
    spec.check_files(first)  # every file has an image header
    raises(fmt, tmp_path / "nowhere", "directory not found", lambda: read(fmt, tmp_path / "nowhere", split, **options))


@pytest.mark.parametrize(
    ("fmt", "options", "fragment"),
    [
        ("imglist", {}, "missing ['imglist']"),
        ("imglist", {"imglist": "x.txt", "wnids": "w.txt"},
         "takes options ['imglist'] and optional ['images', 'expect']; missing [], unknown ['wnids']"),
        ("imagenet", {"task": "almond"}, "unknown ['task']"),
        ("imagenet_c", {"corruption": "fog"}, "missing ['severity']"),
        ("iconic444", {}, "missing ['task']"),
    ],
)
def test_required_and_unknown_options(tmp_path, fmt, options, fragment):
    raises(fmt, tmp_path, fragment, lambda: read(fmt, tmp_path, "test", **options))


# ---------------------------------------------------------------------------------------------
# imglist


def test_imglist_labelled_list_sorted_by_path(tmp_path):
    written = write_openood(tmp_path)
    dataset = read("imglist", written.root, **written.options["test"])
    check(dataset, written.sample_ids["test"], written.labels["test"])
    assert list(dataset.sample_ids[:2]) == ["cifar10/test/airplane/0001.png", "cifar10/test/airplane/0003.png"]
    assert list(dataset.labels) == [0, 0, 3, 5]
    assert dataset.root == written.root / "images_classic" and dataset.image(0).shape == (32, 32, 3)
    train = read("imglist", written.root, "train", **written.options["test"])  # one split: split ignored
    assert list(train.sample_ids) == list(dataset.sample_ids)


def test_imglist_ood_list_and_absolute_paths(tmp_path):
    written = write_openood(tmp_path)
    options = {"imglist": str(written.root / written.options["tin"]["imglist"]),
               "images": str(written.root / "images_classic")}
    check(read("imglist", written.root, **options), written.sample_ids["tin"], written.labels["tin"])


def test_imglist_without_labels_and_expect(tmp_path):
    written = write_openood(tmp_path)
    options = written.options["imagenetood"]
    list_path = written.root / options["imglist"]
    sha = hashlib.sha256(list_path.read_bytes()).hexdigest()
    expect = {"n_images": 3, "n_classes": 2, "sha256": sha.upper()}
    dataset = read("imglist", written.root, **options, expect=expect)
    check(dataset, ["n01443537/a.JPEG", "n01443537/b.JPEG", "n01484850/c.JPEG"], [-1, -1, -1])
    wrong = {"n_images": 31802, "n_classes": 637}
    raises("imglist", list_path, "count mismatch: n_images 31802 expected, 3 found; n_classes 637 expected, 2 found",
           lambda: read("imglist", written.root, **options, expect=wrong))
    raises("imglist", list_path, f"sha256 {'0' * 64} expected, {sha} found",
           lambda: read("imglist", written.root, **options, expect={"sha256": "0" * 64}))
    raises("imglist", list_path, "'expect' must be a mapping with keys among ['n_images', 'n_classes', 'sha256']",
           lambda: read("imglist", written.root, **options, expect={"n_files": 3}))
    raises("imglist", list_path, "expect.n_images must be a positive integer, got '3'",
           lambda: read("imglist", written.root, **options, expect={"n_images": "3"}))


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("a/b.png 0\ncifar10/test/cat/0004.png 3 extra\n", "line 2: expected 'relative/path' or 'relative/path label'"),
        ("\ncifar10/test/cat/0004.png three\n", "line 2: label 'three' is not an integer"),
        ("cifar10/test/cat/0004.png 3\ncifar10/test/dog/0002.png -2\n", "line 2: label -2 out of range -1.."),
        ("cifar10/test/cat/0004.png 3\ncifar10/test/cat/0004.png 3\n",
         "line 2: 'cifar10/test/cat/0004.png' already listed on line 1"),
        ("/etc/passwd 0\n", "line 1: the image path must be relative, without '..'"),
        ("../secret.png 0\n", "line 1: the image path must be relative, without '..'"),
        ("\n\n", "no image lines"),
    ],
)
def test_imglist_malformed_lines(tmp_path, content, fragment):
    written = write_openood(tmp_path)
    options = written.options["test"]
    list_path = written.root / options["imglist"]
    list_path.write_text(content)
    raises("imglist", list_path, fragment, lambda: read("imglist", written.root, **options))


def test_imglist_missing_list_image_or_images_root(tmp_path):
    written = write_openood(tmp_path)
    options = written.options["test"]
    missing = written.root / "images_classic" / "cifar10/test/airplane/0003.png"
    missing.unlink()
    list_path = written.root / options["imglist"]
    raises("imglist", missing, f"image listed on line 3 of {list_path} not found",
           lambda: read("imglist", written.root, **options))
    raises("imglist", written.root / "elsewhere", "directory not found",
           lambda: read("imglist", written.root, **{**options, "images": "elsewhere"}))
    raises("imglist", written.root / "nolist.txt", "file not found",
           lambda: read("imglist", written.root, imglist="nolist.txt"))
    raises("imglist", written.root, "option 'imglist' must be a path", lambda: read("imglist", written.root, imglist=3))
    list_path.write_bytes(b"\xff\xfe bad")
    raises("imglist", list_path, "cannot read UTF-8 text file", lambda: read("imglist", written.root, **options))


def test_imglist_non_image_file_fails_the_header_check(tmp_path):
    written = write_openood(tmp_path)
    options = written.options["test"]
    bad = written.root / "images_classic" / "cifar10/test/cat/0004.png"
    bad.write_text("not a png")
    dataset = read("imglist", written.root, **options)
    raises("imglist", bad, "not a readable image", lambda: FORMATS["imglist"].check_files(dataset))


# ---------------------------------------------------------------------------------------------
# imagenet


@pytest.mark.parametrize("val", ["folders", "flat"])
def test_imagenet_train_and_val_labels_agree(tmp_path, val):
    written = write_imagenet(tmp_path, val=val)
    train = read("imagenet", written.root, "train")
    check(train, written.sample_ids["train"], written.labels["train"])
    assert train.sample_ids[2] == "train/n01443537/n01443537_1.JPEG" and train.labels[2] == 1
    test = read("imagenet", written.root, "test")
    check(test, written.sample_ids["test"], written.labels["test"])
    for options in ({"wnids": "LOC_synset_mapping.txt"}, {"wnids": str(written.root / "LOC_synset_mapping.txt")}):
        np.testing.assert_array_equal(read("imagenet", written.root, "test", **options).labels, written.labels["test"])


def test_imagenet_flat_val_labels_from_the_solution_file(tmp_path):
    written = write_imagenet(tmp_path, val="flat")
    test = read("imagenet", written.root)
    assert list(test.sample_ids) == [f"val/ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, 6)]
    assert list(test.labels) == [4, 0, 2, 1, 3]
    moved = tmp_path / "solution.csv"
    shutil.move(written.root / "LOC_val_solution.csv", moved)
    assert list(read("imagenet", written.root, val_solution=str(moved)).labels) == [4, 0, 2, 1, 3]


def test_imagenet_wnids_file_order_sets_the_labels(tmp_path):
    written = write_imagenet(tmp_path)
    wnids = write_wnids(tmp_path / "reversed.txt", IMAGENET_WNIDS[::-1])
    train = read("imagenet", written.root, "train", wnids=str(wnids))
    np.testing.assert_array_equal(train.labels, 4 - written.labels["train"])


def test_imagenet_without_train_takes_the_val_class_folders(tmp_path):
    written = write_imagenet(tmp_path)
    shutil.rmtree(written.root / "train")
    check(read("imagenet", written.root), written.sample_ids["test"], written.labels["test"])
    raises("imagenet", written.root / "train", "directory not found", lambda: read("imagenet", written.root, "train"))


def test_imagenet_flat_val_needs_a_class_list(tmp_path):
    written = write_imagenet(tmp_path, val="flat")
    shutil.rmtree(written.root / "train")
    raises("imagenet", written.root / "train", "no class list: neither train/ nor val/ holds class folders",
           lambda: read("imagenet", written.root))
    test = read("imagenet", written.root, wnids="LOC_synset_mapping.txt")
    assert list(test.labels) == [4, 0, 2, 1, 3]


def _edit_csv(path: Path, line: int, text: str | None) -> None:
    lines = path.read_text().splitlines()
    if text is None:
        del lines[line - 1]
    else:
        lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("line", "text", "fragment"),
    [
        (1, "ImageId,Prediction", "line 1: expected the header 'ImageId,PredictionString', got 'ImageId,Prediction'"),
        (3, "ILSVRC2012_val_00000004,n09999999 1 2 3 4",
         "line 3: unknown wnid 'n09999999': not among the 5 classes of"),
        (2, "ILSVRC2012_val_00000005",
         "line 2: expected 'ImageId,wnid x0 y0 x1 y1 ...', got 'ILSVRC2012_val_00000005'"),
        (4, "ILSVRC2012_val_00000005,n01494475 1 2 3 4", "line 4: ImageId 'ILSVRC2012_val_00000005' already on line 2"),
    ],
)
def test_imagenet_malformed_solution_file(tmp_path, line, text, fragment):
    written = write_imagenet(tmp_path, val="flat")
    path = written.root / "LOC_val_solution.csv"
    _edit_csv(path, line, text)
    raises("imagenet", path, fragment, lambda: read("imagenet", written.root))


def test_imagenet_solution_file_and_val_images_disagree(tmp_path):
    written = write_imagenet(tmp_path, val="flat")
    path = written.root / "LOC_val_solution.csv"
    image = written.root / "val" / "ILSVRC2012_val_00000003.JPEG"
    image.unlink()
    raises("imagenet", image, f"image listed on line 4 of {path} not found", lambda: read("imagenet", written.root))
    written = write_imagenet(tmp_path / "again", val="flat")
    _edit_csv(written.root / "LOC_val_solution.csv", 6, None)  # the row of val image 1
    raises("imagenet", written.root / "val",
           "count mismatch: 5 images in val/, 4 listed in", lambda: read("imagenet", written.root))
    (written.root / "LOC_val_solution.csv").unlink()
    raises("imagenet", written.root / "LOC_val_solution.csv", "file not found", lambda: read("imagenet", written.root))


def test_imagenet_malformed_class_folders(tmp_path):
    written = write_imagenet(tmp_path)
    stray = written.root / "val" / "n09999999"
    stray.mkdir()
    raises("imagenet", stray, "unknown wnid 'n09999999': not among the 5 classes of the class folders of",
           lambda: read("imagenet", written.root))
    stray.rmdir()
    empty = written.root / "train" / IMAGENET_WNIDS[2]
    for file in empty.iterdir():
        file.unlink()
    raises("imagenet", empty, f"no images in class folder '{IMAGENET_WNIDS[2]}'",
           lambda: read("imagenet", written.root, "train"))
    (written.root / "train" / "tench").mkdir()
    raises("imagenet", written.root / "train" / "tench", "class folder 'tench' is not named by a WordNet id",
           lambda: read("imagenet", written.root))
    wnids = tmp_path / "bad_wnids.txt"
    wnids.write_text("n01440764\ntench\n")
    raises("imagenet", wnids, "line 2: expected a WordNet id (n and 8 digits)",
           lambda: read("imagenet", written.root, wnids=str(wnids)))
    wnids.write_text("n01440764\n\nn01440764\n")
    raises("imagenet", wnids, "line 3: wnid 'n01440764' already on line 1",
           lambda: read("imagenet", written.root, wnids=str(wnids)))


def test_imagenet_image_beside_the_class_folders(tmp_path):
    written = write_imagenet(tmp_path)
    loose = written.root / "val" / "ILSVRC2012_val_00000099.JPEG"
    shutil.copy(written.root / written.sample_ids["test"][0], loose)
    raises("imagenet", loose, "image outside the class folders", lambda: read("imagenet", written.root))


def test_imagenet_train_subset_is_seeded_and_recorded(tmp_path):
    written = write_imagenet(tmp_path, n_train=4)
    train = read("imagenet", written.root, "train")
    subset = imagenet_train_subset(train, per_class=2, seed=3)
    assert len(subset) == 10 and subset.name == "myset-subset-per_class2-seed3"
    assert np.bincount(subset.labels).tolist() == [2] * 5
    assert set(subset.sample_ids) <= set(train.sample_ids)
    assert list(subset.sample_ids) == sorted(subset.sample_ids)  # parent order kept
    again = imagenet_train_subset(train, per_class=2, seed=3)
    np.testing.assert_array_equal(again.sample_ids, subset.sample_ids)
    others = [imagenet_train_subset(train, per_class=2, seed=s).sample_ids for s in range(4, 10)]
    assert any(list(o) != list(subset.sample_ids) for o in others)
    drawn = imagenet_train_subset(train, n=7, seed=0)
    assert len(drawn) == 7 and len(set(drawn.sample_ids)) == 7 and drawn.name.endswith("-n7-seed0")
    np.testing.assert_array_equal(drawn.image(0), train.image(list(train.sample_ids).index(drawn.sample_ids[0])))
    assert len(imagenet_train_subset(train, per_class=9, seed=0)) == 20  # a class smaller than per_class: all of it
    # recorded as an image list, read back through the imglist format
    record = write_imglist(subset, tmp_path / "fit_subset.txt")
    back = read("imglist", written.root, imglist=str(record))
    np.testing.assert_array_equal(back.sample_ids, subset.sample_ids)
    np.testing.assert_array_equal(back.labels, subset.labels)
    for bad in ({}, {"n": 3, "per_class": 1}, {"n": 0}, {"n": 21}):
        with pytest.raises(ValueError):
            imagenet_train_subset(train, seed=0, **bad)


# ---------------------------------------------------------------------------------------------
# wnid_folders


def test_wnid_folders_labelled_through_the_wnid_list(tmp_path):
    written = write_wnid_folders(tmp_path)
    dataset = read("wnid_folders", written.root, **written.options["test"])
    check(dataset, written.sample_ids["test"], written.labels["test"])
    assert "n01494475/deeper/origami_4.jpg" in dataset.sample_ids
    assert list(dataset.labels) == [1, 1, 3, 4, 4]


def test_wnid_folders_unlabelled_and_expect(tmp_path):
    written = write_wnid_folders(tmp_path)
    dataset = read("wnid_folders", written.root, expect={"n_images": 5, "n_classes": 3})
    check(dataset, written.sample_ids["test"], [-1] * 5)
    raises("wnid_folders", written.root,
           "count mismatch: n_images 31802 expected, 5 found; n_classes 637 expected, 3 found",
           lambda: read("wnid_folders", written.root, expect={"n_images": 31802, "n_classes": 637}))
    raises("wnid_folders", written.root, "count mismatch: n_classes 637 expected, 3 found",
           lambda: read("wnid_folders", written.root, expect={"n_classes": 637}))
    raises("wnid_folders", written.root, "keys among ['n_images', 'n_classes']",
           lambda: read("wnid_folders", written.root, expect={"sha256": "00"}))


def test_wnid_folders_one_rendition_is_a_set_with_its_group_key(tmp_path):
    written = write_wnid_folders(tmp_path)
    everything = read("wnid_folders", written.root, **written.options["test"])
    prefixes = {Path(i).name.split("_", 1)[0] for i in everything.sample_ids}
    assert len(prefixes) > 1  # the fixture holds several renditions
    for rendition in prefixes:
        part = read("wnid_folders", written.root, **written.options["test"], rendition=rendition)
        expected = [i for i in everything.sample_ids if Path(i).name.startswith(f"{rendition}_")]
        assert list(part.sample_ids) == expected
        assert list(part.labels) == [everything.labels[list(everything.sample_ids).index(i)] for i in expected]
    raises("wnid_folders", written.root, f"no image of rendition 'sculpture' (file names 'sculpture_*'); "
                                         f"the file-name prefixes found: {sorted(prefixes)}",
           lambda: read("wnid_folders", written.root, rendition="sculpture"))
    raises("wnid_folders", written.root, "option rendition must be a file-name prefix",
           lambda: read("wnid_folders", written.root, rendition="a/b"))
    spec = DatasetSpec("imagenet-r-art", "wnid_folders", str(written.root), options={"rendition": "art"})
    assert EvalSet("imagenet-r-art", "covariate", "covariate", dataset=spec).groups == {
        "corruption": None, "severity": None, "rendition": "art"}


def test_wnid_folders_any_folder_names_without_a_wnid_list(tmp_path):
    written = write_wnid_folders(tmp_path)
    (written.root / "n01443537").rename(written.root / "class with spaces")
    dataset = read("wnid_folders", written.root)
    assert dataset.sample_ids[0] == "class with spaces/art_0.jpg" and (dataset.labels == -1).all()


def test_wnid_folders_malformed(tmp_path):
    written = write_wnid_folders(tmp_path)
    options = written.options["test"]
    unknown = written.root / "n09999999"
    unknown.mkdir()
    raises("wnid_folders", unknown, f"unknown wnid 'n09999999': not among the 5 classes of {options['wnids']}",
           lambda: read("wnid_folders", written.root, **options))
    raises("wnid_folders", unknown, "no images in class folder 'n09999999'", lambda: read("wnid_folders", written.root))
    unknown.rmdir()
    loose = written.root / "stray.jpg"
    shutil.copy(written.root / written.sample_ids["test"][0], loose)
    raises("wnid_folders", loose, "image outside the class folders", lambda: read("wnid_folders", written.root))
    raises("wnid_folders", written.root / "missing.txt", "file not found",
           lambda: read("wnid_folders", written.root, wnids="missing.txt"))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("")
    raises("wnid_folders", empty, "no class folders", lambda: read("wnid_folders", empty))


# ---------------------------------------------------------------------------------------------
# imagenet_c


@pytest.mark.parametrize(("corruption", "severity"), [("gaussian_noise", 1), ("gaussian_noise", 5), ("fog", 3)])
def test_imagenet_c_one_corruption_and_severity(tmp_path, corruption, severity):
    written = write_imagenet_c(tmp_path)
    key = f"{corruption}/{severity}"
    sorted_folders = read("imagenet_c", written.root, corruption=corruption, severity=severity)
    by_rank = {w: i for i, w in enumerate(sorted({i.split("/")[2] for i in written.sample_ids[key]}))}
    check(sorted_folders, written.sample_ids[key], [by_rank[i.split("/")[2]] for i in written.sample_ids[key]])
    assert set(sorted_folders.labels) == {0, 1, 2, 3}
    wnids = write_wnids(tmp_path / "wnids.txt")
    through_list = read("imagenet_c", written.root, corruption=corruption, severity=severity, wnids=str(wnids))
    check(through_list, written.sample_ids[key], written.labels[key])
    assert set(through_list.labels) == {0, 1, 3, 4}
    assert all(s.startswith(f"{key}/") for s in through_list.sample_ids)


@pytest.mark.parametrize(
    ("options", "path", "fragment"),
    [
        ({"corruption": "snow", "severity": 1}, "snow",
         "unknown corruption 'snow'; available: ['fog', 'gaussian_noise']"),
        ({"corruption": "fog", "severity": 6}, "fog", "severity must be an integer 1..5, got 6"),
        ({"corruption": "fog", "severity": "3"}, "fog", "severity must be an integer 1..5, got '3'"),
        ({"corruption": "gaussian_noise", "severity": 2}, "gaussian_noise/2",
         "severity folder not found; available: ['1', '5']"),
    ],
)
def test_imagenet_c_unknown_corruption_or_severity(tmp_path, options, path, fragment):
    written = write_imagenet_c(tmp_path)
    raises("imagenet_c", written.root / path, fragment, lambda: read("imagenet_c", written.root, **options))
    raises("imagenet_c", written.root, "unknown split 'train'",
           lambda: read("imagenet_c", written.root, "train", **options))


def test_imagenet_c_class_folders_must_be_wnids(tmp_path):
    written = write_imagenet_c(tmp_path)
    folder = written.root / "fog" / "3" / "tench"
    folder.mkdir()
    raises("imagenet_c", folder, "class folder 'tench' is not named by a WordNet id",
           lambda: read("imagenet_c", written.root, corruption="fog", severity=3))


# ---------------------------------------------------------------------------------------------
# iconic444


@pytest.mark.parametrize("manifest", ["csv", "parquet"])
def test_iconic444_task_splits_reindexed(tmp_path, manifest):
    written = write_iconic444(tmp_path, manifest=manifest)
    train = read("iconic444", written.root, "train", task="almond")
    check(train, written.sample_ids["train"], written.labels["train"])
    assert sorted(set(train.labels)) == list(range(7)) and len(train) == 14
    assert train.sample_ids[0] == "images/003/0.png" and train.labels[0] == 0
    assert train.sample_ids[-1] == "images/040/1.png" and train.labels[-1] == 6
    test = read("iconic444", written.root, "test", task="almond")
    check(test, written.sample_ids["test"], written.labels["test"])
    assert all(s.endswith("/2.png") for s in test.sample_ids[:7])  # val.txt first (val_size = 7) ...
    assert all(s.endswith("/3.png") for s in test.sample_ids[7:])  # ... then test.txt
    assert sorted(ICONIC_ALMOND)[int(test.labels[8])] == int(test.sample_ids[8].split("/")[1])


@pytest.mark.parametrize("ood", ["near", "far", "ood_val", "extreme_textures"])
def test_iconic444_ood_lists(tmp_path, ood):
    written = write_iconic444(tmp_path)
    dataset = read("iconic444", written.root, task="almond", ood=ood)
    check(dataset, written.sample_ids[ood], written.labels[ood])
    raises("iconic444", written.root, f"OOD set '{ood}' has no train split",
           lambda: read("iconic444", written.root, "train", task="almond", ood=ood))


def _rewrite_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


def test_iconic444_malformed_lists(tmp_path):
    written = write_iconic444(tmp_path)
    task = written.root / "almond"
    call = lambda: read("iconic444", written.root, task="almond")  # noqa: E731
    raises("iconic444", written.root,
           "unknown task 'rice'; ICONIC-444 tasks: ['almond', 'wheat', 'kernels', 'food_grade']",
           lambda: read("iconic444", written.root, task="rice"))
    raises("iconic444", written.root / "far2.txt", "file not found",
           lambda: read("iconic444", written.root, task="almond", ood="far2"))
    raises("iconic444", written.root, "option 'ood' must be 'near' or the stem",
           lambda: read("iconic444", written.root, task="almond", ood="../far"))
    _rewrite_line(task / "val.txt", 2, "images/022/2.png 23")
    raises("iconic444", task / "val.txt", "line 2: class_idx 23 disagrees with the manifest's 22", call)
    _rewrite_line(task / "val.txt", 2, "images/005/0.png 5")
    raises("iconic444", task / "val.txt", "line 2: class_idx 5 is not an ID class of task 'almond'", call)
    _rewrite_line(task / "val.txt", 2, "images/099/0.png 22")
    raises("iconic444", task / "val.txt", "line 2: 'images/099/0.png' is not in", call)
    _rewrite_line(task / "val.txt", 2, "images/022/2.png")
    raises("iconic444", task / "val.txt", "line 2: expected 'relative/path label', got 'images/022/2.png'", call)
    _rewrite_line(task / "val.txt", 2, "images/022/2.png 444")
    raises("iconic444", task / "val.txt", "line 2: label 444 out of range -1..443", call)
    _rewrite_line(task / "val.txt", 2, "images/022/0.png 22")
    raises("iconic444", task / "val.txt", "line 2: 'images/022/0.png' is also listed in", call)
    _rewrite_line(task / "val.txt", 2, "images/022/2.png 22")
    (written.root / "images/022/3.png").unlink()
    missing = written.root / "images/022/3.png"
    raises("iconic444", missing, f"image listed on line 2 of {task / 'test.txt'} not found", call)


def test_iconic444_task_class_count_and_ood_overlap(tmp_path):
    written = write_iconic444(tmp_path)
    task = written.root / "almond"
    train = task / "train.txt"
    train.write_text("".join(line + "\n" for line in train.read_text().splitlines() if " 40" not in line))
    raises("iconic444", train, "task 'almond' has 7 ID classes; the list holds 6 distinct class_idx",
           lambda: read("iconic444", written.root, "train", task="almond"))
    written = write_iconic444(tmp_path / "again")
    near = written.root / "almond" / "near.txt"
    _rewrite_line(near, 1, "images/010/3.png -1")
    raises("iconic444", near, "line 1: class_idx 10 of OOD set 'near' is an ID class of task 'almond'",
           lambda: read("iconic444", written.root, task="almond", ood="near"))


def test_iconic444_malformed_manifest(tmp_path):
    written = write_iconic444(tmp_path)
    manifest = written.root / "manifest.csv"
    call = lambda: read("iconic444", written.root, "train", task="almond")  # noqa: E731
    table = pd.read_csv(manifest)
    table.drop(columns=["is_food_grade", "width"]).to_csv(manifest, index=False)
    raises("iconic444", manifest, "missing columns ['is_food_grade', 'width']", call)
    table.assign(class_idx=table["class_idx"].where(table.index != 5, 500)).to_csv(manifest, index=False)
    raises("iconic444", manifest, "data row 6 ('images/005/1.png'): class_idx 500 out of range 0..443", call)
    pd.concat([table, table.iloc[[3]]]).to_csv(manifest, index=False)
    raises("iconic444", manifest, "rel_path 'images/003/3.png' appears twice", call)
    table.to_parquet(written.root / "manifest.parquet")
    raises("iconic444", manifest, "both manifest.csv and manifest.parquet found", call)
    manifest.unlink()
    (written.root / "manifest.parquet").unlink()
    raises("iconic444", manifest, "file not found (nor manifest.parquet)", call)


def test_the_formats_command_prints_every_layout(capsys):
    from csfbench.cli import main
    from csfbench.data.formats import FORMATS

    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    for name, fmt in FORMATS.items():
        assert f"{name}  [splits:" in out and fmt.expected_layout.strip().splitlines()[0] in out
    assert main(["formats", "imglist"]) == 0 and "imglist  [" in capsys.readouterr().out
    assert main(["formats", "cifar11"]) == 2 and "unknown format(s) ['cifar11']" in capsys.readouterr().err
