"""Bytes appended to a result file (or written before an HDF5 superblock) that the readers skip: `manifest verify`
reports the file as modified, while a file as csfbench writes it keeps the digest of its content alone."""
from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

from csfbench import cli
from csfbench.workflow.manifest import DIGESTS, file_digest, outside_bytes, write_manifest

JUNK = b"appended by something else" * 40


def _h5(path, **kwargs):
    with h5py.File(path, "w", **kwargs) as fh:
        fh.create_dataset("logits", data=np.arange(60, dtype="f4").reshape(20, 3), chunks=(5, 3), compression="gzip")
        fh.attrs["model"] = "m"
    return path


@pytest.fixture
def results(tmp_path):
    """A results folder with an HDF5 feature file (superblock v0), one of the newest format (v3), a checkpoint,
    and its manifest."""
    root = tmp_path / "results"
    (root / "features/s/m").mkdir(parents=True)
    (root / "models/s/m").mkdir(parents=True)
    _h5(root / "features/s/m/test.h5")
    _h5(root / "features/s/m/val.h5", libver="latest")
    torch.save({"weight": torch.arange(6.0)}, root / "models/s/m/checkpoint.pt")
    config = tmp_path / "config.yaml"
    config.write_text("seed: 0\n")
    write_manifest(root, config, root / "manifest.json")
    return root


def _verify(capsys, root):
    code = cli.main(["manifest", "verify", "--results", str(root)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out


@pytest.mark.parametrize("rel", ["features/s/m/test.h5", "features/s/m/val.h5", "models/s/m/checkpoint.pt"])
def test_bytes_appended_to_a_result_file_make_it_modified(results, capsys, rel):
    path = results / rel
    with open(path, "ab") as fh:
        fh.write(JUNK)
    code, out = _verify(capsys, results)
    assert code == 1
    assert out.splitlines() == [f"modified: {path}", "3 files checked: 1 differ"]


def test_bytes_written_before_the_hdf5_superblock_make_it_modified(results, capsys):
    path = results / "features/s/m/test.h5"
    path.write_bytes(b"\0" * 512 + path.read_bytes())  # the library finds the superblock at 512 and reads on
    with h5py.File(path, "r") as fh:
        assert fh["logits"].shape == (20, 3)
    code, out = _verify(capsys, results)
    assert code == 1 and out.splitlines()[0] == f"modified: {path}"


def test_files_as_csfbench_writes_them_keep_the_digest_of_their_content(results):
    for rel in ("features/s/m/test.h5", "features/s/m/val.h5", "models/s/m/checkpoint.pt"):
        path = results / rel
        assert outside_bytes(path) == []
        kind, content = DIGESTS[path.suffix]
        assert file_digest(path) == (kind, content(path))  # what manifests written before the check recorded


def test_the_skipped_ranges_are_named(results):
    path = results / "features/s/m/test.h5"
    size = path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(JUNK)
    assert outside_bytes(path) == [(size, size + len(JUNK))]


def test_a_declared_user_block_is_outside_the_hdf5_file(tmp_path):
    path = _h5(tmp_path / "user_block.h5", userblock_size=512)
    assert outside_bytes(path) == [(0, 512)]
