"""Readers of image lists and class-folder trees: the large-scale (ImageNet-scale) layouts.

* :func:`read_imglist`: an OpenOOD image list, lines ``relative/path [label]`` over an images root
  (Zhang et al., "OpenOOD v1.5: Enhanced Benchmark for Out-of-Distribution Detection", 2023).
* :func:`read_imagenet`: ILSVRC-2012 train and val (Russakovsky et al., "ImageNet Large Scale Visual
  Recognition Challenge", IJCV 2015), val as class folders or flat with ``LOC_val_solution.csv``.
* :func:`read_wnid_folders`: one folder per class, labelled through a wnid list or unlabelled:
  ImageNet-R, ImageNet-Sketch, ImageNet-OOD (Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering
  Modern Out-of-Distribution Detection Algorithms", ICLR 2024), SSB-hard, NINCO, Textures.
* :func:`read_imagenet_c`: ImageNet-C (Hendrycks & Dietterich, "Benchmarking Neural Network
  Robustness to Common Corruptions and Perturbations", ICLR 2019), one corruption and severity.
* :func:`read_iconic444`: ICONIC-444 (Krumpl, Avenhaus & Possegger, "ICONIC-444: Image
  Classification and OOD Detection with Numerous Intricate Complexities", 2026): manifest, the four
  tasks' ID splits with labels re-indexed per task, and the OOD lists.

Every reader returns a :class:`~csfbench.data.base.FileImageSet` (decoded lazily) whose
``sample_ids`` are paths relative to its ``root``, in a deterministic order (sorted by path), with
int64 labels (``-1`` = no label of the source).  As in :mod:`csfbench.data.readers`, a missing or
malformed file raises a :class:`~csfbench.data.readers.ReaderError` naming the path and the problem
(line numbers for list files); the registry (:mod:`csfbench.data.formats`) adds the dataset name
and the expected layout.  :func:`imagenet_train_subset` and :func:`write_imglist` draw and record a
seeded subset of a train split (e.g. to fit CSF statistics, as ImageNet-OOD does with 200k images).
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from pathlib import Path, PurePosixPath
from typing import Iterable

import numpy as np

from csfbench.atomic import atomic_path
from csfbench.data.base import FileImageSet, ImageSet
from csfbench.data.readers import (
    N_SEVERITIES,
    ReaderError,
    image_files,
    is_image_file,
    load_file,
    require_directory,
    require_file,
)

WNID = re.compile(r"n\d{8}")
#: a label of a list file: decimal ASCII digits, optionally signed (not int()'s ``1_0`` or other scripts' digits)
LABEL = re.compile(r"[+-]?[0-9]+")
#: the largest label of a list without a class bound: labels are stored as int64
LABEL_MAX = int(np.iinfo(np.int64).max)
#: keys of the ``expect`` option: image count, class count (distinct folders holding the images)
#: and, for a list file, its SHA-256.
EXPECT_KEYS = ("n_images", "n_classes", "sha256")
LOC_VAL_HEADER = ["ImageId", "PredictionString"]
#: ICONIC-444 tasks and their number of ID classes (Krumpl et al. 2026, Table 2)
ICONIC_TASKS = {"almond": 7, "wheat": 12, "kernels": 29, "food_grade": 324}
ICONIC_N_CLASSES = 444
ICONIC_MANIFEST_COLUMNS = (
    "image_id", "rel_path", "class_name", "class_idx", "group", "category",
    "has_manual_defect", "is_food_grade", "width", "height",
)  # fmt: skip
ICONIC_OOD_NAME = re.compile(r"[a-z0-9_]+")

Sample = tuple[str, int]  # (path relative to the image set's root, label)


# ---------------------------------------------------------------------------------------------
# Shared helpers


def _path_option(root: Path, key: str, value: object) -> Path:
    """The path given by option ``key``: absolute, or relative to the dataset root."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise ReaderError(root, f"option '{key}' must be a path (absolute or relative to the dataset root), "
                                f"got {value!r}")
    path = Path(value)
    return path if path.is_absolute() else root / path


def _text(path: Path) -> str:
    """The text of ``path`` (UTF-8, a leading byte-order mark dropped)."""
    return load_file(path, lambda p: p.read_text(encoding="utf-8-sig"), "UTF-8 text file")


