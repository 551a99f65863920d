"""The data-folder scan of ``csfbench init`` (:mod:`csfbench.cli.init_config`): which datasets a folder holds.

The folder is scanned one level deep, and two levels where a first-level folder is no dataset of its
own (a folder grouping several datasets, e.g. ``ood/isun``, ``ood/lsun``).  Each folder is tried
against the on-disk layouts of :mod:`csfbench.cli.init_layouts`, whose format readers decide.  :func:`scan`
returns the findings (:class:`Scan`), names them and proposes their roles (source, semantic or covariate
shift, OOD validation); :mod:`csfbench.cli.init_config` turns them into a config.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from csfbench.data.readers import IMAGE_EXTENSIONS
from csfbench.errors import CsfbenchError
from csfbench.cli.init_layouts import Found, Result, Skipped, dataset_name, find_layout, image_folder, subfolder_names
from csfbench.workflow.settings import schema

#: the dataset naming rule (the schema's `name` pattern)
NAME_RULE = re.compile(schema()["definitions"]["name"]["pattern"])
#: the input side of a VGG-13 must be a multiple of 32; larger images are brought down to this for CPU runs
MAX_SIDE = 64
#: the formats whose datasets can be sources (labelled official train and test splits)
SOURCE_FORMATS = ("cifar10", "cifar100", "svhn", "tinyimagenet", "npy", "imagenet", "iconic444",
                  "imglist (OpenOOD's train and test lists)")


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
    own = find_layout(root, ".")
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
            found = find_layout(entry, rel)
            if found is not None:
                results += found
                continue
            inner = {sub: find_layout(entry / sub, f"{rel}/{sub}") for sub in subfolder_names(entry)}
            if any(r is not None for r in inner.values()):  # a folder grouping datasets: each is its own
                for sub, found in inner.items():
                    results += found if found is not None else image_folder(entry / sub, f"{rel}/{sub}")
                continue
            subs = subfolder_names(entry)
            note = (f"one evaluation set of all {len(subs)} subfolders ({', '.join(subs[:4])}"
                    f"{' ...' if len(subs) > 4 else ''}); give each its own dataset entry to evaluate them apart"
                    if len(subs) > 1 else "")
            results += image_folder(entry, rel, note)
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
