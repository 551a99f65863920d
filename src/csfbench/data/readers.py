"""Readers of the real on-disk dataset formats, one per format.

Every reader has the signature ``read_X(root, split, name, **format_options) -> ImageSet`` and
returns the official ``split`` ("train" or "test") as RGB images (uint8 0..255, H×W×3) with int64
labels (``-1`` = no label of the source) and traceable ``sample_ids``; ``name`` only names the
returned ImageSet.  Readers check files and their content before reading image payloads.

This module knows nothing of the format registry (:mod:`csfbench.data.formats`, which imports it):
a reader trusts that ``root`` is a directory and that ``split`` and the options are those of its
format, and reports a missing or malformed file as a :class:`ReaderError` naming only the path and
the problem.  The registry checks the request before calling a reader and turns a ReaderError into
a :class:`~csfbench.errors.DatasetError` that also names the dataset and the expected layout.
"""
from __future__ import annotations

import gzip
import os
import pickle
import re
from pathlib import Path
from typing import Callable, Iterable, TypeVar

import numpy as np
from PIL import Image

from csfbench.data.base import ArrayImageSet, FileImageSet, ImageSet
from csfbench.errors import CsfbenchError

T = TypeVar("T")

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
CIFAR_SIDE = 32
N_SEVERITIES = 5
CIFAR10_FILES = {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)}
SUPERCIFAR_REMOVED_SUPERCLASS = "vehicles_2"
SUPERCIFAR_HELD_OUT = (
    "seal", "flatfish", "tulip", "bowl", "pear", "lamp", "couch", "beetle", "lion", "skyscraper",
    "sea", "cattle", "raccoon", "lobster", "girl", "lizard", "hamster", "oak_tree", "motorcycle",
)  # fmt: skip
SVHN_DIGIT_ZERO = 10
#: the IDX files (images, labels) of each split of MNIST, Fashion-MNIST and KMNIST, each raw or with ``.gz``
IDX_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
#: the classes of MNIST, Fashion-MNIST and KMNIST (labels 0..9)
IDX_N_CLASSES = 10
#: EMNIST's splits (Cohen et al. 2017): (first label in the files, number of classes); only
#: ``letters`` counts from 1 (1..26 = a..z)
EMNIST_SPLITS = {"balanced": (0, 47), "byclass": (0, 62), "bymerge": (0, 47), "digits": (0, 10), "letters": (1, 26),
                 "mnist": (0, 10)}
#: an EMNIST file name; group 1: its split
EMNIST_FILE = re.compile(r"emnist-([a-z]+)-(?:train|test)-(?:images-idx3|labels-idx1)-ubyte(?:\.gz)?")
#: IDX data type codes (the third byte of the magic number); csfbench reads unsigned bytes only
IDX_TYPES = {0x08: "unsigned byte", 0x09: "signed byte", 0x0B: "short", 0x0C: "int", 0x0D: "float", 0x0E: "double"}
IDX_UBYTE = 0x08
GZIP_MAGIC = b"\x1f\x8b"


