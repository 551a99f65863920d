"""Readers of the real dataset formats, on tiny fixtures written in exactly those formats."""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from csfbench.data.formats import FORMATS, open_dataset
from csfbench.data.readers import SUPERCIFAR_HELD_OUT
from csfbench.errors import DatasetError

from tests.helpers.format_fixtures import (
    CIFAR100_FINE,
    COARSE_OF_FINE,
    LIST_FORMAT_OPTIONS,
    LIST_FORMAT_WRITERS,
    TINY_WNIDS,
    write_cifar10,
    write_cifar100,
    write_cifar_c,
    write_idx,
    write_image_folder,
    write_npy,
    write_svhn,
    write_tinyimagenet,
)

WRITERS = {
    "cifar10": write_cifar10,
    "cifar100": write_cifar100,
    "supercifar100": write_cifar100,
    "tinyimagenet": write_tinyimagenet,
    "svhn": write_svhn,
    "idx": write_idx,  # tested in test_readers_idx.py
    "image_folder": write_image_folder,
    "cifar_c": write_cifar_c,
    "npy": write_npy,
    **LIST_FORMAT_WRITERS,  # the formats of csfbench.data.list_readers (tested in test_readers_imagenet.py)
}
OPTIONS = {"cifar_c": {"corruption": "gaussian_noise", "severity": 1}, **LIST_FORMAT_OPTIONS}


def all_images(dataset) -> np.ndarray:
    return np.stack([dataset.image(i) for i in range(len(dataset))])


def raises_dataset_error(fmt: str, path: Path, fragment: str, call, name: str = "myset") -> DatasetError:
    """Run ``call`` and check the DatasetError names the dataset, the path, the problem and the layout."""
    with pytest.raises(DatasetError) as info:
        call()
    message = str(info.value)
    assert info.value.dataset == name and f"'{name}'" in message
    assert str(path) in message
    assert fragment in message
    layout_lines = FORMATS[fmt].expected_layout.strip().splitlines()
    assert layout_lines[0] in message and layout_lines[-1] in message
    return info.value


def read(fmt: str, root: Path, split: str = "test", **options):
    return open_dataset(fmt, root, split, "myset", **{**OPTIONS.get(fmt, {}), **options})


# ---------------------------------------------------------------------------------------------
# Content, labels, ids and order


def test_cifar10_train_and_test_round_trip(tmp_path):
    written = write_cifar10(tmp_path)
    train = read("cifar10", written.root, "train")
    files = [f"data_batch_{i}" for i in range(1, 6)]
    assert len(train) == 20
    np.testing.assert_array_equal(all_images(train), np.concatenate([written.images[f] for f in files]))
    np.testing.assert_array_equal(train.labels, np.concatenate([written.labels[f] for f in files]))
    assert list(train.sample_ids[3:6]) == ["data_batch_1:3", "data_batch_2:0", "data_batch_2:1"]
    test = read("cifar10", written.root, "test")
    assert test.name == "myset" and len(test) == 4
    assert test.image(2).shape == (32, 32, 3) and test.image(2).dtype == np.uint8
    np.testing.assert_array_equal(all_images(test), written.images["test_batch"])
    np.testing.assert_array_equal(test.labels, written.labels["test_batch"])
    assert list(test.sample_ids) == [f"test_batch:{i}" for i in range(4)]


def test_cifar100_uses_fine_labels(tmp_path):
    written = write_cifar100(tmp_path)
    for split, n in (("train", 200), ("test", 100)):
        dataset = read("cifar100", written.root, split)
        assert len(dataset) == n
        np.testing.assert_array_equal(dataset.labels, written.labels[split])
        np.testing.assert_array_equal(all_images(dataset), written.images[split])
        assert dataset.sample_ids[7] == f"{split}:7"


def _fine_names(written, sample_ids) -> list[str]:
    """The fine class name of every ``"{file}:{index}"`` id."""
    return [CIFAR100_FINE[written.labels[f][int(i)]] for f, i in (s.split(":") for s in sample_ids)]


