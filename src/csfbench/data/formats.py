"""Registry of the on-disk dataset formats csfbench can read.

Each :class:`Format` names its reader (see :mod:`csfbench.data.readers`), the official splits it
has, the options its reader takes and the expected on-disk layout.  The layout text lives here
only.  The dependency goes one way: this module imports the readers, which know nothing of it.
:meth:`Format.reader` and :meth:`Format.check_files` are the only places where a reader's
:class:`~csfbench.data.readers.ReaderError` (path and problem) becomes a
:class:`~csfbench.errors.DatasetError` that also names the dataset and the expected layout.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from csfbench.data import readers
from csfbench.data.base import ImageSet
from csfbench.data.readers import ReaderError, require_directory
from csfbench.errors import DatasetError


@dataclass(frozen=True)
class Format:
    """One on-disk format, registered under ``key``.

    ``read`` is its reader in :mod:`csfbench.data.readers`, called only on a checked request.
    ``splits`` are the official splits a reader accepts; an empty tuple means the format holds a
    single unnamed split and the ``split`` argument is ignored.  ``options`` are the keyword
    options the reader requires (no others are accepted).  ``labelled`` is False where every
    sample gets label ``-1`` (semantic shift, no label of any source).
    """

    key: str
    read: Callable[..., ImageSet]
    expected_layout: str
    splits: tuple[str, ...]
    labelled: bool
    options: tuple[str, ...] = ()

    def reader(self, root: str | Path, split: str, name: str, **options: object) -> ImageSet:
        """Read the official ``split`` of the dataset ``name`` under ``root``.

        Checks that ``root`` is a directory and that ``split`` and the option names are this
        format's, calls :attr:`read` and checks that the split holds at least one image.  Any
        problem raises a :class:`DatasetError` naming the dataset, the path tried, the problem and
        :attr:`expected_layout`.
        """
        root = Path(root)
        with self._as_dataset_error(name):
            require_directory(root)
            self._check_request(root, split, options)
            images = self.read(root, split, name, **options)
            if not len(images):
                what = f"split '{split}'" if self.splits else "the dataset"
                raise ReaderError(root, f"{what} holds no images")
            return images

    def check_files(self, images: ImageSet) -> None:
        """Check that every image file behind ``images`` (read by :meth:`reader`) has an image header.

        Reads one header per file (see :func:`~csfbench.data.readers.check_image_files`): the
        dataset index does it once, before any job decodes the images.  A file that is no image
        raises a :class:`DatasetError` naming it.
        """
        with self._as_dataset_error(images.name):
            readers.check_image_files(images)

    @contextmanager
    def _as_dataset_error(self, name: str) -> Iterator[None]:
        """Turn a :class:`ReaderError` into a :class:`DatasetError` of dataset ``name`` and this layout."""
        try:
            yield
        except ReaderError as error:
            raise DatasetError(name, error.path, error.problem, self.expected_layout) from error

    def _check_request(self, root: Path, split: str, options: dict[str, object]) -> None:
        if self.splits and split not in self.splits:
            raise ReaderError(root, f"unknown split '{split}'; format '{self.key}' has splits {list(self.splits)}")
        missing = [key for key in self.options if key not in options]
        unknown = sorted(set(options) - set(self.options))
        if missing or unknown:
            problem = f"format '{self.key}' takes options {list(self.options)}; missing {missing}, unknown {unknown}"
            raise ReaderError(root, problem)


_FORMATS = (
    Format(
        key="cifar10",
        read=readers.read_cifar10,
        expected_layout="""
{root}/ = the extracted cifar-10-batches-py/ directory, python pickles:
  data_batch_1 ... data_batch_5   split "train" (10000 images each)
  test_batch                      split "test" (10000 images)
  batches.meta
each batch: dict with b'data' (N x 3072 uint8, channel-major RGB 32x32) and b'labels' (N ints 0..9)
""",
        splits=("train", "test"),
        labelled=True,
    ),
    Format(
        key="cifar100",
        read=readers.read_cifar100,
        expected_layout="""
{root}/ = the extracted cifar-100-python/ directory, python pickles:
  train   split "train" (50000 images)
  test    split "test" (10000 images)
  meta    dict with b'fine_label_names' (100) and b'coarse_label_names' (20)
