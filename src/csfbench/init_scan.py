"""The data-folder scan of ``csfbench init`` (:mod:`csfbench.init_config`): which datasets a folder holds.

The folder is scanned one level deep, and two levels where a first-level folder is no dataset of its
own (a folder grouping several datasets, e.g. ``ood/isun``, ``ood/lsun``).  Each folder is tried
against the on-disk layouts of :data:`csfbench.data.formats.FORMATS`: a few file names decide which
layout to try (``data_batch_1`` → ``cifar10``, ``*_32x32.mat`` → ``svhn``, ``benchmark_imglist/`` →
``imglist``, ...), and the format's own reader (:func:`~csfbench.data.formats.open_dataset`) then
decides, so a folder that looks like a layout but breaks it is reported with the reader's problem.
:func:`scan` returns the findings (:class:`Scan`); :mod:`csfbench.init_config` turns them into a config.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from csfbench.data.base import ArrayImageSet, FileImageSet, ImageSet
from csfbench.data.formats import open_dataset
from csfbench.data.list_readers import ICONIC_TASKS, WNID, read_wnids
from csfbench.data.readers import IMAGE_EXTENSIONS, ReaderError
from csfbench.errors import CsfbenchError, DatasetError
from csfbench.settings import SPLITS, schema

#: the dataset naming rule (the schema's `name` pattern)
NAME_RULE = re.compile(schema()["definitions"]["name"]["pattern"])
#: the input side of a VGG-13 must be a multiple of 32; larger images are brought down to this for CPU runs
MAX_SIDE = 64
#: the validation split: the first images of the official test split (at most this many, and a fifth of it)
MAX_VAL_SIZE = 1000
#: images decoded to estimate the normalisation of a source
STAT_SAMPLES = 256
#: severity proposed for a corruption set: one set per corruption (another severity is one more catalogue line)
SEVERITY = 3
#: normalisations of well-known training sets (those of config/paper.yaml and of torchvision's ImageNet)
KNOWN_NORMALIZE = {
    "cifar10": {"mean": [0.4914, 0.4822, 0.4465], "std": [0.2023, 0.1994, 0.2010]},
    "cifar100": {"mean": [0.4914, 0.4822, 0.4465], "std": [0.2023, 0.1994, 0.2010]},
    "imagenet": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]},
}
#: the formats whose datasets can be sources (labelled official train and test splits)
SOURCE_FORMATS = ("cifar10", "cifar100", "svhn", "tinyimagenet", "npy", "imagenet", "iconic444",
                  "imglist (OpenOOD's train and test lists)")
#: canonical dataset names of the formats that hold one well-known dataset
CANONICAL = {"cifar10": "cifar10", "cifar100": "cifar100", "svhn": "svhn", "tinyimagenet": "tinyimagenet",
             "imagenet": "imagenet"}
OPENOOD_IMAGE_ROOTS = ("images_classic", "images_largescale", ".")
LIST_ROLE = re.compile(r"^(train|val|test)_(.+)$")


@dataclass
class Found:
    """A dataset found on disk, before it is given a role."""

    hints: list[str]  # candidate names, preferred first (made valid by :func:`dataset_name`)
    format: str
    path: str  # relative to DATA_ROOT, POSIX
    options: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)  # split ("train", "test", or "" for one split) -> images
    labels: str = "labelled"  # labelled, unlabelled or mixed (labels of the split read)
    n_classes: int | None = None  # classes of a source candidate (train labels 0..C-1)
    side: int | None = None  # typical image side in pixels
    normalize: dict | None = None
    val_size: int | None = None
    kind: str = "shift"  # source, shift (semantic OOD), corruption (covariate of a family), ood_val, unused
    split: str = "test"  # official split read when evaluated as a shift
    family: str | None = None  # corruption family (cifar10, cifar100, imagenet) / OpenOOD benchmark / iconic key
    wnids: frozenset | None = None  # the wnids of a wnid-folder or ImageNet-C set, of an ImageNet source
    note: str = ""
    role: str = ""  # an OpenOOD list's role: train, val or test (its file name's prefix)
    name: str = ""
    shift_of: dict = field(default_factory=dict)  # source name -> shift type (filled by propose)

    @property
    def where(self) -> str:
        detail = self.options.get("imglist") or ""
        if isinstance(detail, dict):
            detail = ", ".join(f"{split} {path}" for split, path in detail.items())
        if "corruption" in self.options:
            detail = f"{self.options['corruption']}, severity {self.options['severity']}"
        if "ood" in self.options:
            detail = f"task {self.options['task']}, list {self.options['ood']}"
        elif "task" in self.options:
            detail = f"task {self.options['task']}"
        return f"{self.path}" + (f" ({detail})" if detail else "")


@dataclass
class Skipped:
    """A folder or file that is not a usable dataset, and why."""

    path: str
    reason: str


@dataclass
class Scan:
    data_root: Path
    found: list[Found]
    skipped: list[Skipped]  # could not be classified
    unused: list[Found]  # classified, but neither a source nor an evaluation set (reason in note)

    @property
    def sources(self) -> list[Found]:
        return [f for f in self.found if f.kind == "source"]


# ---------------------------------------------------------------------------------------------
# names


def dataset_name(text: str) -> str:
    """``text`` (a folder name, a list's stem) as a valid dataset name: lower case, every run of other
    characters than ``a-z0-9.-`` one ``-``, no leading ``.``/``-``; the ID split names get ``-set``."""
    name = re.sub(r"[^a-z0-9.-]+", "-", text.lower())
    name = re.sub(r"-{2,}", "-", name).lstrip(".-").rstrip("-.") or "dataset"
    return f"{name}-set" if name in SPLITS else name


def _assign_names(found: list[Found]) -> None:
    taken: set[str] = set()
    for item in found:
        hints = [dataset_name(h) for h in item.hints] + [dataset_name(item.path.replace("/", "-"))]
        name = next((h for h in hints if h not in taken), None)
        if name is None:
            k = 2
            while f"{hints[0]}-{k}" in taken:
                k += 1
            name = f"{hints[0]}-{k}"
        assert NAME_RULE.fullmatch(name), name
        item.name = name
        taken.add(name)


# ---------------------------------------------------------------------------------------------
# reading through the registry


def _open(fmt: str, folder: Path, split: str, **options) -> ImageSet:
    return open_dataset(fmt, folder, split, folder.name or "dataset", **options)


def _reason(fmt: str, err: DatasetError) -> str:
    return f"looks like format '{fmt}' but its reader refused it: {err.problem} (path {err.path})"


def _sample(n: int, k: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, num=min(n, k)).round().astype(int)) if n else np.array([], int)


def _side(images: ImageSet) -> int | None:
    """The median side (mean of height and width) of a few images; file headers only for image files."""
    if isinstance(images, ArrayImageSet):
        return int(round((images.images.shape[1] + images.images.shape[2]) / 2))
    sides = []
    for i in _sample(len(images), 16):
        if isinstance(images, FileImageSet):
            try:
                with Image.open(images.root / images.sample_ids[i]) as img:
                    sides.append(sum(img.size) / 2)
            except OSError:
                continue
        else:
            sides.append(sum(images.image(int(i)).shape[:2]) / 2)
    return int(np.median(sides)) if sides else None


def _normalize(images: ImageSet) -> dict:
    """Per-channel mean and std of the pixels (in [0, 1]) of up to :data:`STAT_SAMPLES` images."""
    total, squares, count = np.zeros(3), np.zeros(3), 0
    for i in _sample(len(images), STAT_SAMPLES):
        try:
            pixels = images.image(int(i)).reshape(-1, 3).astype(np.float64) / 255.0
        except OSError:  # a file that is no image: the dataset index names it when the workflow runs
            continue
        total += pixels.sum(0)
        squares += (pixels ** 2).sum(0)
        count += len(pixels)
    mean = total / max(count, 1)
    std = np.sqrt(np.maximum(squares / max(count, 1) - mean ** 2, 0.0))
    return {"mean": [round(float(v), 4) for v in mean], "std": [round(max(float(v), 1e-3), 4) for v in std]}


def _label_kind(labels: np.ndarray) -> str:
    if (labels >= 0).all():
        return "labelled"
    return "unlabelled" if (labels == -1).all() else "mixed"


def _source(item: Found, train: ImageSet, test: ImageSet, n_classes: int | None = None,
            val_size: int | None = None) -> Found:
    """``item`` as a source candidate (train and test read), or a shift set with the reason in its note."""
    item.sizes = {"train": len(train), "test": len(test)}
    train_kind, test_kind = _label_kind(train.labels), _label_kind(test.labels)
    item.side = _side(train)
    if train_kind != "labelled" or test_kind != "labelled":
        item.labels = test_kind if test_kind != "labelled" else train_kind
        item.note = "not a source: its labels are not all >= 0"
        return item
    present = np.unique(train.labels)
    classes = n_classes or int(present.max()) + 1
    if not np.array_equal(present, np.arange(classes)) or classes < 2:
        missing = np.setdiff1d(np.arange(classes), present)[:10].tolist()
        item.note = (f"not a source: its training labels are not the classes 0..{classes - 1} each with an image "
                     f"(missing: {missing})")
        return item
    val = val_size if val_size is not None else min(MAX_VAL_SIZE, len(test) // 5)
    if val < 1 or val >= len(test):
        item.note = f"not a source: its test split ({len(test)} images) is too small for a validation split"
        return item
    item.kind, item.n_classes, item.val_size = "source", classes, val
    item.normalize = KNOWN_NORMALIZE.get(item.format) or _normalize(train)
    return item


# ---------------------------------------------------------------------------------------------
# layouts: each returns None when its marker files are absent, else what it found and refused


def _files(folder: Path) -> set[str]:
    return {e.name for e in os.scandir(folder) if e.is_file()}


def _dirs(folder: Path) -> list[str]:
    return sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))


Result = list  # of Found and Skipped


def _two_splits(fmt: str, folder: Path, rel: str, hints: list[str], **options) -> Result:
    """A format with official train and test splits; one split alone is an evaluation set of that split."""
    item = Found(hints, fmt, rel, dict(options))
    opened, refused = {}, {}
    for split in ("train", "test"):
        try:
            opened[split] = _open(fmt, folder, split, **options)
        except DatasetError as err:
            refused[split] = err
    if len(opened) == 2:
        return [_source(item, opened["train"], opened["test"])]
    if not opened:
        return [Skipped(rel, _reason(fmt, refused["test"]))]
    split, images = next(iter(opened.items()))
    other = "test" if split == "train" else "train"
    item.sizes, item.split, item.side = {split: len(images)}, split, _side(images)
    item.labels = _label_kind(images.labels)
    item.note = f"not a source: split '{other}' unreadable ({refused[other].problem}); evaluated on split '{split}'"
    return [item]


def _cifar10(folder: Path, rel: str, files: set[str]) -> Result | None:
    if not {"data_batch_1", "test_batch"} & files:
        return None
    return _two_splits("cifar10", folder, rel, [CANONICAL["cifar10"]])


def _cifar100(folder: Path, rel: str, files: set[str]) -> Result | None:
    if "meta" not in files or not {"train", "test"} & files:
        return None
    result = _two_splits("cifar100", folder, rel, [CANONICAL["cifar100"]])
    for item in result:
        if isinstance(item, Found) and item.kind == "source":
            item.note = "also readable as SuperCIFAR-100 (format supercifar100, 19 superclasses)"
    return result


def _svhn(folder: Path, rel: str, files: set[str]) -> Result | None:
    if not {"train_32x32.mat", "test_32x32.mat"} & files:
        return None
    return _two_splits("svhn", folder, rel, [CANONICAL["svhn"]])


def _tinyimagenet(folder: Path, rel: str, files: set[str]) -> Result | None:
    if "wnids.txt" not in files or not {"train", "val"} & set(_dirs(folder)):
        return None
    return _two_splits("tinyimagenet", folder, rel, [CANONICAL["tinyimagenet"]])


def _npy(folder: Path, rel: str, files: set[str]) -> Result | None:
    if not any((folder / split / "images.npy").is_file() for split in ("train", "test")):
        return None
    return _two_splits("npy", folder, rel, [folder.name])


def _cifar_c(folder: Path, rel: str, files: set[str]) -> Result | None:
    stems = sorted(Path(f).stem for f in files if f.endswith(".npy") and f != "labels.npy")
    if "labels.npy" not in files or not stems:
        return None
    out: Result = []
    for corruption in stems:
        try:
            images = _open("cifar_c", folder, "test", corruption=corruption, severity=SEVERITY)
        except DatasetError as err:
            out.append(Skipped(f"{rel}/{corruption}.npy", _reason("cifar_c", err)))
            continue
        family = "cifar100" if "100" in folder.name or images.labels.max() >= 10 else "cifar10"
        base = dataset_name(folder.name).replace("-", "")
        out.append(Found([f"{base}-{corruption}-{SEVERITY}"], "cifar_c", rel,
                         {"corruption": corruption, "severity": SEVERITY}, {"test": len(images)}, side=32,
                         kind="corruption", family=family))
    return out


def _iconic444(folder: Path, rel: str, files: set[str]) -> Result | None:
    if not {"manifest.csv", "manifest.parquet"} & files:
        return None
    out: Result = []
    shared = sorted(Path(f).stem for f in files if f.endswith(".txt") and re.fullmatch(r"[a-z0-9_]+", Path(f).stem))
    tasks = [t for t in ICONIC_TASKS if (folder / t / "train.txt").is_file()]
    if not tasks:
        return [Skipped(rel, "an ICONIC-444 manifest without a task folder holding train.txt "
                             f"(tasks: {', '.join(ICONIC_TASKS)})")]
    for task in tasks:
        item = Found([f"iconic444-{task}"], "iconic444", rel, {"task": task})
        try:
            train, test = (_open("iconic444", folder, s, task=task) for s in ("train", "test"))
        except DatasetError as err:
            out.append(Skipped(f"{rel}/{task}", _reason("iconic444", err)))
            continue
        val_lines = [line for line in (folder / task / "val.txt").read_text().splitlines() if line.strip()] \
            if (folder / task / "val.txt").is_file() else []
        out.append(_source(item, train, test, ICONIC_TASKS[task], len(val_lines) or None))
        lists = (["near"] if (folder / task / "near.txt").is_file() else []) + shared
        for ood in lists:
            try:
                images = _open("iconic444", folder, "test", task=task, ood=ood)
            except DatasetError as err:
                out.append(Skipped(f"{rel}/{task}/near.txt" if ood == "near" else f"{rel}/{ood}.txt",
                                   _reason("iconic444", err)))
                continue
            out.append(Found([f"iconic444-{task}-{ood}"], "iconic444", rel, {"task": task, "ood": ood},
                             {"test": len(images)}, "unlabelled", side=_side(images),
                             kind="ood_val" if ood == "ood_val" else "shift", family=f"iconic444:{rel}:{task}"))
    return out


def _images_root(root: Path, relative: str) -> str | None:
    """The folder under ``root`` that an OpenOOD list's first path is relative to (``images_classic``, ...)."""
    for candidate in OPENOOD_IMAGE_ROOTS:
        if (root / candidate / relative).is_file():
            return candidate
    for directory, subdirs, _ in os.walk(root):
        depth = len(Path(directory).relative_to(root).parts)
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d != "benchmark_imglist") \
            if depth < 3 else []
        if (Path(directory) / relative).is_file():
            return Path(directory).relative_to(root).as_posix()
    return None


