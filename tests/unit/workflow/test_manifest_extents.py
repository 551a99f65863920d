"""The byte ranges a reader skips (csfbench.workflow.manifest.outside_bytes): HDF5 superblocks of every version
with and without a user block, zip archives with a comment, and files that are neither."""
from __future__ import annotations

import zipfile

import h5py
import numpy as np
import pytest
import torch

from csfbench.workflow.manifest import (HDF5_SIGNATURE, UnreadableFileError, _hdf5_extent, file_digest,
                                       outside_bytes)


@pytest.mark.parametrize("libver", ["earliest", "v108", "latest"])  # superblock versions 0, 2 and 3
@pytest.mark.parametrize("userblock", [0, 512, 4096])
def test_an_hdf5_file_has_nothing_outside_but_its_user_block(tmp_path, libver, userblock):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver=libver, userblock_size=userblock) as fh:
        fh["x"] = np.arange(100.0)
    assert outside_bytes(path) == ([(0, userblock)] if userblock else [])
    size = path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(b"\0" * 3)
    assert outside_bytes(path)[-1] == (size, size + 3)


def test_a_superblock_of_version_1_is_read(tmp_path):
    """h5py writes no version-1 superblock (it needs a non-default indexed-storage K): one built by hand, as the
    HDF5 file format specification lays it out, whose end-of-file address is 200."""
    undefined = b"\xff" * 8
    superblock = (HDF5_SIGNATURE + bytes([1, 0, 0, 0, 0, 8, 8, 0]) + (4).to_bytes(2, "little")
                  + (16).to_bytes(2, "little") + bytes(4) + (64).to_bytes(2, "little") + bytes(2)
                  + bytes(8) + undefined + (200).to_bytes(8, "little") + undefined)
    path = tmp_path / "v1.h5"
    path.write_bytes(superblock.ljust(210, b"\0"))
    assert _hdf5_extent(path) == (0, 200)
    assert outside_bytes(path) == [(200, 210)]


def test_a_zip_archive_ends_after_its_comment(tmp_path):
    path = tmp_path / "a.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data.pkl", b"x" * 100)
        zf.comment = b"a comment"
    assert outside_bytes(path) == []
    size = path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(b"tail")
    assert outside_bytes(path) == [(size, size + 4)]


def test_a_legacy_checkpoint_and_other_formats_have_no_extent(tmp_path):
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    assert outside_bytes(legacy) == []
    other = tmp_path / "table.json"
    other.write_text("{}")
    assert outside_bytes(other) == []


def test_a_file_without_an_hdf5_superblock_is_unreadable(tmp_path):
    path = tmp_path / "f.h5"
    path.write_bytes(b"not hdf5" * 200)
    with pytest.raises(UnreadableFileError, match="cannot read it as hdf5-content"):
        file_digest(path)