def read_wnids(path: Path) -> list[str]:
    """The WordNet ids of a class list, in file order: one per line, the first whitespace-separated
    token (``imagenet-classes.txt``, timm's ``imagenet_synsets.txt`` and ``LOC_synset_mapping.txt``,
    whose lines continue with the class names, all qualify).  Label = index among the non-empty lines."""
    wnids: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        wnid = line.split()[0]
        if not WNID.fullmatch(wnid):
            raise ReaderError(path, f"line {number}: expected a WordNet id (n and 8 digits), optionally followed "
                                    f"by a name; got {line!r}")
        if wnid in seen:
            raise ReaderError(path, f"line {number}: wnid '{wnid}' already on line {seen[wnid]}")
        seen[wnid] = number
        wnids.append(wnid)
    if not wnids:
        raise ReaderError(path, "no WordNet ids")
    return wnids


def _subfolders(folder: Path) -> list[str]:
    """Names of the visible subfolders of ``folder``, sorted."""
    return sorted(entry.name for entry in os.scandir(folder) if entry.is_dir() and not entry.name.startswith("."))


def _loose_image(folder: Path) -> Path | None:
    """The first image file directly inside ``folder`` (sorted), if any."""
    files = sorted(e.name for e in os.scandir(folder) if e.is_file() and is_image_file(Path(e.name)))
    return folder / files[0] if files else None


def _class_tree(base: Path, folder: Path, label_of: dict[str, int] | None, wnid_names: bool,
                classes_from: str = "") -> list[Sample]:
    """(path relative to ``base``, label) of every image under the class folders ``folder/{class}/``.

    ``label_of`` maps a folder name to its label (a name missing from it is an unknown wnid of
    ``classes_from``).  Without it the label is the index of the folder in the sorted folder names
    when ``wnid_names``, else -1.  With ``wnid_names`` every folder must be named by a WordNet id.
    An image outside the class folders, a class folder without images and a symbolic link that loops or
    leads to a folder already indexed (:func:`~csfbench.data.readers.image_files`) are errors.
    """
    names = _subfolders(folder)
    if not names:
        raise ReaderError(folder, "no class folders")
    loose = _loose_image(folder)
    if loose is not None:
        raise ReaderError(loose, "image outside the class folders (expected {class}/<image>)")
    for name in names:
        if wnid_names and not WNID.fullmatch(name):
            raise ReaderError(folder / name, f"class folder '{name}' is not named by a WordNet id (n and 8 digits)")
        if label_of is not None and name not in label_of:
            raise ReaderError(folder / name, f"unknown wnid '{name}': not among the {len(label_of)} classes of "
                                             f"{classes_from}")
    if label_of is None and wnid_names:
        label_of = {name: index for index, name in enumerate(names)}
    samples: list[Sample] = []
    visited: dict[tuple[int, int], str] = {}  # one tree: a folder reached from two class folders is refused
    for name in names:
        files = image_files(folder / name, base, visited)
        if not files:
            raise ReaderError(folder / name, f"no images in class folder '{name}'")
        label = -1 if label_of is None else label_of[name]
        samples += [(path, label) for path in files]
    return samples


def _file_set(name: str, root: Path, samples: list[Sample], sort: bool = True) -> FileImageSet:
    samples = sorted(samples) if sort else samples
    return FileImageSet(name, root, np.array([s[1] for s in samples], dtype=np.int64),
                        np.array([s[0] for s in samples], dtype=str))


def _n_folders(paths: Iterable[str]) -> int:
    """Number of distinct folders holding ``paths`` (the wnid folders of ``imagenetood.txt``)."""
    return len({PurePosixPath(p).parent for p in paths})


def _check_expect(path: Path, expect: object, n_images: int, n_classes: int, list_file: Path | None = None) -> None:
    """Check the ``expect`` option: a mapping with any of ``n_images``, ``n_classes`` and, for a list
    file, ``sha256``, against what was found; a difference names both values."""
    if expect is None:
        return
    allowed = EXPECT_KEYS if list_file is not None else EXPECT_KEYS[:2]
    if not isinstance(expect, dict) or not expect or set(expect) - set(allowed):
        raise ReaderError(path, f"option 'expect' must be a mapping with keys among {list(allowed)}, got {expect!r}")
    for key in ("n_images", "n_classes"):
        value = expect.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ReaderError(path, f"expect.{key} must be a positive integer, got {value!r}")
    found = {"n_images": n_images, "n_classes": n_classes}
    if "sha256" in expect:
        found["sha256"] = hashlib.sha256(list_file.read_bytes()).hexdigest()
        if not isinstance(expect["sha256"], str):
            raise ReaderError(path, f"expect.sha256 must be a hex string, got {expect['sha256']!r}")
        expect = {**expect, "sha256": expect["sha256"].lower()}
    wrong = [f"{key} {expect[key]} expected, {found[key]} found" for key in allowed
             if key in expect and expect[key] != found[key]]
    if wrong:
        raise ReaderError(list_file or path, "count mismatch: " + "; ".join(wrong))