def _imglist(folder: Path, rel: str, files: set[str]) -> Result | None:
    """An OpenOOD ``data/`` tree: ``benchmark_imglist/{benchmark}/*.txt`` over ``images_classic/`` or
    ``images_largescale/``.  ``train_{b}.txt`` + ``test_{b}.txt`` (labelled) are benchmark b's ID source,
    unlabelled lists its semantic shifts, labelled ``test_{b}_*.txt`` lists its covariate shifts
    (ImageNet-200-V2/-C/-R), ``val_*`` OOD lists are catalogued as OOD validation sets."""
    lists_dir = folder / "benchmark_imglist"
    if not lists_dir.is_dir():
        return None
    lists = sorted(p for p in lists_dir.rglob("*.txt") if p.is_file())
    if not lists:
        return [Skipped(f"{rel}/benchmark_imglist", "an OpenOOD benchmark_imglist/ folder without .txt lists")]
    out: Result = []
    opened: dict[Path, tuple[dict, ImageSet]] = {}
    for path in lists:
        relative = path.relative_to(folder).as_posix()
        first = next((line.split()[0] for line in path.read_text(errors="replace").splitlines() if line.strip()), None)
        images_root = _images_root(folder, first) if first else "."
        if images_root is None:
            out.append(Skipped(relative, f"image list: its first image {first!r} is under none of {folder}'s "
                                         "folders (images_classic/, images_largescale/, ...)"))
            continue
        options = {"imglist": relative} | ({} if images_root == "." else {"images": images_root})
        try:
            opened[path] = options, _open("imglist", folder, "test", **options)
        except DatasetError as err:
            out.append(Skipped(relative, _reason("imglist", err)))
    bench_of = {path: path.parent.name if path.parent != lists_dir else "openood" for path in opened}
    consumed: set[Path] = set()
    for bench in sorted(set(bench_of.values())):  # ID sources: OpenOOD's train and test lists of a benchmark
        train, test = lists_dir / bench / f"train_{bench}.txt", lists_dir / bench / f"test_{bench}.txt"
        if train not in opened or test not in opened or opened[train][0].get("images") != opened[test][0].get("images"):
            continue
        if any(_label_kind(opened[p][1].labels) != "labelled" for p in (train, test)):
            continue
        images = opened[test][0].get("images")
        options = {"imglist": {"train": opened[train][0]["imglist"], "test": opened[test][0]["imglist"]}}
        item = Found([bench, f"openood-{bench}"], "imglist", rel, options | ({"images": images} if images else {}),
                     family=bench)
        out.append(_source(item, opened[train][1], opened[test][1]))
        consumed |= {train, test}
    several = len(set(bench_of.values())) > 1
    for path, (options, images) in opened.items():
        if path in consumed:
            continue
        bench = bench_of[path]
        match = LIST_ROLE.match(path.stem)
        role, stem = (match.group(1), match.group(2)) if match else ("test", path.stem)
        hints = [f"{bench}-{stem}"] if several else [stem, f"{bench}-{stem}"]
        item = Found(hints, "imglist", rel, options, {"": len(images)}, _label_kind(images.labels),
                     side=_side(images), family=bench, role=role)
        if item.labels == "labelled" and stem.startswith(f"{bench}_") and role == "test":
            item.kind = "corruption"  # OpenOOD's covariate lists: the benchmark's classes, shifted
        elif item.labels == "labelled" and stem == bench:
            item.kind, item.family = "unused", stem
            item.note = f"OpenOOD's {role} list of benchmark {bench}'s own images, without its train and test lists"
        elif item.labels != "unlabelled":
            item.kind, item.family = "unused", stem
            item.note = (f"{item.labels} image list (one split): no source (a source needs official train and test "
                         "splits); as an evaluation set it needs the classes of a source: give it under that "
                         "source's ood with shift_type covariate")
        elif role == "val":
            item.kind = "ood_val"
        elif role == "train":
            item.kind, item.note = "unused", "a training list of OOD images (OpenOOD's outlier exposure): not evaluated"
        out.append(item)
    return out


