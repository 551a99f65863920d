"""Registry of the on-disk dataset formats csfbench can read.

Each :class:`Format` names its reader (see :mod:`csfbench.data.readers` and, for image lists and
class-folder trees, :mod:`csfbench.data.list_readers`), the official splits it has, the options its
reader takes and the expected on-disk layout.  The layout text lives here
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

from csfbench.data import list_readers, readers
from csfbench.data.base import ImageSet
from csfbench.data.readers import ReaderError, require_directory
from csfbench.errors import DatasetError


@dataclass(frozen=True)
class Format:
    """One on-disk format, registered under ``key``.

    ``read`` is its reader in :mod:`csfbench.data.readers` or :mod:`csfbench.data.list_readers`,
    called only on a checked request.  ``splits`` are the official splits a reader accepts; an
    empty tuple means the format holds a single unnamed split and the ``split`` argument is
    ignored.  ``options`` are the keyword options the reader requires, ``optional`` those it may
    take (no others are accepted).  ``labelled`` is False where every sample gets label ``-1``
    (semantic shift, no label of any source).
    """

    key: str
    read: Callable[..., ImageSet]
    expected_layout: str
    splits: tuple[str, ...]
    labelled: bool
    options: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

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
        unknown = sorted(set(options) - set(self.options) - set(self.optional))
        if missing or unknown:
            optional = f" and optional {list(self.optional)}" if self.optional else ""
            problem = (f"format '{self.key}' takes options {list(self.options)}{optional}; "
                       f"missing {missing}, unknown {unknown}")
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
        key="idx",
        read=readers.read_idx,
        expected_layout="""
{root}/ = the folder holding the IDX files of MNIST, Fashion-MNIST or KMNIST, each raw or gzipped (.gz):
  train-images-idx3-ubyte, train-labels-idx1-ubyte   split "train" (MNIST: 60000 images 28x28)
  t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte     split "test" (MNIST: 10000 images)
  labels 0..9; where a file is there both raw and gzipped, the raw one is read
with option emnist (balanced, byclass, bymerge, digits, letters, mnist): EMNIST's folder (gzip/), files
  emnist-{emnist}-train-images-idx3-ubyte, emnist-{emnist}-train-labels-idx1-ubyte   split "train"
  emnist-{emnist}-test-images-idx3-ubyte, emnist-{emnist}-test-labels-idx1-ubyte     split "test"
  images stored transposed, read transposed back (upright); letters: labels 1..26 read as 0..25
each IDX file: magic 00 00 08 (unsigned byte) {ndim}, ndim big-endian uint32 sizes, then the bytes;
  images N x H x W (ndim 3, grayscale, read as 3 identical channels), labels N (ndim 1), one per image
""",
        splits=("train", "test"),
        labelled=True,
        optional=("emnist",),
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
_LIST_FORMATS = (
    Format(
        key="imglist",
        read=list_readers.read_imglist,
        expected_layout="""
{root}/{imglist}   an OpenOOD v1.5 image list (e.g. benchmark_imglist/imagenet/test_ninco.txt)
  one image per line: 'relative/path label' or 'relative/path', paths relative to {root}/{images}
  label: an integer >= -1; -1 or no label = no label of the source (OOD lists, imagenetood.txt)
{root}/{images}/relative/path   every listed image (OpenOOD: images_classic/, images_largescale/)
options: imglist (the list, absolute or relative to {root}; or {train: list, test: list} for a source's
  two splits); optional: images (default {root}),
  expect {n_images, n_classes (distinct folders of the paths), sha256 (of the list)}
  e.g. ImageNet-OOD: imagenetood.txt over the ImageNet-21K-P train root, n_images 31802, n_classes 637