def test_supercifar100_protocol(tmp_path):
    written = write_cifar100(tmp_path)
    train = read("supercifar100", written.root, "train")
    test = read("supercifar100", written.root, "test")
    train_fine, test_fine = _fine_names(written, train.sample_ids), _fine_names(written, test.sample_ids)
    # 100 fine classes - 5 of vehicles_2 - 19 held out, twice each in the train file
    assert len(train) == 2 * 76 and set(train.labels) == set(range(19))
    assert not set(train_fine) & set(SUPERCIFAR_HELD_OUT)
    assert not {"tractor", "rocket", "lawn_mower", "streetcar", "tank"} & set(train_fine + test_fine)
    # held-out classes only: 2 from the train file first, then 1 from the test file
    assert set(test_fine) == set(SUPERCIFAR_HELD_OUT) and len(test) == 3 * 19
    assert all(s.startswith("train:") for s in test.sample_ids[:38])
    assert all(s.startswith("test:") for s in test.sample_ids[38:])
    assert sorted(test.labels) == sorted(np.repeat(np.arange(19), 3))
    for dataset, fine in ((train, train_fine), (test, test_fine)):
        np.testing.assert_array_equal(dataset.labels, [COARSE_OF_FINE[f] for f in fine])  # vehicles_2 was last
    file, index = test.sample_ids[40].split(":")
    np.testing.assert_array_equal(test.image(40), written.images[file][int(index)])


def test_tinyimagenet_train_sorted_with_wnid_file_order_labels(tmp_path):
    written = write_tinyimagenet(tmp_path)
    train = read("tinyimagenet", written.root, "train")
    assert len(train) == 6
    assert list(train.sample_ids) == sorted(train.sample_ids)
    assert train.sample_ids[0] == "train/n01443537/images/n01443537_0.JPEG"
    for sample_id, label in zip(train.sample_ids, train.labels):
        assert TINY_WNIDS[label] == sample_id.split("/")[1]
    image = train.image(3)
    assert image.shape == (64, 64, 3) and image.dtype == np.uint8


def test_tinyimagenet_test_is_the_val_split(tmp_path):
    written = write_tinyimagenet(tmp_path)
    test = read("tinyimagenet", written.root, "test")
    assert len(test) == 12
    assert list(test.sample_ids[:4]) == [f"val/images/val_{i}.JPEG" for i in (0, 1, 10, 11)]  # sorted by path
    for sample_id, label in zip(test.sample_ids, test.labels):
        assert label == written.labels["test"][int(sample_id.split("_")[1].split(".")[0])]
    assert test.image(11).shape == (64, 64, 3)


def test_svhn_label_ten_is_digit_zero(tmp_path):
    written = write_svhn(tmp_path)
    for split in ("train", "test"):
        dataset = read("svhn", written.root, split)
        np.testing.assert_array_equal(dataset.labels, written.labels[split])
        assert dataset.labels[0] == 0 and set(dataset.labels) <= set(range(10))
        np.testing.assert_array_equal(all_images(dataset), written.images[split])
        assert dataset.sample_ids[3] == f"{split}_32x32.mat:3"


def test_image_folder_recursive_sorted_unlabelled(tmp_path):
    written = write_image_folder(tmp_path)
    dataset = read("image_folder", written.root, "test")
    expected = ["a.png", "a_dir/x.jpeg", "b/c.bmp", "b/nested/deep/z.PNG", "b/nested/y.Png", "b/photo.JPG"]
    assert list(dataset.sample_ids) == expected
    assert list(dataset.labels) == [-1] * 6
    for relative, image in written.images.items():
        np.testing.assert_array_equal(dataset.image(expected.index(relative)), image)
    assert dataset.image(5).shape == (20, 20, 3) and dataset.image(5).dtype == np.uint8
    assert list(read("image_folder", written.root, "train").sample_ids) == expected  # split ignored