class ReaderError(CsfbenchError):
    """A missing or malformed file or directory, or a request its format does not offer: the path
    tried and the problem.

    It names no dataset and no layout; :meth:`csfbench.data.formats.Format.reader` adds both.
    """

    def __init__(self, path: Path, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{problem}\n  path tried: {path}")


# ---------------------------------------------------------------------------------------------
# Shared checks: every failure raises a ReaderError.  ``require_directory``, ``require_file``,
# ``load_file``, ``is_image_file`` and ``image_files`` are also used by :mod:`csfbench.data.list_readers`.


def require_directory(path: Path) -> Path:
    """``path`` if it is a directory, else a ReaderError."""
    if not path.is_dir():
        problem = "a file found where a directory was expected" if path.exists() else "directory not found"
        raise ReaderError(path, problem)
    return path


def require_file(path: Path) -> Path:
    """``path`` if it is a file, else a ReaderError."""
    if not path.is_file():
        problem = "a directory found where a file was expected" if path.exists() else "file not found"
        raise ReaderError(path, problem)
    return path


def load_file(path: Path, load: Callable[[Path], T], what: str) -> T:
    """``load(path)`` on an existing file; any failure to parse it becomes a ReaderError."""
    require_file(path)
    try:
        return load(path)
    except Exception as exc:  # pickle/.npy/.mat parsers raise many unrelated types on corrupt input
        raise ReaderError(path, f"cannot read {what} ({type(exc).__name__}: {exc})") from exc


def _check_labels(path: Path, labels: object, n: int, low: int, high: int) -> np.ndarray:
    """``labels`` as an int64 vector of length ``n`` with values in ``low..high`` (inclusive)."""
    array = np.asarray(labels)
    if array.ndim != 1 or len(array) != n or not np.issubdtype(array.dtype, np.integer):
        raise ReaderError(path, f"expected {n} integer labels, got shape {array.shape} dtype {array.dtype}")
    array = array.astype(np.int64)
    if len(array) and (array.min() < low or array.max() > high):
        raise ReaderError(path, f"labels must lie in {low}..{high}, found {array.min()}..{array.max()}")
    return array


def _check_images(path: Path, images: np.ndarray, side: int | None = None) -> np.ndarray:
    """Check an N×H×W×3 uint8 array (H = W = ``side`` when given)."""
    hw_ok = side is None or images.shape[1:3] == (side, side)
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8 or not hw_ok:
        size = f"{side}x{side}" if side else "HxW"
        raise ReaderError(path, f"expected N x {size} x 3 uint8 images, got shape {images.shape} dtype {images.dtype}")
    return images


def _ids(prefix: str, indices: np.ndarray) -> np.ndarray:
    """Sample ids ``"{prefix}:{index}"``."""
    return np.char.add(f"{prefix}:", np.asarray(indices).astype(str))


def is_image_file(path: Path) -> bool:
    """Whether ``path`` has an image extension (:data:`IMAGE_EXTENSIONS`, case ignored)."""
    return path.suffix.lower() in IMAGE_EXTENSIONS


def image_files(folder: Path, base: Path, visited: dict[tuple[int, int], str] | None = None) -> list[str]:
    """Every visible image file under ``folder`` (any depth), relative to ``base``; hidden files and folders
    (names starting with ``.``) are skipped, folders are walked in sorted order.

    Symbolic links to folders are followed (a class folder kept on another disk), and every folder is
    entered once: ``visited`` maps the (device, inode) of each folder entered to its path relative to
    ``base``; pass one dict for all the folders of one tree.  A link that leads to a folder containing it
    (``-> .``, ``-> ..``: a loop) or to a folder already entered (a second path to the same images) raises
    a ReaderError naming the link and where it leads.  Refused rather than skipped: a loop means a tree
    that is not the layout it looks like, and a second path would index the same images twice — under the
    labels of two class folders when it crosses into another class — or, skipped, leave them under
    whichever path the walk happened to reach first.

    String operations per file: an ILSVRC-2012 train split has 1.28 million files in 1000 folders.
    """
    visited = {} if visited is None else visited
    _enter(folder, base, visited)
    found = []
    for directory, subdirs, files in os.walk(folder, followlinks=True):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for name in subdirs:
            _enter(Path(directory, name), base, visited)
        prefix = Path(directory).relative_to(base).as_posix() + "/"
        found += [prefix + f for f in files
                  if not f.startswith(".") and os.path.splitext(f)[1].lower() in IMAGE_EXTENSIONS]
    return found


def _enter(folder: Path, base: Path, visited: dict[tuple[int, int], str]) -> None:
    """Record ``folder`` as entered; a ReaderError when it is a link loop or was entered before."""
    if folder.is_symlink():
        target, parent = os.path.realpath(folder), os.path.realpath(folder.parent)
        if parent == target or parent.startswith(target.rstrip(os.sep) + os.sep):
            raise ReaderError(folder, f"symbolic link loop: the link leads to {target}, a folder that contains it; "
                                      "remove the link")
    stat = folder.stat()
    key = (stat.st_dev, stat.st_ino)
    if key in visited:
        raise ReaderError(folder, f"leads to {os.path.realpath(folder)}, already entered as {visited[key]}: two "
                                  "paths to the same images (each indexed, under the label of its class folder); "
                                  "remove the symbolic link")
    visited[key] = folder.relative_to(base).as_posix()


def check_image_files(images: ImageSet) -> None:
    """Every file behind ``images`` opens as an image; an in-memory or memory-mapped set has none.

    Only the header is read (``Image.open`` is lazy): a text file named ``.png`` or an empty file is
    found at the cost of one small read per file, a corrupt payload is not.
    """
    if not isinstance(images, FileImageSet):
        return
    for relative in images.sample_ids:
        path = images.root / relative
        try:
            with Image.open(path):
                pass
        except (OSError, Image.DecompressionBombError) as exc:  # UnidentifiedImageError is an OSError
            raise ReaderError(path, f"not a readable image ({type(exc).__name__}: {exc})") from exc


# ---------------------------------------------------------------------------------------------
# CIFAR python pickles (CIFAR-10, CIFAR-100, SuperCIFAR-100)


#: the only globals an official CIFAR python batch (or a faithful re-pickling of one) references:
#: numpy array and scalar reconstruction, and ``_codecs.encode``, with which Python 3 pickles bytes at
#: protocol 2.  Everything else (``os.system``, ``builtins.eval``, ...) is refused before it is looked up.
CIFAR_PICKLE_GLOBALS = frozenset({
    *((module, name) for module in ("numpy.core.multiarray", "numpy._core.multiarray") for name in ("_reconstruct", "scalar")),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
})  # fmt: skip


class _CifarUnpickler(pickle.Unpickler):
    """An unpickler that admits only :data:`CIFAR_PICKLE_GLOBALS`: pickle is the CIFAR batches' own
    distribution format, and a plain ``pickle.load`` would run whatever code a crafted file names."""

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in CIFAR_PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"refused global {module}.{name}: a CIFAR batch holds only numpy arrays, "
                                         "lists, dicts, bytes, str and int")
        return super().find_class(module, name)


