"""The ``idx`` format (MNIST, Fashion-MNIST, KMNIST, EMNIST) on tiny IDX files written in the real format."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from csfbench.data.formats import open_dataset
from csfbench.data.sources import check_n_classes, source_split
from csfbench.errors import ConfigError
from csfbench.specs import DatasetSpec

from tests.helpers.format_fixtures import IDX_HW, idx_bytes, write_idx, write_idx_file
from tests.unit.data.test_readers import all_images, raises_dataset_error

H, W = IDX_HW


def read(root, split="test", **options):
    return open_dataset("idx", root, split, "myset", **options)


def _memory_mapped(array: np.ndarray) -> bool:
    while isinstance(array, np.ndarray) and not isinstance(array, np.memmap):
        array = array.base
    return isinstance(array, np.memmap)


# ---------------------------------------------------------------------------------------------
# Content, labels, ids, splits


@pytest.mark.parametrize("gz", [True, False], ids=["gzipped", "raw"])
def test_mnist_names_both_splits(tmp_path, gz):
    written = write_idx(tmp_path, gz=gz)
    for split, n, prefix in (("train", 20, "train"), ("test", 10, "t10k")):
        dataset = read(written.root, split)
        assert len(dataset) == n
        image = dataset.image(n - 1)
        assert image.shape == (H, W, 3) and image.dtype == np.uint8
        images = all_images(dataset)
        np.testing.assert_array_equal(images, written.images[split])
        assert (images[..., 0] == images[..., 1]).all() and (images[..., 1] == images[..., 2]).all()
        np.testing.assert_array_equal(dataset.labels, written.labels[split])
        assert dataset.labels.dtype == np.int64 and set(dataset.labels) == set(range(10))
        assert list(dataset.sample_ids[:2]) == [f"{prefix}-images-idx3-ubyte:0", f"{prefix}-images-idx3-ubyte:1"]
        # one grayscale array behind the three channels; a raw file stays memory-mapped
        assert dataset.images.strides[-1] == 0 and _memory_mapped(dataset.images) == (not gz)


def test_model_input_is_three_identical_channels(tmp_path):
    from csfbench.data.loader import TorchImages

    written = write_idx(tmp_path)
    tensor, label, index = TorchImages(read(written.root), 8, "stretch", 0.875, "bilinear")[3]
    assert tensor.shape == (3, 8, 8) and (label, index) == (written.labels["test"][3], 3)
    assert (tensor[0] == tensor[1]).all() and (tensor[1] == tensor[2]).all()


def test_validation_and_test_splits_come_from_the_official_test_split(tmp_path):
    written = write_idx(tmp_path)
    spec = DatasetSpec("mnist", "idx", str(written.root))
    val, test = (source_split(spec, 3, split) for split in ("val", "test"))
    np.testing.assert_array_equal(val.labels, written.labels["test"][:3])
    np.testing.assert_array_equal(test.labels, written.labels["test"][3:])
    np.testing.assert_array_equal(test.image(0), written.images["test"][3])
    assert len(source_split(spec, 3, "train")) == 20


def test_the_raw_file_is_read_where_both_exist(tmp_path):
    written = write_idx(tmp_path, gz=True)
    raw = np.zeros((10, H, W), np.uint8)
    write_idx_file(written.root / "t10k-images-idx3-ubyte", idx_bytes(raw), gz=False)
    dataset = read(written.root)
    assert not all_images(dataset).any() and _memory_mapped(dataset.images)


def test_gzip_is_told_by_the_content_not_the_name(tmp_path):
    """A browser may decompress MNIST's download and keep the name ``.gz``; a gzip stream may lose it."""
    written = write_idx(tmp_path, gz=True)
    images = written.root / "t10k-images-idx3-ubyte.gz"
    labels = written.root / "t10k-labels-idx1-ubyte.gz"
    images.write_bytes(gzip.decompress(images.read_bytes()))  # raw bytes under the .gz name
    labels.rename(written.root / "t10k-labels-idx1-ubyte")  # a gzip stream without .gz
    dataset = read(written.root)
    np.testing.assert_array_equal(all_images(dataset), written.images["test"])
    np.testing.assert_array_equal(dataset.labels, written.labels["test"])


def test_emnist_images_are_transposed_back_and_letters_start_at_zero(tmp_path):
    letters = write_idx(tmp_path, "emnist", emnist="letters", gz=True)
    digits = write_idx(tmp_path, "emnist", emnist="digits", gz=False, seed=1)  # a second split in the same folder
    stored = gzip.decompress((letters.root / "emnist-letters-train-images-idx3-ubyte.gz").read_bytes())
    assert stored[8:16] == np.array([W, H], ">u4").tobytes()  # stored W x H: transposed
    for split in ("train", "test"):
        dataset = read(letters.root, split, emnist="letters")
        assert dataset.image(0).shape == (H, W, 3)
        np.testing.assert_array_equal(all_images(dataset), letters.images[split])
        np.testing.assert_array_equal(dataset.labels, letters.labels[split])
        assert set(dataset.labels) == set(range(26))  # 1..26 in the files
        assert dataset.sample_ids[0] == f"emnist-letters-{split}-images-idx3-ubyte:0"
    dataset = read(digits.root, "test", emnist="digits")
    np.testing.assert_array_equal(all_images(dataset), digits.images["test"])
    np.testing.assert_array_equal(dataset.labels, digits.labels["test"])  # 0..9 as stored