@pytest.mark.parametrize("severity", [1, 3, 5])
def test_cifar_c_severity_slices(tmp_path, severity):
    written = write_cifar_c(tmp_path)
    dataset = read("cifar_c", written.root, severity=severity)
    rows = slice(4 * (severity - 1), 4 * severity)
    assert len(dataset) == 4 and isinstance(dataset.images, np.memmap)
    np.testing.assert_array_equal(all_images(dataset), written.images["gaussian_noise"][rows])
    np.testing.assert_array_equal(dataset.labels, written.labels["gaussian_noise"][rows])
    assert list(dataset.sample_ids) == [f"gaussian_noise.npy:{r}" for r in range(rows.start, rows.stop)]


def test_npy_round_trip(tmp_path):
    written = write_npy(tmp_path)
    for split in ("train", "test"):
        dataset = read("npy", written.root, split)
        assert isinstance(dataset.images, np.memmap)
        np.testing.assert_array_equal(all_images(dataset), written.images[split])
        np.testing.assert_array_equal(dataset.labels, written.labels[split])
        assert dataset.labels[0] == -1 and dataset.labels.dtype == np.int64
        assert list(dataset.sample_ids) == [str(i) for i in range(5)]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_is_deterministic_and_matches_its_reader(tmp_path, fmt):
    written = WRITERS[fmt](tmp_path)
    split = FORMATS[fmt].splits[0] if FORMATS[fmt].splits else "test"
    first = read(fmt, written.root, split)
    direct = FORMATS[fmt].reader(written.root, split, "myset", **OPTIONS.get(fmt, {}))
    np.testing.assert_array_equal(first.sample_ids, direct.sample_ids)
    np.testing.assert_array_equal(first.labels, direct.labels)
    np.testing.assert_array_equal(first.image(len(first) - 1), direct.image(len(direct) - 1))
    assert FORMATS[fmt].labelled or (first.labels == -1).all()


# ---------------------------------------------------------------------------------------------
# Failures: DatasetError naming the dataset, the path, the problem and the expected layout


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_missing_directory(tmp_path, fmt):
    root = tmp_path / "nowhere"
    raises_dataset_error(fmt, root, "directory not found", lambda: read(fmt, root))


def test_unknown_format_lists_known_ones(tmp_path):
    with pytest.raises(DatasetError) as info:
        open_dataset("cifar11", tmp_path, "test", "myset")
    message = str(info.value)
    assert "'myset'" in message and str(tmp_path) in message and "unknown format 'cifar11'" in message
    assert all(fmt in message for fmt in FORMATS)


@pytest.mark.parametrize(
    ("fmt", "split", "options", "fragment"),
    [
        ("cifar10", "val", {}, "unknown split 'val'"),
        ("cifar_c", "train", {}, "unknown split 'train'"),
        ("cifar10", "test", {"corruption": "fog"}, "unknown ['corruption']"),
        ("cifar_c", "test", {"severity": None}, "missing ['severity']"),
        ("cifar_c", "test", {"severity": 6}, "severity must be an integer 1..5, got 6"),
        ("cifar_c", "test", {"corruption": "fog"}, "unknown corruption 'fog'; available: ['gaussian_noise']"),
    ],
)
def test_unknown_split_or_option(tmp_path, fmt, split, options, fragment):
    written = WRITERS[fmt](tmp_path)
    merged = {**OPTIONS.get(fmt, {}), **options}
    merged = {key: value for key, value in merged.items() if value is not None}
    call = lambda: open_dataset(fmt, written.root, split, "myset", **merged)  # noqa: E731
    raises_dataset_error(fmt, written.root, fragment, call)


def test_cifar10_missing_batch_detected_before_any_unpickling(tmp_path):
    written = write_cifar10(tmp_path)
    (written.root / "data_batch_1").write_bytes(b"garbage")
    (written.root / "data_batch_5").unlink()
    path = written.root / "data_batch_5"
    raises_dataset_error("cifar10", path, "file not found", lambda: read("cifar10", written.root, "train"))