one list: one split (the split argument is ignored); ids = the listed paths, sorted
""",
        splits=(),
        labelled=True,
        options=("imglist",),
        optional=("images", "expect"),
    ),
    Format(
        key="imagenet",
        read=list_readers.read_imagenet,
        expected_layout="""
{root}/ = the ILSVRC-2012 folder holding train/ and val/ (Kaggle: ILSVRC/Data/CLS-LOC/):
  train/{wnid}/*.JPEG             split "train", one folder per class (1000)
  val/{wnid}/*.JPEG               split "test" (the official val split, 50000 images), or flat:
  val/*.JPEG + LOC_val_solution.csv   header 'ImageId,PredictionString'; rows
                                  'ILSVRC2012_val_00000001,n01751748 x0 y0 x1 y1 ...' (label = first wnid)
label = line index of the wnid in option wnids (one wnid per line, optionally followed by names:
  LOC_synset_mapping.txt), else its index among the sorted class folders of train/ (of val/ without train/)
optional options: wnids, val_solution (default {root}/LOC_val_solution.csv); paths absolute or relative to {root};
  train_subset {seed, n} or {seed, per_class}: split "train" is that seeded subset (e.g. n 200000)
""",
        splits=("train", "test"),
        labelled=True,
        optional=("wnids", "val_solution", "train_subset"),
    ),
    Format(
        key="wnid_folders",
        read=list_readers.read_wnid_folders,
        expected_layout="""
{root}/{class}/**/*.{jpg,jpeg,png,...}   one folder per class, no image outside them
with option wnids (one wnid per line; label = line index, e.g. the sorted 1000 ImageNet wnids):
  folders named by wnids of that list: ImageNet-R (imagenet-r/, 200 folders), ImageNet-Sketch (sketch/)
without wnids: any folder names, label -1: ImageNet-OOD ({wnid}/ of its 637 classes), SSB-hard
  (ssb_hard/), NINCO (NINCO_OOD_classes/), Textures (dtd/images/)
optional options: wnids (absolute or relative to {root}), expect {n_images, n_classes (class folders)}
  e.g. ImageNet-OOD: n_images 31802, n_classes 637; rendition: only the images named {rendition}_*
  (ImageNet-R's art, cartoon, ...), a set of its own with a rendition column in its metric rows
one split (the split argument is ignored); ids = paths relative to {root}, sorted
""",
        splits=(),
        labelled=True,
        optional=("wnids", "expect", "rendition"),
    ),
    Format(
        key="imagenet_c",
        read=list_readers.read_imagenet_c,
        expected_layout="""
{root}/ = the extracted ImageNet-C directory:
  {corruption}/{severity}/{wnid}/*.JPEG   e.g. gaussian_noise/5/n01440764/ILSVRC2012_val_00000293.JPEG
options: corruption (folder name), severity (1..5); optional: wnids (label = line index;
  default: index among the sorted wnid folders of that severity folder); split "test" only
ids = {corruption}/{severity}/{wnid}/{file}, sorted
""",
        splits=("test",),
        labelled=True,
        options=("corruption", "severity"),
        optional=("wnids",),
    ),
    Format(
        key="iconic444",
        read=list_readers.read_iconic444,
        expected_layout="""
{root}/manifest.csv (or manifest.parquet): one row per image, columns image_id, rel_path,
  class_name, class_idx (0..443), group, category, has_manual_defect, is_food_grade, width, height
{root}/{task}/train.txt, val.txt, test.txt, near.txt   task: almond, wheat, kernels, food_grade
{root}/far.txt, ood_val.txt, extreme_{imagenet,inaturalist,places365,textures}.txt, synthetic_{type}.txt
each list: lines 'rel_path class_idx' (-1 allowed in OOD lists), rel_path relative to {root}
options: task; optional: ood (near, or the stem of a shared list: far, ood_val, ...)
split "train" = train.txt; split "test" = val.txt then test.txt (val_size = val lines);
  ID labels re-indexed 0..C-1 by ascending class_idx of train.txt (C = 7, 12, 29, 324)
with ood: split "test" only, labels -1, no ID class of the task
""",
        splits=("train", "test"),
        labelled=True,
        options=("task",),
        optional=("ood",),
    ),
)
FORMATS: dict[str, Format] = {spec.key: spec for spec in _FORMATS + _LIST_FORMATS}


def open_dataset(fmt: str, root: str | Path, split: str, name: str, **options: object) -> ImageSet:
    """Read the official ``split`` of the dataset ``name`` stored in format ``fmt`` under ``root``.

    Raises :class:`DatasetError` for an unknown format (listing the known ones) and, through
    :meth:`Format.reader`, for a missing or malformed dataset.
    """
    if fmt not in FORMATS:
        known = "\n".join(f"{key}: {spec.expected_layout.strip().splitlines()[0]}" for key, spec in FORMATS.items())
        raise DatasetError(name, root, f"unknown format '{fmt}'; known formats: {', '.join(FORMATS)}", known)
    return FORMATS[fmt].reader(root, split, name, **options)