def _parse_list(path: Path, label_high: int | None, require_label: bool) -> list[tuple[int, str, int]]:
    """(line number, relative path, label) of every non-empty line ``relative/path [label]``.

    A missing label is -1 (unless ``require_label``); a label is a plain decimal integer (ASCII digits,
    an optional sign) in -1..label_high (when None, the largest int64 :data:`LABEL_MAX`, the labels'
    dtype).  Paths must be relative, without ``..``, and listed once.
    """
    entries = []
    seen: dict[str, int] = {}
    for number, line in enumerate(_text(path).splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        form = "'relative/path label'" if require_label else "'relative/path' or 'relative/path label'"
        if len(tokens) > 2 or (require_label and len(tokens) != 2):
            raise ReaderError(path, f"line {number}: expected {form}, got {line!r}")
        relative = tokens[0]
        parts = PurePosixPath(relative).parts
        if relative.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", relative):
            raise ReaderError(path, f"line {number}: the image path must be relative, without '..', got {relative!r}")
        if len(tokens) == 2 and not LABEL.fullmatch(tokens[1]):
            raise ReaderError(path, f"line {number}: label {tokens[1]!r} is not an integer")
        label = int(tokens[1]) if len(tokens) == 2 else -1
        high = LABEL_MAX if label_high is None else label_high
        if not -1 <= label <= high:
            raise ReaderError(path, f"line {number}: label {label} out of range -1..{high}")
        if relative in seen:
            raise ReaderError(path, f"line {number}: '{relative}' already listed on line {seen[relative]}")
        seen[relative] = number
        entries.append((number, relative, label))
    if not entries:
        raise ReaderError(path, "no image lines")
    return entries


def _require_listed(images_root: Path, list_path: Path, entries: list[tuple[int, str, int]]) -> None:
    """Every listed image exists under ``images_root``."""
    for number, relative, _ in entries:
        if not (images_root / relative).is_file():
            raise ReaderError(images_root / relative, f"image listed on line {number} of {list_path} not found")


# ---------------------------------------------------------------------------------------------
# OpenOOD image lists


def read_imglist(root: Path, split: str, name: str, *, imglist: object, images: object = None,
                 expect: object = None) -> ImageSet:
    """An OpenOOD image list: lines ``relative/path label`` over the images root.

    ``imglist`` and ``images`` (default: the dataset root) are paths absolute or relative to the
    dataset root.  The label is a decimal integer in -1..2**63 - 1 (labels are int64; any other label
    is an error naming the list and line); ``-1`` (OpenOOD's OOD lists) and a missing label
    (ImageNet-OOD's ``imagenetood.txt``) both mean no label.  ``expect`` checks ``n_images``,
    ``n_classes`` (distinct folders holding the images) and the list's ``sha256``.  With one list
    ``split`` is ignored (one split); ``imglist`` may also map splits to lists (``{train: ..., test:
    ...}``: an ID source's splits, e.g. OpenOOD's ``train_cifar10.txt`` and ``test_cifar10.txt``), and
    ``split`` then picks one.  Samples sorted by path, ids = the listed paths.
    """
    if isinstance(imglist, dict):
        if split not in imglist:
            raise ReaderError(root, f"option imglist maps the splits {sorted(imglist)}, not split '{split}'")
        imglist = imglist[split]
    list_path = require_file(_path_option(root, "imglist", imglist))
    images_root = require_directory(root if images is None else _path_option(root, "images", images))
    entries = _parse_list(list_path, None, require_label=False)
    _require_listed(images_root, list_path, entries)
    samples = [(relative, label) for _, relative, label in entries]
    _check_expect(list_path, expect, len(samples), _n_folders(s[0] for s in samples), list_file=list_path)
    return _file_set(name, images_root, samples)


# ---------------------------------------------------------------------------------------------
# Class-folder trees: wnid folders (ImageNet-R, -Sketch, ImageNet-OOD, SSB-hard, NINCO, ...), ImageNet-C


def _wnid_labels(root: Path, wnids: object) -> tuple[dict[str, int], str]:
    path = _path_option(root, "wnids", wnids)
    return {wnid: label for label, wnid in enumerate(read_wnids(path))}, str(path)


def read_wnid_folders(root: Path, split: str, name: str, *, wnids: object = None, expect: object = None,
                      rendition: object = None) -> ImageSet:
    """One folder per class, ``{root}/{class}/**/image``; ``split`` is ignored (one split).

    With option ``wnids`` (a class list, see :func:`read_wnids`) the folders are WordNet ids of that
    list and label = its line index (ImageNet-R and ImageNet-Sketch against the sorted 1000 ImageNet
    wnids); without it every label is -1 and folder names are free (ImageNet-OOD, SSB-hard, NINCO,
    Textures).  ``expect`` checks ``n_images`` and ``n_classes`` of the whole folder (ImageNet-OOD: 31802
    and 637).  ``rendition`` keeps the images whose file name starts with ``{rendition}_`` (ImageNet-R's
    ``art_0.jpg``, ``cartoon_12.jpg``, …): one rendition as a set of its own, whose name reaches the
    ``rendition`` column of its metric rows.
    """
    label_of, source = _wnid_labels(root, wnids) if wnids is not None else (None, "")
    samples = _class_tree(root, root, label_of, wnid_names=False, classes_from=source)
    _check_expect(root, expect, len(samples), len({s[0].split("/", 1)[0] for s in samples}))
    if rendition is not None:
        samples = _of_rendition(root, samples, rendition)
    return _file_set(name, root, samples)


def _of_rendition(root: Path, samples: list[Sample], rendition: object) -> list[Sample]:
    """The samples whose file name starts with ``{rendition}_`` (ReaderError naming the renditions found when
    none does)."""
    if not isinstance(rendition, str) or not rendition or "/" in rendition:
        raise ReaderError(root, f"option rendition must be a file-name prefix such as 'cartoon', got {rendition!r}")
    kept = [s for s in samples if s[0].rsplit("/", 1)[-1].startswith(f"{rendition}_")]
    if not kept:
        found = sorted({s[0].rsplit("/", 1)[-1].split("_", 1)[0] for s in samples if "_" in s[0].rsplit("/", 1)[-1]})
        raise ReaderError(root, f"no image of rendition {rendition!r} (file names '{rendition}_*'); "
                                f"the file-name prefixes found: {found[:20]}")
    return kept


def read_imagenet_c(root: Path, split: str, name: str, *, corruption: object, severity: object,
                    wnids: object = None) -> ImageSet:
    """One (corruption, severity) folder of ImageNet-C: ``{root}/{corruption}/{severity}/{wnid}/*.JPEG``.

    Label = line index in the ``wnids`` list, else index of the wnid in the sorted class folders of
    that severity folder.  Ids ``{corruption}/{severity}/{wnid}/{file}`` carry the group keys.
    """
    if not isinstance(severity, int) or isinstance(severity, bool) or not 1 <= severity <= N_SEVERITIES:
        raise ReaderError(root / str(corruption), f"severity must be an integer 1..{N_SEVERITIES}, got {severity!r}")
    available = _subfolders(root)
    if not isinstance(corruption, str) or corruption not in available:
        raise ReaderError(root / str(corruption), f"unknown corruption {corruption!r}; available: {available}")
    folder = root / corruption / str(severity)
    if not folder.is_dir():
        raise ReaderError(folder, f"severity folder not found; available: {_subfolders(root / corruption)}")
    label_of, source = _wnid_labels(root, wnids) if wnids is not None else (None, "")
    return _file_set(name, root, _class_tree(root, folder, label_of, wnid_names=True, classes_from=source))


# ---------------------------------------------------------------------------------------------
# ILSVRC-2012


def _imagenet_classes(root: Path, wnids: object) -> tuple[dict[str, int], str]:
    """wnid -> label: the ``wnids`` list, else the sorted class folders of train/, else of val/."""
    if wnids is not None:
        return _wnid_labels(root, wnids)
    for folder in (root / "train", root / "val"):
        names = _subfolders(folder) if folder.is_dir() else []
        if names:
            for wnid in names:
                if not WNID.fullmatch(wnid):
                    raise ReaderError(folder / wnid, f"class folder '{wnid}' is not named by a WordNet id "
                                                     "(n and 8 digits)")
            return {wnid: label for label, wnid in enumerate(names)}, f"the class folders of {folder}"
    raise ReaderError(root / "train", "no class list: neither train/ nor val/ holds class folders; "
                                      "give option 'wnids' (e.g. LOC_synset_mapping.txt)")


def _flat_val(root: Path, val: Path, csv_path: Path, label_of: dict[str, int], source: str) -> list[Sample]:
    """The flat val/ images labelled by ``LOC_val_solution.csv`` (first token of PredictionString)."""
    files = {}
    for entry in os.scandir(val):
        if entry.is_file() and is_image_file(Path(entry.name)):
            files[Path(entry.name).stem] = entry.name
    lines = _text(require_file(csv_path)).splitlines()
    rows = list(csv.reader(lines))
    if not rows or [cell.strip() for cell in rows[0]] != LOC_VAL_HEADER:
        found = lines[0] if lines else ""
        raise ReaderError(csv_path, f"line 1: expected the header '{','.join(LOC_VAL_HEADER)}', got {found!r}")
    samples: list[Sample] = []
    listed: dict[str, int] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        tokens = row[1].split() if len(row) == 2 else []
        if not tokens or not row[0].strip():
            raise ReaderError(csv_path, f"line {number}: expected 'ImageId,wnid x0 y0 x1 y1 ...', "
                                        f"got {lines[number - 1]!r}")
        image_id, wnid = row[0].strip(), tokens[0]
        if wnid not in label_of:
            raise ReaderError(csv_path, f"line {number}: unknown wnid '{wnid}': not among the {len(label_of)} "
                                        f"classes of {source}")
        if image_id in listed:
            raise ReaderError(csv_path, f"line {number}: ImageId '{image_id}' already on line {listed[image_id]}")
        listed[image_id] = number
        if image_id not in files:
            raise ReaderError(val / f"{image_id}.JPEG", f"image listed on line {number} of {csv_path} not found")
        samples.append(((val / files[image_id]).relative_to(root).as_posix(), label_of[wnid]))
    unlisted = sorted(set(files) - set(listed))
    if not samples or unlisted:
        raise ReaderError(val, f"count mismatch: {len(files)} images in val/, {len(listed)} listed in {csv_path}; "
                               f"not listed: {unlisted[:5]}{' ...' if len(unlisted) > 5 else ''}")
    return samples


def read_imagenet(root: Path, split: str, name: str, *, wnids: object = None, val_solution: object = None,
                  train_subset: object = None) -> ImageSet:
    """ILSVRC-2012: split "train" = ``train/{wnid}/*.JPEG``, split "test" = the official val split.

    Val is either class folders ``val/{wnid}/*.JPEG`` or flat ``val/*.JPEG`` labelled by
    ``LOC_val_solution.csv`` (option ``val_solution``, default ``{root}/LOC_val_solution.csv``).
    Label = line index in the ``wnids`` list, else the index of the wnid among the sorted class
    folders of train/ (of val/ when there is no train/), the same for both splits.  ``train_subset``
    (``{seed, n}`` or ``{seed, per_class}``) makes split "train" a seeded subset
    (:func:`imagenet_train_subset`; ImageNet-OOD fits its detectors on 200,000 training images).
    """
    label_of, source = _imagenet_classes(root, wnids)
    if split == "train":
        samples = _class_tree(root, require_directory(root / "train"), label_of, True, source)
        if train_subset is not None:
            if not isinstance(train_subset, dict) or set(train_subset) - {"seed", "n", "per_class"}:
                raise ReaderError(root, f"option train_subset must be {{seed, n}} or {{seed, per_class}}, got "
                                        f"{train_subset!r}")
            try:
                return imagenet_train_subset(_file_set(name, root, samples), **train_subset)
            except (TypeError, ValueError) as err:
                raise ReaderError(root, f"option train_subset: {err}") from None
    else:
        val = require_directory(root / "val")
        if _subfolders(val):
            samples = _class_tree(root, val, label_of, True, source)
        else:
            csv_path = root / "LOC_val_solution.csv" if val_solution is None else \
                _path_option(root, "val_solution", val_solution)
            samples = _flat_val(root, val, csv_path, label_of, source)
    return _file_set(name, root, samples)


def imagenet_train_subset(images: ImageSet, *, seed: int, per_class: int | None = None,
                          n: int | None = None) -> ImageSet:
    """A seeded random subset of a (train) image set, e.g. to fit CSF statistics.

    Exactly one of ``per_class`` (that many images of each class, all of a smaller class) and ``n``
    (``n`` images drawn uniformly, as ImageNet-OOD's 200k fit subset of Yang et al. 2024) is given.
    The subset keeps the parent's order; its ``sample_ids`` record what was taken (write them with
    :func:`write_imglist`), and its name records the draw.
    """
    if (per_class is None) == (n is None):
        raise ValueError("give exactly one of per_class and n")
    size = per_class if n is None else n
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"{'per_class' if n is None else 'n'} must be a positive integer, got {size!r}")
    rng = np.random.default_rng(seed)
    if n is not None:
        if n > len(images):
            raise ValueError(f"n = {n} exceeds the {len(images)} images of '{images.name}'")
        chosen = rng.choice(len(images), size=n, replace=False)
        what = f"n{n}"
    else:
        labels = np.asarray(images.labels)
        chosen = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)])
        what = f"per_class{per_class}"
    return images.subset(np.sort(chosen), f"{images.name}-subset-{what}-seed{seed}")