train/test: dict with b'data' (N x 3072 uint8, channel-major RGB 32x32),
  b'fine_labels' (N ints 0..99) and b'coarse_labels' (N ints 0..19)
""",
        splits=("train", "test"),
        labelled=True,
    ),
    Format(
        key="supercifar100",
        read=readers.read_supercifar100,
        expected_layout="""
{root}/ = the extracted cifar-100-python/ directory, python pickles:
  train   dict with b'data' (N x 3072 uint8, channel-major RGB 32x32), b'fine_labels', b'coarse_labels'
  test    same keys as train
  meta    dict with b'fine_label_names' and b'coarse_label_names'
SuperCIFAR-100: coarse labels, superclass 'vehicles_2' removed (19 classes), one fine class per
  superclass held out; split "train" = train file without held-out classes,
  split "test" = held-out classes of the train file, then of the test file
""",
        splits=("train", "test"),
        labelled=True,
    ),
    Format(
        key="tinyimagenet",
        read=readers.read_tinyimagenet,
        expected_layout="""
{root}/ = the extracted tiny-imagenet-200/ directory:
  wnids.txt                      one WordNet id per line; label = line index
  train/{wnid}/images/*.JPEG     split "train"
  val/images/*.JPEG              split "test" (the official val split)
  val/val_annotations.txt        tab-separated: file name, wnid, x0, y0, x1, y1
""",
        splits=("train", "test"),
        labelled=True,
    ),
    Format(
        key="svhn",
        read=readers.read_svhn,
        expected_layout="""
{root}/ = the folder holding the SVHN cropped-digit files (format 2):
  train_32x32.mat   split "train"
  test_32x32.mat    split "test"
each .mat (MATLAB v5): X = 32 x 32 x 3 x N uint8, y = N x 1 labels 1..10 (10 = digit 0)
""",
        splits=("train", "test"),
        labelled=True,
    ),
    Format(
        key="image_folder",
        read=readers.read_image_folder,
        expected_layout="""
{root}/**/*.{jpg,jpeg,png,bmp,gif,tif,tiff,webp}   any nesting, extension case ignored
one unlabelled split (label -1): LSUN crop/resize, iSUN, Places365, Textures (dtd/images)
""",
        splits=(),
        labelled=False,
    ),
    Format(
        key="cifar_c",
        read=readers.read_cifar_c,
        expected_layout="""
{root}/ = the extracted CIFAR-10-C/ or CIFAR-100-C/ directory:
  {corruption}.npy   (5 x 10000) x 32 x 32 x 3 uint8; severity s = rows (s-1)*10000 ... s*10000
  labels.npy         5 x 10000 integer labels, row-aligned with every {corruption}.npy
options: corruption (file stem, e.g. gaussian_noise), severity (1..5); split "test" only
""",
        splits=("test",),
        labelled=True,
        options=("corruption", "severity"),
    ),
    Format(
        key="npy",
        read=readers.read_npy,
        expected_layout="""
{root}/{split}/images.npy   N x H x W x 3 uint8
{root}/{split}/labels.npy   N int64 labels (-1 = no label of the source)
splits: train, test
""",
        splits=("train", "test"),
        labelled=True,
    ),
)
FORMATS: dict[str, Format] = {spec.key: spec for spec in _FORMATS}


def open_dataset(fmt: str, root: str | Path, split: str, name: str, **options: object) -> ImageSet:
    """Read the official ``split`` of the dataset ``name`` stored in format ``fmt`` under ``root``.

    Raises :class:`DatasetError` for an unknown format (listing the known ones) and, through
    :meth:`Format.reader`, for a missing or malformed dataset.
    """
    if fmt not in FORMATS:
        known = "\n".join(f"{key}: {spec.expected_layout.strip().splitlines()[0]}" for key, spec in FORMATS.items())
        raise DatasetError(name, root, f"unknown format '{fmt}'; known formats: {', '.join(FORMATS)}", known)
    return FORMATS[fmt].reader(root, split, name, **options)