def _rewrite_pickle(path: Path, edit) -> None:
    with path.open("rb") as f:
        content = pickle.load(f, encoding="bytes")
    with path.open("wb") as f:
        pickle.dump(edit(content), f, protocol=2)


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda c: {**c, b"data": c[b"data"][:, :3000]}, "b'data' must be N x 3072 uint8, got shape (4, 3000)"),
        (lambda c: {k: v for k, v in c.items() if k != b"labels"}, "missing keys [b'labels']"),
        (lambda c: {**c, b"labels": c[b"labels"][:3]}, "expected 4 integer labels, got shape (3,)"),
        (lambda c: {**c, b"labels": [10] * 4}, "labels must lie in 0..9, found 10..10"),
        (lambda c: [c], "expected a pickled dict, got list"),
    ],
)
def test_cifar10_malformed_batch(tmp_path, edit, fragment):
    written = write_cifar10(tmp_path)
    path = written.root / "test_batch"
    _rewrite_pickle(path, edit)
    raises_dataset_error("cifar10", path, fragment, lambda: read("cifar10", written.root))


def test_cifar_batches_pickled_by_python_2_numpy_load(tmp_path):
    """The official batches were written by Python 2's cPickle (protocol 2): numpy.core.multiarray
    globals and str (bytes) payloads; a hand-written protocol-2 stream in that form loads."""
    written = write_cifar10(tmp_path)
    path = written.root / "test_batch"
    content = pickle.loads(path.read_bytes(), encoding="bytes")
    stream = pickle.dumps(content, protocol=2).replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert b"numpy.core.multiarray\n_reconstruct" in stream
    path.write_bytes(stream)
    test = read("cifar10", written.root)
    np.testing.assert_array_equal(all_images(test), written.images["test_batch"])
    np.testing.assert_array_equal(test.labels, written.labels["test_batch"])


def test_cifar100_truncated_pickle(tmp_path):
    written = write_cifar100(tmp_path)
    path = written.root / "test"
    path.write_bytes(path.read_bytes()[:1000])
    raises_dataset_error("cifar100", path, "cannot read python pickle", lambda: read("cifar100", written.root))


def test_supercifar100_missing_meta_and_missing_class_name(tmp_path):
    written = write_cifar100(tmp_path)
    meta = written.root / "meta"
    call = lambda: read("supercifar100", written.root)  # noqa: E731
    rename_seal = lambda names: [b"sealion" if n == b"seal" else n for n in names]  # noqa: E731
    _rewrite_pickle(meta, lambda c: {**c, b"fine_label_names": rename_seal(c[b"fine_label_names"])})
    raises_dataset_error("supercifar100", meta, "fine class 'seal' not found", call)
    _rewrite_pickle(meta, lambda c: {**c, b"coarse_label_names": [n.decode() for n in c[b"coarse_label_names"]]})
    raises_dataset_error("supercifar100", meta, "b'coarse_label_names' must be a list of bytes names", call)
    meta.unlink()
    raises_dataset_error("supercifar100", meta, "file not found", call)