def write_imglist(images: ImageSet, path: str | Path) -> Path:
    """Record ``images`` as an image list ``sample_id label`` per line (readable by the ``imglist``
    format over the root the sample ids are relative to); written atomically."""
    ids = np.asarray(images.sample_ids).astype(str)
    if any(len(s.split()) != 1 for s in ids):
        raise ValueError("sample ids with whitespace cannot be written to an image list")
    text = "".join(f"{s} {int(label)}\n" for s, label in zip(ids, images.labels))
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return Path(path)


# ---------------------------------------------------------------------------------------------
# ICONIC-444


def _iconic_manifest(root: Path, needed: set[str]) -> tuple[Path, dict[str, int]]:
    """The manifest (``manifest.csv`` or ``manifest.parquet``): its path and rel_path -> class_idx of ``needed``."""
    candidates = [root / "manifest.csv", root / "manifest.parquet"]
    present = [p for p in candidates if p.exists()]
    if len(present) != 1:
        problem = "both manifest.csv and manifest.parquet found; keep one" if present else \
            "file not found (nor manifest.parquet)"
        raise ReaderError(root / "manifest.csv", problem)
    path = require_file(present[0])
    import pandas as pd  # only ICONIC-444 needs pandas: keep it out of every other reader's import

    if path.suffix == ".csv":
        header = next(csv.reader(io.StringIO(load_file(path, _first_line, "CSV file"))), [])
        read = lambda p: pd.read_csv(p, usecols=["rel_path", "class_idx"], dtype={"rel_path": str})  # noqa: E731
    else:
        import pyarrow.parquet as pq

        header = load_file(path, lambda p: pq.read_schema(p).names, "parquet file")
        read = lambda p: pd.read_parquet(p, columns=["rel_path", "class_idx"])  # noqa: E731
    missing = [column for column in ICONIC_MANIFEST_COLUMNS if column not in header]
    if missing:
        raise ReaderError(path, f"missing columns {missing}; found {header}")
    table = load_file(path, read, "manifest")
    class_idx = table["class_idx"]
    if not pd.api.types.is_integer_dtype(class_idx) or class_idx.isna().any():
        raise ReaderError(path, f"column class_idx must hold integers 0..{ICONIC_N_CLASSES - 1}, "
                                f"found dtype {class_idx.dtype}")
    bad = np.flatnonzero((class_idx < 0) | (class_idx >= ICONIC_N_CLASSES))
    if len(bad):
        row = int(bad[0])
        raise ReaderError(path, f"data row {row + 1} ({table['rel_path'].iloc[row]!r}): class_idx "
                                f"{class_idx.iloc[row]} out of range 0..{ICONIC_N_CLASSES - 1}")
    duplicated = np.flatnonzero(table["rel_path"].duplicated().to_numpy())
    if len(duplicated):
        row = int(duplicated[0])
        raise ReaderError(path, f"data row {row + 1}: rel_path {table['rel_path'].iloc[row]!r} appears twice")
    used = table[table["rel_path"].isin(needed)]
    return path, dict(zip(used["rel_path"].tolist(), used["class_idx"].astype(int).tolist()))


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8-sig") as f:
        return f.readline()