def _unpickle(path: Path) -> object:
    """The content of a CIFAR python batch (bytes keys), through :class:`_CifarUnpickler`."""
    with path.open("rb") as f:
        return _CifarUnpickler(f, encoding="bytes").load()


def _cifar_dict(path: Path, keys: tuple[bytes, ...]) -> dict[bytes, object]:
    """Unpickle one CIFAR file and check that it is a dict holding ``keys``."""
    content = load_file(path, _unpickle, "python pickle")
    if not isinstance(content, dict):
        raise ReaderError(path, f"expected a pickled dict, got {type(content).__name__}")
    missing = [key for key in keys if key not in content]
    if missing:
        raise ReaderError(path, f"missing keys {missing}; found {sorted(map(repr, content))}")
    return content


def _cifar_batch(
    path: Path, label_keys: tuple[bytes, ...], n_classes: tuple[int, ...]
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """One CIFAR batch: images (N×32×32×3 uint8), one label vector per key, ids ``"{file}:{i}"``."""
    batch = _cifar_dict(path, (b"data", *label_keys))
    rows = np.asarray(batch[b"data"])
    pixels = 3 * CIFAR_SIDE * CIFAR_SIDE
    if rows.ndim != 2 or rows.shape[1] != pixels or rows.dtype != np.uint8:
        raise ReaderError(path, f"b'data' must be N x {pixels} uint8, got shape {rows.shape} dtype {rows.dtype}")
    images = np.ascontiguousarray(rows.reshape(-1, 3, CIFAR_SIDE, CIFAR_SIDE).transpose(0, 2, 3, 1))
    labels = [
        _check_labels(path, batch[key], len(images), 0, n - 1) for key, n in zip(label_keys, n_classes)
    ]
    return images, labels, _ids(path.name, np.arange(len(images)))


def _cifar_split(name: str, root: Path, files: tuple[str, ...], label_key: bytes, n_classes: int) -> ArrayImageSet:
    """The batches ``files`` of ``root`` one after the other, with the labels under ``label_key``."""
    paths = [require_file(root / file) for file in files]
    batches = [_cifar_batch(path, (label_key,), (n_classes,)) for path in paths]
    return ArrayImageSet(
        name=name,
        images=np.concatenate([images for images, _, _ in batches]),
        labels=np.concatenate([labels[0] for _, labels, _ in batches]),
        sample_ids=np.concatenate([ids for _, _, ids in batches]),
    )


def read_cifar10(root: Path, split: str, name: str) -> ImageSet:
    """CIFAR-10 from ``cifar-10-batches-py``: 10 classes, 32×32 RGB uint8, ids ``"{file}:{index}"``."""
    return _cifar_split(name, root, CIFAR10_FILES[split], b"labels", 10)


def read_cifar100(root: Path, split: str, name: str) -> ImageSet:
    """CIFAR-100 from ``cifar-100-python``: the 100 fine classes, 32×32 RGB uint8, ids ``"{file}:{index}"``."""
    return _cifar_split(name, root, (split,), b"fine_labels", 100)


def _names(path: Path, meta: dict[bytes, object], key: bytes) -> list[str]:
    """The class names under ``key`` of a CIFAR-100 ``meta`` dict (a list of bytes)."""
    names = meta[key]
    if not isinstance(names, list) or not all(isinstance(n, bytes) for n in names):
        raise ReaderError(path, f"{key!r} must be a list of bytes names, got {type(names).__name__}")
    return [n.decode() for n in names]


def _index_of(path: Path, names: list[str], wanted: str, kind: str) -> int:
    if wanted not in names:
        raise ReaderError(path, f"{kind} '{wanted}' not found among the {len(names)} names in meta")
    return names.index(wanted)


def read_supercifar100(root: Path, split: str, name: str) -> ImageSet:
    """SuperCIFAR-100 (FD-Shifts): 19 superclasses of CIFAR-100 under a sub-class shift.

    Labels are the CIFAR-100 coarse labels with ``vehicles_2`` removed, renumbered 0..18 in their
    original order.  One fine class per remaining superclass (:data:`SUPERCIFAR_HELD_OUT`) is held
    out.  Split "train": train-file samples of the other fine classes.  Split "test": held-out
    samples of the train file followed by those of the test file (validation is taken from its
    start by the caller).  Images 32×32 RGB uint8, ids ``"{file}:{index}"``.
    """
    files = ("train",) if split == "train" else ("train", "test")
    paths = [require_file(root / file) for file in files]
    meta_path = root / "meta"
    meta = _cifar_dict(meta_path, (b"fine_label_names", b"coarse_label_names"))
    fine_names = _names(meta_path, meta, b"fine_label_names")
    coarse_names = _names(meta_path, meta, b"coarse_label_names")
    held_out = [_index_of(meta_path, fine_names, n, "fine class") for n in SUPERCIFAR_HELD_OUT]
    removed = _index_of(meta_path, coarse_names, SUPERCIFAR_REMOVED_SUPERCLASS, "superclass")
    renumber = np.cumsum(np.arange(len(coarse_names)) != removed) - 1  # old coarse label -> 0..18

    images, labels, ids = [], [], []
    for path in paths:
        batch_images, (fine, coarse), batch_ids = _cifar_batch(
            path, (b"fine_labels", b"coarse_labels"), (len(fine_names), len(coarse_names))
        )
        is_held_out = np.isin(fine, held_out)
        keep = (coarse != removed) & (is_held_out if split == "test" else ~is_held_out)
        images.append(batch_images[keep])
        labels.append(renumber[coarse[keep]])
        ids.append(batch_ids[keep])
    return ArrayImageSet(name, np.concatenate(images), np.concatenate(labels), np.concatenate(ids))


# ---------------------------------------------------------------------------------------------
# TinyImageNet (JPEG tree)


def _wnids(root: Path) -> list[str]:
    path = require_file(root / "wnids.txt")
    wnids = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    if not wnids or len(set(wnids)) != len(wnids):
        raise ReaderError(path, f"expected distinct WordNet ids, one per line; got {len(wnids)} lines")
    return wnids


def _tiny_train(root: Path, wnids: list[str]) -> list[tuple[str, int]]:
    """(relative path, label) of every train image, class by class."""
    samples = []
    for label, wnid in enumerate(wnids):
        folder = require_directory(root / "train" / wnid / "images")
        files = [p for p in folder.iterdir() if is_image_file(p)]
        if not files:
            raise ReaderError(folder, f"no images for class '{wnid}'")
        samples += [(p.relative_to(root).as_posix(), label) for p in files]
    return samples


def _tiny_val(root: Path, wnids: list[str]) -> list[tuple[str, int]]:
    """(relative path, label) of every val image listed in ``val_annotations.txt``."""
    folder = require_directory(root / "val" / "images")
    path = require_file(root / "val" / "val_annotations.txt")
    label_of = {wnid: label for label, wnid in enumerate(wnids)}
    samples = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2 or fields[1] not in label_of:
            problem = f"line {number}: expected '<file>\\t<wnid from wnids.txt>\\t...', got {line!r}"
            raise ReaderError(path, problem)
        if not (folder / fields[0]).is_file():
            raise ReaderError(folder / fields[0], f"image listed on line {number} of {path.name} not found")
        samples.append(((folder / fields[0]).relative_to(root).as_posix(), label_of[fields[1]]))
    if not samples:
        raise ReaderError(path, "no annotated images")
    return samples


def read_tinyimagenet(root: Path, split: str, name: str) -> ImageSet:
    """TinyImageNet (200 classes, 64×64 JPEG, decoded to RGB uint8 H×W×3 on access).

    Label = line index of the wnid in ``wnids.txt``.  Split "test" is the official val split.
    Samples are sorted by their path relative to ``root``, which is also their ``sample_id``.
    """
    wnids = _wnids(root)
    samples = sorted((_tiny_train if split == "train" else _tiny_val)(root, wnids))
    return FileImageSet(name, root, np.array([s[1] for s in samples]), np.array([s[0] for s in samples]))


# ---------------------------------------------------------------------------------------------
# SVHN (MATLAB .mat)


def read_svhn(root: Path, split: str, name: str) -> ImageSet:
    """SVHN cropped digits: 10 classes (label 10 in the file = digit 0), 32×32 RGB uint8.

    Variable shapes are checked from the .mat header before the payload is loaded.
    Ids ``"{file}:{index}"``.
    """
    import scipy.io  # here, not at the top: only SVHN is a MATLAB file, and every image job imports this module

    path = root / f"{split}_32x32.mat"
    header = {var: (shape, cls) for var, shape, cls in load_file(path, scipy.io.whosmat, "MATLAB file")}
    x_shape, x_class = header.get("X", ((), "missing"))
    y_shape = header.get("y", ((), "missing"))[0]
    n = x_shape[-1] if len(x_shape) == 4 else -1
    if x_shape[:3] != (CIFAR_SIDE, CIFAR_SIDE, 3) or x_class != "uint8" or tuple(y_shape) != (n, 1):
        raise ReaderError(path, f"expected X 32x32x3xN uint8 and y Nx1, got X {x_shape} {x_class}, y {y_shape}")
    content = load_file(path, lambda p: scipy.io.loadmat(p, variable_names=["X", "y"]), "MATLAB file")
    labels = _check_labels(path, content["y"].ravel().astype(np.int64), n, 1, SVHN_DIGIT_ZERO)
    labels[labels == SVHN_DIGIT_ZERO] = 0
    images = np.ascontiguousarray(content["X"].transpose(3, 0, 1, 2))
    return ArrayImageSet(name, images, labels, _ids(path.name, np.arange(n)))


# ---------------------------------------------------------------------------------------------
# IDX files (MNIST, Fashion-MNIST, KMNIST, EMNIST)


def emnist_splits(file_names: Iterable[str]) -> list[str]:
    """The EMNIST splits (sorted, known or not) that any of ``file_names`` belongs to (:data:`EMNIST_FILE`)."""
    return sorted({match.group(1) for match in map(EMNIST_FILE.fullmatch, file_names) if match})


def _idx_content(path: Path) -> np.ndarray:
    """The bytes of an IDX file as a 1-D uint8 array: decompressed in memory where the file is a gzip stream
    (its first bytes, not its name, decide), else memory-mapped."""
    with path.open("rb") as f:
        if f.read(len(GZIP_MAGIC)) == GZIP_MAGIC:
            f.seek(0)
            with gzip.GzipFile(fileobj=f) as stream:
                return np.frombuffer(stream.read(), np.uint8)
    return np.memmap(path, np.uint8, "r") if path.stat().st_size else np.zeros(0, np.uint8)  # mmap refuses 0 bytes


def read_idx_file(path: Path, ndim: int, what: str) -> np.ndarray:
    """The uint8 array of the IDX file ``path`` (raw or gzipped), shaped by its header: ``ndim`` dimensions
    (``what`` names them in errors, e.g. "N x H x W images").

    IDX (the format of the MNIST files, LeCun et al. 1998): magic number ``0x00 0x00 <type> <ndim>``, then
    ``ndim`` big-endian uint32 sizes, then the data, row-major.  A bad magic number, a type other than
    unsigned byte, another ``ndim``, a truncated header or data, or bytes after the data raise a ReaderError
    naming the file, what was expected and what was found.  A raw file is memory-mapped (read-only), a
    gzipped one decompressed in memory.
    """
    data = load_file(path, _idx_content, "IDX file")
    header = 4 + 4 * ndim
    magic = bytes(data[:4])
    if len(magic) < 4:
        raise ReaderError(path, f"truncated IDX header: {len(data)} bytes, expected at least 4 (the magic number)")
    if magic[:2] != b"\0\0":
        raise ReaderError(path, f"not an IDX file: magic number {magic.hex(' ')}, expected 00 00 08 {ndim:02x}")
    if magic[2] != IDX_UBYTE:
        found = IDX_TYPES.get(magic[2], "not an IDX type")
        raise ReaderError(path, f"IDX data type code 0x{magic[2]:02x} ({found}), expected 0x08 (unsigned byte)")
    if magic[3] != ndim:
        raise ReaderError(path, f"{magic[3]} dimensions in the IDX header, expected {ndim} ({what})")
    if len(data) < header:
        raise ReaderError(path, f"truncated IDX header: {len(data)} bytes, expected {header} (magic number and "
                                f"{ndim} sizes)")
    shape = tuple(int(size) for size in np.frombuffer(bytes(data[4:header]), ">u4"))
    expected, found = int(np.prod(shape)), len(data) - header
    if found != expected:
        problem = "truncated IDX data" if found < expected else f"{found - expected} bytes after the IDX data"
        sizes = " x ".join(map(str, shape))
        raise ReaderError(path, f"{problem}: the header's sizes {sizes} ({what}) take {expected} bytes, found {found}")
    return data[header:].reshape(shape)


def _idx_path(root: Path, name: str, emnist: str | None) -> Path:
    """``{root}/{name}`` if it is a file, else ``{name}.gz``; a ReaderError naming both when neither is."""
    for path in (root / name, root / f"{name}.gz"):
        if path.is_file():
            return path
    found = emnist_splits(os.listdir(root))
    hint = f"; the folder holds EMNIST files of splits {found}: give option emnist" if found and emnist is None else ""
    raise ReaderError(root / name, f"file not found (nor {name}.gz){hint}")


def read_idx(root: Path, split: str, name: str, *, emnist: object = None) -> ImageSet:
    """MNIST, Fashion-MNIST or KMNIST (:data:`IDX_FILES`), or with option ``emnist`` one EMNIST split, from
    IDX files, each gzipped or raw (the raw one where both exist).

    The grayscale images (uint8 N×H×W in the file) are returned as RGB uint8 N×H×W×3 whose three channels
    are one array (a read-only broadcast view: no copy; a raw file stays memory-mapped).  EMNIST stores each
    image transposed (rows and columns swapped against MNIST's); each is transposed back, upright as MNIST's.
    Labels: MNIST names 0..9; EMNIST the classes of :data:`EMNIST_SPLITS`, shifted to start at 0
    (``letters``: 1..26 become 0..25).  A label outside that range, or a label file of another length than
    the images', raises a ReaderError.  Ids ``"{file}:{index}"``, ``file`` the IDX name without ``.gz``.
    """
    if emnist is not None and not (isinstance(emnist, str) and emnist in EMNIST_SPLITS):
        found = emnist_splits(os.listdir(root))
        raise ReaderError(root, f"option emnist must be an EMNIST split, one of {list(EMNIST_SPLITS)}; got "
                                f"{emnist!r} (the folder holds EMNIST files of splits {found})")
    if emnist is None:
        (images_name, labels_name), (first, n_classes) = IDX_FILES[split], (0, IDX_N_CLASSES)
        classes = f"the {IDX_N_CLASSES} classes of MNIST, Fashion-MNIST and KMNIST"
    else:
        images_name, labels_name = (f"emnist-{emnist}-{split}-{kind}-ubyte" for kind in ("images-idx3", "labels-idx1"))
        first, n_classes = EMNIST_SPLITS[emnist]
        classes = f"the {n_classes} classes of EMNIST {emnist}"
    images_path = _idx_path(root, images_name, emnist)
    labels_path = _idx_path(root, labels_name, emnist)  # both files are known to exist before either is read
    gray = read_idx_file(images_path, 3, "N x H x W images")
    if 0 in gray.shape[1:]:
        raise ReaderError(images_path, f"images of {gray.shape[1]} x {gray.shape[2]} pixels, expected at least 1 x 1")
    labels = read_idx_file(labels_path, 1, "N labels")
    if len(labels) != len(gray):
        raise ReaderError(labels_path, f"{len(labels)} labels, but {images_path.name} holds {len(gray)} images: "
                                       "expected one label per image")
    last = first + n_classes - 1
    if len(labels) and (labels.min() < first or labels.max() > last):
        raise ReaderError(labels_path, f"labels must lie in {first}..{last} ({classes}), found "
                                       f"{labels.min()}..{labels.max()}")
    if emnist is not None:
        gray = gray.transpose(0, 2, 1)
    images = np.broadcast_to(gray[..., None], (*gray.shape, 3))
    return ArrayImageSet(name, images, labels.astype(np.int64) - first, _ids(images_name, np.arange(len(gray))))


# ---------------------------------------------------------------------------------------------
# Image folders (LSUN, iSUN, Places365, Textures)


def read_image_folder(root: Path, split: str, name: str) -> ImageSet:
    """Every image file under ``root`` (recursively), sorted by relative path, label ``-1``.

    ``split`` is ignored (one split).  Images are decoded to RGB uint8 H×W×3 on access.
    """
    paths = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if is_image_file(p) and p.is_file())
    if not paths:
        raise ReaderError(root, f"no image files (extensions {sorted(IMAGE_EXTENSIONS)}, any case)")
    return FileImageSet(name, root, np.full(len(paths), -1), np.array(paths))


