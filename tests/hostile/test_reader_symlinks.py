"""Symbolic links in class-folder trees (formats ``wnid_folders``, ``imagenet``, ``imagenet_c``).

Links to directories are followed (a class folder kept on another disk), every directory is entered once,
and a link that leads to a directory already entered — a loop, or a second path to the same images — is
refused with a DatasetError naming the link (:func:`csfbench.data.readers.image_files`).  Two ``-> .``
links in one class folder used to make the index walk 2**40 paths (still running at 120 s)."""
from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest

from csfbench.data.readers import ReaderError, image_files
from csfbench.errors import DatasetError
from csfbench.specs import DatasetSpec
from csfbench.stages.data import index_dataset

from tests.helpers.format_fixtures import write_imagenet, write_imagenet_c, write_wnid_folders

#: seconds an index of these tiny trees may take before the walk counts as hanging
HANG_S = 20


class Hang(Exception):
    """A walk still running at its deadline (not a TimeoutError: os.walk swallows OSErrors)."""


@contextmanager
def _deadline(seconds: int):
    """Raise :class:`Hang` in the test when the block runs past ``seconds`` (a walk that follows a loop)."""
    def expire(signum, frame):
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _tree(fmt: str, tmp_path: Path) -> tuple[Path, dict, str, Path]:
    """(dataset root, options, split, one class folder) of a tiny tree of format ``fmt``."""
    if fmt == "wnid_folders":
        written = write_wnid_folders(tmp_path)
        return written.root, written.options["test"], "test", written.root / "n01443537"
    if fmt == "imagenet":
        written = write_imagenet(tmp_path)
        return written.root, {}, "train", written.root / "train" / "n01443537"
    written = write_imagenet_c(tmp_path)
    return written.root, written.options["test"], "test", written.root / "gaussian_noise" / "1" / "n01443537"


def _index(fmt: str, root: Path, options: dict, split: str) -> dict:
    with _deadline(HANG_S):
        return index_dataset(DatasetSpec("myset", fmt, str(root), "test", options), [split], root.parent / "index.json")


FORMATS = ["wnid_folders", "imagenet", "imagenet_c"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_links_to_their_own_class_folder_are_refused_naming_the_link(fmt, tmp_path):
    root, options, split, folder = _tree(fmt, tmp_path)
    os.symlink(".", folder / "a")
    os.symlink(".", folder / "b")
    with pytest.raises(DatasetError) as info:
        _index(fmt, root, options, split)
    message = str(info.value)
    assert info.value.dataset == "myset" and info.value.path == str(folder / "a"), message  # links in sorted order
    assert "symbolic link loop" in message and os.path.realpath(folder) in message


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_link_to_a_parent_folder_is_refused(fmt, tmp_path):
    root, options, split, folder = _tree(fmt, tmp_path)
    (folder / "deeper").mkdir()
    os.symlink("../..", folder / "deeper" / "up")
    with pytest.raises(DatasetError) as info:
        _index(fmt, root, options, split)
    assert info.value.path == str(folder / "deeper" / "up") and "symbolic link loop" in str(info.value)


def test_a_link_into_another_class_folder_is_refused_naming_both_paths(tmp_path):
    """Its images would be indexed twice, under two labels."""
    root, options, split, folder = _tree("wnid_folders", tmp_path)
    os.symlink(root / "n01494475", folder / "borrowed")
    with pytest.raises(DatasetError) as info:
        _index("wnid_folders", root, options, split)
    message = str(info.value)  # the link is walked first (its class folder sorts first), the real folder second
    assert info.value.path == str(root / "n01494475") and "already entered as n01443537/borrowed" in message, message


def test_links_to_folders_elsewhere_are_followed_once(tmp_path):
    """A class folder that is a link, and a link inside a class folder, to folders outside the tree."""
    root, options, split, folder = _tree("wnid_folders", tmp_path / "data")
    plain = _index("wnid_folders", root, options, split)["splits"]["test"]["n"]
    elsewhere = tmp_path / "other_disk"
    (elsewhere / "extra").mkdir(parents=True)
    (folder / "art_0.jpg").rename(elsewhere / "extra" / "art_0.jpg")
    os.symlink(elsewhere / "extra", folder / "extra")
    (root / "n01491361").rename(elsewhere / "n01491361")
    os.symlink(elsewhere / "n01491361", root / "n01491361")
    assert _index("wnid_folders", root, options, split)["splits"]["test"]["n"] == plain
    files = image_files(folder, root)
    assert sorted(files) == ["n01443537/cartoon_1.jpg", "n01443537/extra/art_0.jpg"]


def test_one_visited_map_spans_the_folders_of_a_tree(tmp_path):
    """The same images reached from two class folders: refused on the second folder's walk."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "x.png").write_bytes(b"")
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        os.symlink(shared, tmp_path / name / "s")
    visited: dict = {}
    assert image_files(tmp_path / "a", tmp_path, visited) == ["a/s/x.png"]
    with pytest.raises(ReaderError, match="already entered as a/s"):
        image_files(tmp_path / "b", tmp_path, visited)
