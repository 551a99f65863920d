"""The on-disk layouts ``csfbench init`` recognises (:mod:`csfbench.cli.init_scan`): what one folder holds.

Each layout function looks for a few marker file names (``data_batch_1`` → ``cifar10``, ``*_32x32.mat`` →
``svhn``, ``train-images-idx3-ubyte[.gz]`` → ``idx``, ``benchmark_imglist/`` → ``imglist``, ...) and returns
None when they are absent; otherwise the format's own reader (:func:`~csfbench.data.formats.open_dataset`)
decides, so a folder that looks like a layout but breaks it is reported with the reader's problem
(:class:`Skipped`), and a readable one is described (:class:`Found`: sizes, labels, image side,
normalisation, whether it can be a source).
The marker checks see through symbolic links and pass over broken ones (dangling, or a loop); what a
dataset folder's own links hold is its format reader's to read.
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
from csfbench.data.readers import IDX_FILES, IMAGE_EXTENSIONS, ReaderError, emnist_splits
from csfbench.errors import DatasetError
from csfbench.specs import SPLITS
from csfbench.workflow.settings import schema

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
#: canonical dataset names of the formats that hold one well-known dataset
CANONICAL = {"cifar10": "cifar10", "cifar100": "cifar100", "svhn": "svhn", "tinyimagenet": "tinyimagenet",
             "imagenet": "imagenet"}
OPENOOD_IMAGE_ROOTS = ("images_classic", "images_largescale", ".")
LIST_ROLE = re.compile(r"^(train|val|test)_(.+)$")
#: the longest dataset name (the schema's `name` maxLength)
MAX_NAME = schema()["definitions"]["name"]["maxLength"]


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
        if "emnist" in self.options:
            detail = f"EMNIST {self.options['emnist']}"
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
    link: bool = False  # a symbolic link the scan does not follow (broken, or out of the data folder)


def dataset_name(text: str) -> str:
    """``text`` (a folder name, a list's stem) as a valid dataset name: lower case, every run of other
    characters than ``a-z0-9.-`` (control characters and line breaks too) one ``-``, no leading or trailing
    ``.``/``-``, cut to :data:`MAX_NAME` characters; the ID split names get ``-set``."""
    name = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9.-]+", "-", text.lower()))
    name = with_suffix(name.strip(".-")) or "dataset"
    return with_suffix(name, "-set") if name in SPLITS else name


def with_suffix(name: str, suffix: str = "") -> str:
    """``name`` followed by ``suffix``, ``name`` cut (and its trailing ``.``/``-`` dropped) so that the whole
    is at most :data:`MAX_NAME` characters."""
    return name[:MAX_NAME - len(suffix)].rstrip(".-") + suffix


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


def entry_kind(entry: os.DirEntry) -> str | None:
    """``"dir"`` or ``"file"`` (a link: what it points to); None for anything else, a broken link (dangling, or
    a loop) included."""
    try:
        return "dir" if entry.is_dir() else "file" if entry.is_file() else None
    except OSError:  # ELOOP: a link loop
        return None


def _files(folder: Path) -> set[str]:
    return {e.name for e in os.scandir(folder) if entry_kind(e) == "file"}


def subfolder_names(folder: Path) -> list[str]:
    return sorted(e.name for e in os.scandir(folder) if not e.name.startswith(".") and entry_kind(e) == "dir")


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


def _idx(folder: Path, rel: str, files: set[str]) -> Result | None:
    """IDX files: MNIST's names (MNIST, Fashion-MNIST, KMNIST; named by the folder, or by the folder above a
    torchvision ``raw/`` folder), and one source per EMNIST split (option ``emnist``) whose files are there."""
    names = {name for pair in IDX_FILES.values() for name in pair}
    mnist = any(name in files or f"{name}.gz" in files for name in names)
    splits = emnist_splits(files)
    if not mnist and not splits:
        return None
    out: Result = []
    if mnist:
        hint = folder.parent.name if folder.name == "raw" else folder.name
        out += _two_splits("idx", folder, rel, [hint, folder.name])
    for split in splits:
        for item in _two_splits("idx", folder, rel, [f"emnist-{split}"], emnist=split):
            if isinstance(item, Skipped):
                item.path = f"{rel}/emnist-{split}-*"
            out.append(item)
    return out


def _tinyimagenet(folder: Path, rel: str, files: set[str]) -> Result | None:
    if "wnids.txt" not in files or not {"train", "val"} & set(subfolder_names(folder)):
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
    dirs = set(subfolder_names(folder))
    wnid_dirs = {d: [s for s in subfolder_names(folder / d) if WNID.fullmatch(s)]
                 for d in ("train", "val") if d in dirs}
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
    for c in subfolder_names(folder):
        severities = [s for s in subfolder_names(folder / c) if s in {"1", "2", "3", "4", "5"}]
        if severities and any(WNID.fullmatch(w) for w in subfolder_names(folder / c / severities[0])):
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
    dirs = subfolder_names(folder)
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
    dirs = set(subfolder_names(folder))
    test = "test" if "test" in dirs else "val" if "val" in dirs else None
    if ("train" not in dirs or test is None or len(subfolder_names(folder / "train")) < 2
            or not _has_image(folder / "train")):
        return None
    return [Skipped(rel, f"class folders per split (train/{{class}}/, {test}/{{class}}/) whose names are not WordNet "
                         "ids: no format reads them as a labelled source; convert them to the npy layout "
                         "(docs/own-data.md, 'Labelled class folders'), or name the folders by WordNet ids (format "
                         "imagenet)")]


LAYOUTS = (_cifar10, _cifar100, _svhn, _idx, _tinyimagenet, _npy, _cifar_c, _iconic444, _imglist, _imagenet,
           _imagenet_c, _wnid_folders, _class_split_folders)


def find_layout(folder: Path, rel: str) -> Result | None:
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


def image_folder(folder: Path, rel: str, note: str = "") -> Result:
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
