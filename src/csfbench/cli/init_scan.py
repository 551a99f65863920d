"""The data-folder scan of ``csfbench init`` (:mod:`csfbench.cli.init_config`): which datasets a folder holds.

The folder is scanned one level deep, and two levels where a first-level folder is no dataset of its
own (a folder grouping several datasets, e.g. ``ood/isun``, ``ood/lsun``).  Each folder is tried
against the on-disk layouts of :mod:`csfbench.cli.init_layouts`, whose format readers decide.  :func:`scan`
returns the findings (:class:`Scan`), names them and proposes their roles (source, semantic or covariate
shift, OOD validation); :mod:`csfbench.cli.init_config` turns them into a config.

Symbolic links among the folders and files scanned (the first level, and the second where a folder groups
datasets): a link to a place inside the data folder is followed; a link out of it is not followed (init
proposes only data under DATA_ROOT; such a dataset can be added to the config by hand), and a broken link
(dangling, or a loop) is skipped.  Each one is reported by name (:attr:`Skipped.link`).  Datasets whose path
is not UTF-8 text (a file name of other bytes), which a config file cannot hold, are skipped with the reason.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from csfbench.data.readers import IMAGE_EXTENSIONS
from csfbench.errors import CsfbenchError
from csfbench.cli.init_layouts import (Found, Result, Skipped, dataset_name, entry_kind, find_layout, image_folder,
                                       with_suffix)
from csfbench.workflow.settings import schema

#: the dataset naming rule (the schema's `name` pattern)
NAME_RULE = re.compile(schema()["definitions"]["name"]["pattern"])
#: the input side of a VGG-13 must be a multiple of 32; larger images are brought down to this for CPU runs
MAX_SIDE = 64
#: the formats whose datasets can be sources (labelled official train and test splits)
SOURCE_FORMATS = ("cifar10", "cifar100", "svhn", "idx", "tinyimagenet", "npy", "imagenet", "iconic444",
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


#: characters that YAML cannot hold in a comment or that would end it (line breaks: \n, \r, NEL, U+2028,
#: U+2029), or that a terminal may act on: control characters, lone surrogates, U+FFFE and U+FFFF
_UNPRINTABLE = re.compile("[^\t\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def printable(text: object) -> str:
    """``text`` on one line, every character of :data:`_UNPRINTABLE` written as its Python escape (``\\n``,
    ``\\x1b``, ``\\u2028``): safe in a YAML comment (it cannot end the comment line) and in a report."""
    return _UNPRINTABLE.sub(lambda match: repr(match.group())[1:-1], str(text))


def _assign_names(found: list[Found]) -> None:
    """A valid, unique name per find (at most the schema's maxLength): its first free hint, else the first
    hint with ``-2``, ``-3``, ... (cut to fit)."""
    taken: set[str] = set()
    for item in found:
        hints = [dataset_name(h) for h in item.hints] + [dataset_name(item.path.replace("/", "-"))]
        name = next((h for h in hints if h not in taken), None)
        k = 2
        while name is None or name in taken:
            name, k = with_suffix(hints[0], f"-{k}"), k + 1
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
    """The datasets under ``data_root`` (one or two levels deep) and what could not be classified or was not
    followed (symbolic links: see the module's docstring)."""
    root = Path(data_root).expanduser().resolve()
    if not root.is_dir():
        raise CsfbenchError(f"{printable(data_root)}: no such data folder")
    if not _is_utf8(str(root)):
        raise CsfbenchError(f"{printable(root)}: the data folder's path is not UTF-8 text, which a config cannot "
                            "hold; rename it")
    results: Result = []
    own = find_layout(root, ".")
    if own is not None:  # DATA_ROOT is itself one dataset
        results += own
    else:
        entries, results = _listing(root, root)
        for entry in entries:
            results += _scan_entry(entry, root)
    results = [_utf8_checked(r) for r in results]
    found = [r for r in results if isinstance(r, Found)]
    _prefer_own_files(found)
    found.sort(key=lambda f: f.kind != "source")  # sources first, then scan order
    skipped = [r for r in results if isinstance(r, Skipped)]
    _assign_names(found)
    scan_ = Scan(root, [f for f in found if f.kind != "unused"], skipped, [f for f in found if f.kind == "unused"])
    propose(scan_)
    return scan_


def _scan_entry(entry: Path, root: Path) -> Result:
    """What one first-level entry of the data folder holds: a dataset, a group of datasets (each
    subfolder its own), one image folder of everything below it, or a reason why not."""
    rel = _rel(entry, root)
    if not entry.is_dir():
        kind = "an image file" if entry.suffix.lower() in IMAGE_EXTENSIONS else "a file"
        return [Skipped(rel, f"{kind} directly in the data folder: a dataset is a folder "
                             "(archives must be extracted first)")]
    found = find_layout(entry, rel)
    if found is not None:
        return found
    subs, results = _listing(entry, root, folders_only=True)
    inner = {sub: find_layout(sub, _rel(sub, root)) for sub in subs}
    if any(r is not None for r in inner.values()):  # a folder grouping datasets: each is its own
        for sub, found in inner.items():
            results += found if found is not None else image_folder(sub, _rel(sub, root))
        return results
    names = [sub.name for sub in subs]
    note = (f"one evaluation set of all {len(names)} subfolders ({', '.join(names[:4])}"
            f"{' ...' if len(names) > 4 else ''}); give each its own dataset entry to evaluate them apart"
            if len(names) > 1 else "")
    return results + image_folder(entry, rel, note)


def _listing(folder: Path, root: Path, folders_only: bool = False) -> tuple[list[Path], Result]:
    """The entries of ``folder`` to scan (sorted, hidden ones left out; with ``folders_only`` its
    subfolders), and a :class:`Skipped` for each symbolic link among them that is not followed."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as err:
        return [], [Skipped(_rel(folder, root), f"cannot be read ({type(err).__name__}: {err})")]
    kept, refused = [], []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        problem = link_problem(Path(entry.path), root)
        if problem is not None:
            refused.append(Skipped(_rel(Path(entry.path), root), problem, link=True))
        elif not folders_only or entry_kind(entry) == "dir":
            kept.append(Path(entry.path))
    return kept, refused


def link_problem(path: Path, root: Path) -> str | None:
    """Why the scan does not follow ``path``: a dangling link, a link loop, or a link to a place outside
    ``root`` (the data folder); None for anything else (a link within ``root`` is followed)."""
    if not path.is_symlink():
        return None
    target = os.readlink(path)
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        return f"a dangling symbolic link (to {target}): skipped"
    except (OSError, RuntimeError):  # a loop: RuntimeError up to Python 3.12, OSError (ELOOP) from 3.13
        return f"a symbolic link loop (to {target}): skipped"
    if not resolved.is_relative_to(root):
        return (f"a symbolic link to {resolved}, outside the data folder: not followed (init proposes only "
                "data under DATA_ROOT; add it to the config's datasets by hand to use it)")
    return None


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a file name of other bytes, decoded by Python as lone surrogates
        return False
    return True


def _utf8_checked(item: Found | Skipped) -> Found | Skipped:
    """``item``, or a :class:`Skipped` where the path or options a config would hold are not UTF-8 text."""
    if isinstance(item, Skipped):
        return item
    if _is_utf8(json.dumps([item.path, item.options], ensure_ascii=False, default=str)):
        return item
    return Skipped(item.path, "its path is not UTF-8 text, which a config cannot hold: skipped (rename it)")


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