def _iconic_lists(paths: list[Path]) -> list[tuple[Path, list[tuple[int, str, int]]]]:
    """The parsed lists ``paths``; no image may appear in two of them."""
    lists = [(path, _parse_list(require_file(path), ICONIC_N_CLASSES - 1, require_label=True)) for path in paths]
    seen: dict[str, Path] = {}
    for path, entries in lists:
        for number, relative, _ in entries:
            if relative in seen:
                raise ReaderError(path, f"line {number}: '{relative}' is also listed in {seen[relative]}")
            seen[relative] = path
    return lists


def read_iconic444(root: Path, split: str, name: str, *, task: object, ood: object = None) -> ImageSet:
    """One ICONIC-444 task (Krumpl et al. 2026): its ID splits, or one OOD list.

    Lists are OpenOOD image lists ``rel_path class_idx`` (the manifest's 0..443 class index, -1 allowed
    in OOD lists).  Without ``ood``: split "train" = ``{task}/train.txt``; split "test" =
    ``{task}/val.txt`` then ``{task}/test.txt`` (val_size = the number of val lines reproduces the
    official val/test split); labels re-indexed 0..C-1 in ascending class_idx order of the train
    classes (C = 7, 12, 29, 324).  With ``ood``: ``{task}/near.txt`` for "near", else ``{ood}.txt``
    (far, ood_val, extreme_*, synthetic_*), labels -1, split "test" only; no ID class of the task may
    appear.  Every listed path must exist under root and be in the manifest with the listed class,
    except OOD lines labelled -1 (external or generated images: extreme and synthetic OOD), which
    may be absent from it.  Within each list samples are sorted by path.
    """
    if task not in ICONIC_TASKS:
        raise ReaderError(root, f"unknown task {task!r}; ICONIC-444 tasks: {list(ICONIC_TASKS)}")
    if ood is not None and (not isinstance(ood, str) or not ICONIC_OOD_NAME.fullmatch(ood)):
        raise ReaderError(root, f"option 'ood' must be 'near' or the stem of a shared list such as 'far', got {ood!r}")
    if ood is not None and split == "train":
        raise ReaderError(root, f"OOD set '{ood}' has no train split; read split 'test'")
    task_dir = root / task
    if ood is None:
        more = [] if split == "train" else [task_dir / "val.txt", task_dir / "test.txt"]
        lists = _iconic_lists([task_dir / "train.txt", *more])
    else:
        ood_path = task_dir / "near.txt" if ood == "near" else root / f"{ood}.txt"
        lists = _iconic_lists([task_dir / "train.txt", ood_path])
    train_path, train = lists[0]
    id_classes = sorted({label for _, _, label in train})
    expected_c = ICONIC_TASKS[task]
    if any(label < 0 for _, _, label in train) or len(id_classes) != expected_c:
        raise ReaderError(train_path, f"task '{task}' has {expected_c} ID classes; the list holds "
                                      f"{len([c for c in id_classes if c >= 0])} distinct class_idx"
                                      f"{' and unlabelled (-1) lines' if id_classes[0] < 0 else ''}")
    used = lists[:1] if ood is None and split == "train" else lists[1:]
    needed = {relative for _, entries in used for _, relative, _ in entries}
    manifest, class_of = _iconic_manifest(root, needed)
    reindex = {c: i for i, c in enumerate(id_classes)}
    samples: list[Sample] = []
    for path, entries in used:
        block = []
        for number, relative, label in entries:
            if relative not in class_of:
                if ood is not None and label < 0:  # an external or generated image (extreme, synthetic)
                    block.append((relative, -1))
                    continue
                raise ReaderError(path, f"line {number}: '{relative}' is not in {manifest}")
            if label >= 0 and class_of[relative] != label:
                raise ReaderError(path, f"line {number}: class_idx {label} disagrees with the manifest's "
                                        f"{class_of[relative]} for '{relative}'")
            if ood is None and label not in reindex:
                raise ReaderError(path, f"line {number}: class_idx {label} is not an ID class of task '{task}' "
                                        f"(the classes of {train_path.name}: {id_classes})")
            if ood is not None and class_of[relative] in reindex:
                raise ReaderError(path, f"line {number}: class_idx {class_of[relative]} of OOD set '{ood}' is an "
                                        f"ID class of task '{task}'")
            block.append((relative, -1 if ood is not None else reindex[label]))
        _require_listed(root, path, entries)
        samples += sorted(block)
    return _file_set(name, root, samples, sort=False)