# ---------------------------------------------------------------------------------------------
# .npy arrays (CIFAR-10-C / CIFAR-100-C and the csfbench native format)


def _mmap(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r")


def read_cifar_c(root: Path, split: str, name: str, *, corruption: object, severity: object) -> ImageSet:
    """One (corruption, severity) slice of CIFAR-10-C / CIFAR-100-C: 10000 RGB uint8 32×32 images.

    Options ``corruption`` (file stem) and ``severity`` (1..5).  The arrays are memory-mapped, so
    only the images read are loaded.  Labels are kept (covariate shift); ids ``"{file}:{row}"``.
    """
    path = root / f"{corruption}.npy"
    if not isinstance(severity, int) or isinstance(severity, bool) or not 1 <= severity <= N_SEVERITIES:
        raise ReaderError(path, f"severity must be an integer 1..{N_SEVERITIES}, got {severity!r}")
    if not isinstance(corruption, str) or not path.is_file():
        available = sorted(p.stem for p in root.glob("*.npy") if p.stem != "labels")
        raise ReaderError(path, f"unknown corruption {corruption!r}; available: {available}")
    images = _check_images(path, load_file(path, _mmap, ".npy array"), CIFAR_SIDE)
    if len(images) % N_SEVERITIES:
        raise ReaderError(path, f"{len(images)} rows is not {N_SEVERITIES} severities of equal size")
    labels_path = root / "labels.npy"
    labels = load_file(labels_path, _mmap, ".npy array")
    if labels.shape != (len(images),):
        problem = f"expected {len(images)} labels (one per row of {path.name}), got shape {labels.shape}"
        raise ReaderError(labels_path, problem)
    per_severity = len(images) // N_SEVERITIES
    rows = slice((severity - 1) * per_severity, severity * per_severity)
    labels = _check_labels(labels_path, labels[rows], per_severity, 0, np.iinfo(np.int64).max)
    return ArrayImageSet(name, images[rows], labels, _ids(path.name, np.arange(rows.start, rows.stop)))


def read_npy(root: Path, split: str, name: str) -> ImageSet:
    """csfbench native arrays: ``{split}/images.npy`` (N×H×W×3 uint8) and ``{split}/labels.npy``.

    Labels are int64, ``-1`` allowed.  Memory-mapped; ids are the row indices ``"0"``, ``"1"``, ...
    """
    folder = require_directory(root / split)
    images_path, labels_path = folder / "images.npy", folder / "labels.npy"
    require_file(labels_path)  # both files are known to exist before either is opened
    images = _check_images(images_path, load_file(images_path, _mmap, ".npy array"))
    labels = load_file(labels_path, _mmap, ".npy array")
    labels = _check_labels(labels_path, labels, len(images), -1, np.iinfo(np.int64).max)
    return ArrayImageSet(name, images, labels, np.arange(len(images)).astype(str))