def test_tinyimagenet_malformed(tmp_path):
    written = write_tinyimagenet(tmp_path)
    annotations = written.root / "val" / "val_annotations.txt"
    lines = annotations.read_text().splitlines()
    annotations.write_text("\n".join(lines[:3] + ["val_3.JPEG\tn99999999\t0\t0\t1\t1"]))
    raises_dataset_error("tinyimagenet", annotations, "line 4: expected", lambda: read("tinyimagenet", written.root))
    (written.root / "val" / "images" / "val_1.JPEG").unlink()
    missing = written.root / "val" / "images" / "val_1.JPEG"
    raises_dataset_error("tinyimagenet", missing, "listed on line 2", lambda: read("tinyimagenet", written.root))
    annotations.unlink()
    raises_dataset_error("tinyimagenet", annotations, "file not found", lambda: read("tinyimagenet", written.root))
    class_dir = written.root / "train" / TINY_WNIDS[1] / "images"
    for image in class_dir.iterdir():
        image.unlink()
    call = lambda: read("tinyimagenet", written.root, "train")  # noqa: E731
    raises_dataset_error("tinyimagenet", class_dir, f"no images for class '{TINY_WNIDS[1]}'", call)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ({"X": np.zeros((3, 32, 32, 3), np.uint8), "y": np.ones((3, 1))}, "got X (3, 32, 32, 3) uint8"),
        ({"X": np.zeros((32, 32, 3, 3), np.float32), "y": np.ones((3, 1))}, "single"),
        ({"X": np.zeros((32, 32, 3, 3), np.uint8)}, "y ()"),
        ({"X": np.zeros((32, 32, 3, 3), np.uint8), "y": np.ones((2, 1))}, "y (2, 1)"),
        ({"X": np.zeros((32, 32, 3, 3), np.uint8), "y": np.full((3, 1), 11.0)}, "labels must lie in 1..10"),
    ],
)
def test_svhn_malformed(tmp_path, content, fragment):
    written = write_svhn(tmp_path)
    path = written.root / "test_32x32.mat"
    scipy.io.savemat(path, content)
    raises_dataset_error("svhn", path, fragment, lambda: read("svhn", written.root))


def test_svhn_missing_and_truncated_file(tmp_path):
    written = write_svhn(tmp_path)
    path = written.root / "test_32x32.mat"
    path.write_bytes(path.read_bytes()[:100])
    raises_dataset_error("svhn", path, "cannot read MATLAB file", lambda: read("svhn", written.root))
    path.unlink()
    raises_dataset_error("svhn", path, "file not found", lambda: read("svhn", written.root))


def test_image_folder_without_images(tmp_path):
    root = tmp_path / "empty"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "notes.txt").write_text("no images here")
    raises_dataset_error("image_folder", root, "no image files", lambda: read("image_folder", root))


def test_cifar_c_malformed(tmp_path):
    written = write_cifar_c(tmp_path)
    images, labels = written.root / "gaussian_noise.npy", written.root / "labels.npy"
    np.save(labels, np.zeros(19, np.uint8))
    raises_dataset_error("cifar_c", labels, "expected 20 labels", lambda: read("cifar_c", written.root))
    np.save(images, np.zeros((19, 32, 32, 3), np.uint8))
    raises_dataset_error("cifar_c", images, "19 rows is not 5 severities", lambda: read("cifar_c", written.root))
    np.save(images, np.zeros((20, 32, 32), np.uint8))
    raises_dataset_error("cifar_c", images, "expected N x 32x32 x 3 uint8", lambda: read("cifar_c", written.root))
    labels.unlink()
    np.save(images, np.zeros((20, 32, 32, 3), np.uint8))
    raises_dataset_error("cifar_c", labels, "file not found", lambda: read("cifar_c", written.root))


def test_npy_malformed(tmp_path):
    written = write_npy(tmp_path)
    images, labels = written.root / "test" / "images.npy", written.root / "test" / "labels.npy"
    np.save(labels, np.zeros(4, np.int64))
    raises_dataset_error("npy", labels, "expected 5 integer labels, got shape (4,)", lambda: read("npy", written.root))
    np.save(labels, np.full(5, -2))
    raises_dataset_error("npy", labels, "labels must lie in -1..", lambda: read("npy", written.root))
    np.save(images, np.zeros((5, 8, 8, 3), np.float32))
    raises_dataset_error("npy", images, "dtype float32", lambda: read("npy", written.root))
    images.write_bytes(images.read_bytes()[:200])
    raises_dataset_error("npy", images, "cannot read .npy array", lambda: read("npy", written.root))
    images.unlink()
    raises_dataset_error("npy", images, "file not found", lambda: read("npy", written.root))
    raises_dataset_error("npy", written.root, "unknown split 'val'", lambda: read("npy", written.root, "val"))