def test_labels_beyond_n_classes_are_refused_as_for_the_other_formats(tmp_path):
    """The reader bounds labels by the dataset's classes; a source's n_classes is checked by its training job."""
    written = write_idx(tmp_path)
    labels = read(written.root, "train").labels
    check_n_classes(labels, 10, "sources/mnist/n_classes", "mnist")
    with pytest.raises(ConfigError, match="10 classes"):
        check_n_classes(labels, 5, "sources/mnist/n_classes", "mnist")


# ---------------------------------------------------------------------------------------------
# Failures: DatasetError naming the dataset, the file, what was expected and what was found


def _images(n: int = 10) -> np.ndarray:
    return np.zeros((n, H, W), np.uint8)


def _labels(n: int = 10, value: int | None = None) -> np.ndarray:
    return np.full(n, value, np.uint8) if value is not None else (np.arange(n) % 10).astype(np.uint8)


BAD_FILES = {
    "bad magic": ("images", b"\x01\x02" + idx_bytes(_images())[2:],
                  "not an IDX file: magic number 01 02 08 03, expected 00 00 08 03"),
    "gzip magic as data": ("images", b"\x1f\x8b not gzip at all",
                           "cannot read IDX file (BadGzipFile"),
    "dtype code": ("images", idx_bytes(_images(), code=0x0D),
                   "IDX data type code 0x0d (float), expected 0x08 (unsigned byte)"),
    "unknown dtype code": ("labels", idx_bytes(_labels(), code=0x07),
                           "IDX data type code 0x07 (not an IDX type), expected 0x08"),
    "images ndim": ("images", idx_bytes(np.zeros((10, H * W), np.uint8)),
                    "2 dimensions in the IDX header, expected 3 (N x H x W images)"),
    "labels ndim": ("labels", idx_bytes(_labels().reshape(10, 1)),
                    "2 dimensions in the IDX header, expected 1 (N labels)"),
    "truncated data": ("images", idx_bytes(_images())[:-10],
                       f"truncated IDX data: the header's sizes 10 x {H} x {W} (N x H x W images) take {10 * H * W} "
                       f"bytes, found {10 * H * W - 10}"),
    "trailing bytes": ("labels", idx_bytes(_labels()) + b"1234567",
                       "7 bytes after the IDX data: the header's sizes 10 (N labels) take 10 bytes, found 17"),
    "truncated header": ("images", idx_bytes(_images())[:9],
                         "truncated IDX header: 9 bytes, expected 16 (magic number and 3 sizes)"),
    "empty file": ("labels", b"", "truncated IDX header: 0 bytes, expected at least 4 (the magic number)"),
    "empty images": ("images", idx_bytes(np.zeros((10, 0, W), np.uint8)),
                     f"images of 0 x {W} pixels, expected at least 1 x 1"),
    "count mismatch": ("labels", idx_bytes(_labels(9)),
                       "9 labels, but t10k-images-idx3-ubyte{gz} holds 10 images: expected one label per image"),
    "label out of range": ("labels", idx_bytes(_labels(10, 10)),
                           "labels must lie in 0..9 (the 10 classes of MNIST, Fashion-MNIST and KMNIST), found 10..10"),
}


@pytest.mark.parametrize("gz", [True, False], ids=["gzipped", "raw"])
@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_file_is_named_with_what_was_expected_and_found(tmp_path, case, gz):
    written = write_idx(tmp_path, gz=gz)
    which, content, fragment = BAD_FILES[case]
    stem = "t10k-images-idx3-ubyte" if which == "images" else "t10k-labels-idx1-ubyte"
    path = write_idx_file(written.root / stem, content, gz=gz and case != "gzip magic as data")
    fragment = fragment.format(gz=".gz" if gz else "")
    raises_dataset_error("idx", path, fragment, lambda: read(written.root))


def test_a_truncated_gzip_stream_is_named(tmp_path):
    written = write_idx(tmp_path, gz=True)
    path = written.root / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-20])
    fragment = "cannot read IDX file (EOFError: Compressed file ended"
    raises_dataset_error("idx", path, fragment, lambda: read(written.root))


def test_a_missing_file_names_both_names(tmp_path):
    written = write_idx(tmp_path, gz=True)
    (written.root / "t10k-labels-idx1-ubyte.gz").unlink()
    path = written.root / "t10k-labels-idx1-ubyte"
    raises_dataset_error("idx", path, "file not found (nor t10k-labels-idx1-ubyte.gz)", lambda: read(written.root))


def test_emnist_label_rule_and_option_errors(tmp_path):
    written = write_idx(tmp_path, "emnist", emnist="letters", gz=False)
    labels = written.root / "emnist-letters-test-labels-idx1-ubyte"
    labels.write_bytes(idx_bytes(np.arange(26, dtype=np.uint8)))  # 0..25: not EMNIST's 1..26
    raises_dataset_error("idx", labels, "labels must lie in 1..26 (the 26 classes of EMNIST letters), found 0..25",
                         lambda: read(written.root, emnist="letters"))
    raises_dataset_error("idx", written.root / "t10k-images-idx3-ubyte",
                         "file not found (nor t10k-images-idx3-ubyte.gz); the folder holds EMNIST files of splits "
                         "['letters']: give option emnist", lambda: read(written.root))
    for value in ("capitals", ["letters"]):
        raises_dataset_error("idx", written.root, f"option emnist must be an EMNIST split, one of ['balanced', "
                             f"'byclass', 'bymerge', 'digits', 'letters', 'mnist']; got {value!r} (the folder holds "
                             "EMNIST files of splits ['letters'])", lambda: read(written.root, emnist=value))
    raises_dataset_error("idx", written.root, "unknown ['subset']", lambda: read(written.root, subset="letters"))
    raises_dataset_error("idx", written.root, "unknown split 'val'", lambda: read(written.root, "val"))