def _imagenet(folder: Path, rel: str, files: set[str]) -> Result | None:
    dirs = set(_dirs(folder))
    wnid_dirs = {d: [s for s in _dirs(folder / d) if WNID.fullmatch(s)] for d in ("train", "val") if d in dirs}
    if not any(wnid_dirs.values()) and not ("val" in dirs and "LOC_val_solution.csv" in files):
        return None
    classes = sorted(wnid_dirs.get("train") or [])
    options = {}
    if "LOC_synset_mapping.txt" in files:  # the class list, named so that ImageNet-C/-R sets can share it
        try:
            if read_wnids(folder / "LOC_synset_mapping.txt") == classes:
                options = {"wnids": "LOC_synset_mapping.txt"}
        except ReaderError:
            pass
    item = Found([CANONICAL["imagenet"]], "imagenet", rel, options)
    try:
        test = _open("imagenet", folder, "test", **options)
    except DatasetError as err:
        return [Skipped(rel, _reason("imagenet", err))]
    if not classes:
        item.sizes, item.side, item.labels = {"test": len(test)}, _side(test), "labelled"
        item.note = "not a source: no train/{wnid}/ class folders; evaluated on its val split"
        return [item]
    # the train split (ILSVRC-2012: 1.28 million files) is listed by its index_dataset job, not here
    item.kind, item.n_classes, item.side = "source", len(classes), _side(test)
    item.sizes = {"train": sum(1 for d in classes for _ in os.scandir(folder / "train" / d)), "test": len(test)}
    item.val_size = min(MAX_VAL_SIZE, len(test) // 5)
    item.normalize = KNOWN_NORMALIZE["imagenet"]
    item.wnids = frozenset(classes)
    if item.val_size < 1:
        item.kind, item.note = "shift", "not a source: its val split is too small for a validation split"
    return [item]


def _imagenet_c(folder: Path, rel: str, files: set[str]) -> Result | None:
    corruptions = {}
    for c in _dirs(folder):
        severities = [s for s in _dirs(folder / c) if s in {"1", "2", "3", "4", "5"}]
        if severities and any(WNID.fullmatch(w) for w in _dirs(folder / c / severities[0])):
            corruptions[c] = severities
    if not corruptions:
        return None
    out: Result = []
    for corruption, severities in corruptions.items():
        severity = SEVERITY if str(SEVERITY) in severities else int(severities[len(severities) // 2])
        try:
            images = _open("imagenet_c", folder, "test", corruption=corruption, severity=severity)
        except DatasetError as err:
            out.append(Skipped(f"{rel}/{corruption}", _reason("imagenet_c", err)))
            continue
        wnids = frozenset(s.split("/")[2] for s in images.sample_ids)
        out.append(Found([f"imagenetc-{corruption}-{severity}"], "imagenet_c", rel,
                         {"corruption": corruption, "severity": severity}, {"test": len(images)},
                         side=_side(images), kind="corruption", family="imagenet", wnids=wnids))
    return out


def _wnid_folders(folder: Path, rel: str, files: set[str]) -> Result | None:
    dirs = _dirs(folder)
    if not dirs or not all(WNID.fullmatch(d) for d in dirs):
        return None
    try:
        images = _open("wnid_folders", folder, "test")
    except DatasetError as err:
        return [Skipped(rel, _reason("wnid_folders", err))]
    return [Found([folder.name], "wnid_folders", rel, {}, {"": len(images)}, "unlabelled", side=_side(images),
                  wnids=frozenset(dirs))]


def _class_split_folders(folder: Path, rel: str, files: set[str]) -> Result | None:
    """``train/{class}/`` and ``test/{class}/`` (or ``val/``) with free class names: labelled data that no
    format reads as a source (ImageNet's layout needs WordNet-id folder names)."""
    dirs = set(_dirs(folder))
    test = "test" if "test" in dirs else "val" if "val" in dirs else None
    if "train" not in dirs or test is None or len(_dirs(folder / "train")) < 2 or not _has_image(folder / "train"):
        return None
    return [Skipped(rel, f"class folders per split (train/{{class}}/, {test}/{{class}}/) whose names are not WordNet "
                         "ids: no format reads them as a labelled source; convert them to the npy layout "
                         "(docs/own-data.md, 'Labelled class folders'), or name the folders by WordNet ids (format "
                         "imagenet)")]


LAYOUTS = (_cifar10, _cifar100, _svhn, _tinyimagenet, _npy, _cifar_c, _iconic444, _imglist, _imagenet,
           _imagenet_c, _wnid_folders, _class_split_folders)


def _layout(folder: Path, rel: str) -> Result | None:
    """What the first layout whose marker files ``folder`` holds makes of it (None: no marker)."""
    try:
        files = _files(folder)
        for layout in LAYOUTS:
            result = layout(folder, rel, files)
            if result is not None:
                return result
    except OSError as err:  # an unreadable folder or list file
        return [Skipped(rel, f"cannot be read ({type(err).__name__}: {err})")]
    return None


def _has_image(folder: Path) -> bool:
    for _, subdirs, names in os.walk(folder):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        if any(os.path.splitext(n)[1].lower() in IMAGE_EXTENSIONS for n in names):
            return True
    return False


def _image_folder(folder: Path, rel: str, note: str = "") -> Result:
    try:
        return _image_folder_of(folder, rel, note)
    except OSError as err:
        return [Skipped(rel, f"cannot be read ({type(err).__name__}: {err})")]


def _image_folder_of(folder: Path, rel: str, note: str) -> Result:
    if not _has_image(folder):
        listed = sorted(e.name for e in os.scandir(folder) if not e.name.startswith("."))
        what = ", ".join(listed[:5]) + (" ..." if len(listed) > 5 else "") if listed else "nothing"
        return [Skipped(rel, f"no image files and no file of a known layout (it holds: {what}); archives must be "
                             "extracted first")]
    try:
        images = _open("image_folder", folder, "test")
    except DatasetError as err:
        return [Skipped(rel, _reason("image_folder", err))]
    return [Found([folder.name], "image_folder", rel, {}, {"": len(images)}, "unlabelled", side=_side(images),
                  note=note)]


def _prefer_own_files(found: list[Found]) -> None:
    """An OpenOOD benchmark's ID lists are not a second source when the dataset's own files are there too."""
    own = {dataset_name(f.hints[0]) for f in found if f.kind == "source" and f.format != "imglist"} | \
        {f.format for f in found if f.kind == "source" and f.format != "imglist"}
    for item in found:
        if item.kind == "source" and item.format == "imglist" and dataset_name(item.family) in own:
            item.kind = "unused"
            item.note = (f"OpenOOD's train and test lists of benchmark {item.family}: not used (source "
                         f"{dataset_name(item.family)} is read from its own files)")


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def scan(data_root: str | Path) -> Scan:
    """The datasets under ``data_root`` (one or two levels deep) and what could not be classified."""
    root = Path(data_root).expanduser().resolve()
    if not root.is_dir():
        raise CsfbenchError(f"{data_root}: no such data folder")
    results: Result = []
    own = _layout(root, ".")
    if own is not None:  # DATA_ROOT is itself one dataset
        results += own
    else:
        for entry in sorted(root.iterdir()):
            if entry.name.startswith("."):
                continue
            rel = _rel(entry, root)
            if not entry.is_dir():
                kind = "an image file" if entry.suffix.lower() in IMAGE_EXTENSIONS else "a file"
                results.append(Skipped(rel, f"{kind} directly in the data folder: a dataset is a folder "
                                            "(archives must be extracted first)"))
                continue
            found = _layout(entry, rel)
            if found is not None:
                results += found
                continue
            inner = {sub: _layout(entry / sub, f"{rel}/{sub}") for sub in _dirs(entry)}
            if any(r is not None for r in inner.values()):  # a folder grouping datasets: each is its own
                for sub, found in inner.items():
                    results += found if found is not None else _image_folder(entry / sub, f"{rel}/{sub}")
                continue
            subs = _dirs(entry)
            note = (f"one evaluation set of all {len(subs)} subfolders ({', '.join(subs[:4])}"
                    f"{' ...' if len(subs) > 4 else ''}); give each its own dataset entry to evaluate them apart"
                    if len(subs) > 1 else "")
            results += _image_folder(entry, rel, note)
    found = [r for r in results if isinstance(r, Found)]
    _prefer_own_files(found)
    found.sort(key=lambda f: f.kind != "source")  # sources first, then scan order
    skipped = [r for r in results if isinstance(r, Skipped)]
    _assign_names(found)
    scan_ = Scan(root, [f for f in found if f.kind != "unused"], skipped, [f for f in found if f.kind == "unused"])
    propose(scan_)
    return scan_


# ---------------------------------------------------------------------------------------------
# roles


def _matches(key: str | None, source: Found) -> bool:
    return key is not None and dataset_name(key) in {source.name, source.format}


def propose(scan_: Scan) -> None:
    """Fill ``shift_of`` (source -> shift type) of every evaluation set; sets that fit no source move to
    ``unused`` with the reason."""
    sources = scan_.sources
    for item in scan_.unused:  # OpenOOD's single ID lists of a source found
        own = [s for s in sources if _matches(item.family, s)]
        if item.format != "imglist" or not isinstance(item.options.get("imglist"), str) or not own:
            continue
        item.note = f"OpenOOD's {item.role} list of source '{own[0].name}''s own images: not used" + (
            " (csfbench's validation split is the first val_size images of the source's test split)"
            if item.role == "val" else "" if own[0].format == "imglist" else " (the source is read from its own files)")
    for item in scan_.found:
        if item.kind == "source":
            for src in sources:
                if src is not item and src.path != item.path:  # ICONIC-444 tasks share one image folder
                    item.shift_of[src.name] = "semantic"
        elif item.kind == "shift" and item.format == "imglist":
            own = [s for s in sources if _matches(item.family, s)]
            for src in own or sources:
                if not own and _matches(item.hints[0], src):
                    continue  # OpenOOD's list of this source's own images (e.g. test_svhn.txt for an SVHN source)
                item.shift_of[src.name] = "semantic"
        elif item.kind == "shift" and item.format == "iconic444":
            for src in sources:
                if src.format == "iconic444" and item.family == f"iconic444:{src.path}:{src.options['task']}":
                    item.shift_of[src.name] = "semantic"
        elif item.kind == "shift" and item.format == "wnid_folders":
            imagenet = [s for s in sources if s.format == "imagenet" and s.wnids and item.wnids <= s.wnids]
            if imagenet:  # ImageNet-R / -Sketch style: renditions of the source's own classes
                src = imagenet[0]
                if "wnids" not in src.options:
                    item.kind = "unused"
                    item.note = (f"class folders of source '{src.name}''s classes (ImageNet-R style): a covariate set "
                                 f"that needs option wnids (a class list such as LOC_synset_mapping.txt) so that "
                                 f"its labels are the source's")
                    continue
                item.options["wnids"] = os.path.relpath(Path(src.path) / src.options["wnids"], item.path)
                item.labels = "labelled"
                item.shift_of[src.name] = "covariate"
            else:
                for src in sources:
                    item.shift_of[src.name] = "semantic"
        elif item.kind == "shift":
            for src in sources:
                item.shift_of[src.name] = "semantic"
        elif item.kind == "corruption":
            _corruption_of(item, sources)
        if item.kind in ("shift", "corruption") and not item.shift_of:
            item.kind = "unused"
            item.note = item.note or "no source to evaluate it against"
    scan_.unused += [f for f in scan_.found if f.kind == "unused"]
    scan_.found = [f for f in scan_.found if f.kind != "unused"]


def _corruption_of(item: Found, sources: list[Found]) -> None:
    if item.format == "imglist":
        own = [s for s in sources if _matches(item.family, s)]
        item.note = "" if own else f"a labelled list of benchmark {item.family}'s classes: no {item.family} source found"
        for src in own:
            item.shift_of[src.name] = "covariate"
        return
    if item.family in ("cifar10", "cifar100"):
        own = [s for s in sources if s.format == item.family]
        if not own:
            item.note = f"corruptions of {item.family.upper()}: no {item.family} source found"
        for src in own:
            item.shift_of[src.name] = "covariate"
        return
    own = [s for s in sources if s.format == "imagenet"]
    if not own:
        item.note = "corruptions of ImageNet: no ImageNet source found"
        return
    src = own[0]
    if "wnids" in src.options:
        item.options["wnids"] = os.path.relpath(Path(src.path) / src.options["wnids"], item.path)
    elif item.wnids != src.wnids:
        item.note = (f"its {len(item.wnids)} class folders are not the {len(src.wnids)} classes of source "
                     f"'{src.name}': give option wnids (a class list) so that the labels agree")
        return
    item.shift_of[src.name] = "covariate"
