"""Faults while writing results: a full disk during extraction, leftovers of killed jobs.

Probe: with the disk full during feature extraction, h5py died with SIGSEGV, the job log stopped at
"128/320 samples" with no error, and the hidden temporary file stayed and filled the disk.  The disk
is filled here by a file-size limit (RLIMIT_FSIZE: a write past it fails in the kernel, as on a full
disk, with EFBIG instead of ENOSPC) in a subprocess, so the test needs neither root nor a small
file system.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

from csfbench import atomic
from csfbench.errors import WriteError
from csfbench.features.store import FeatureWriter

N, N_OUT, DIM = 2000, 10, 64


def _batch(start: int, size: int = 100) -> dict:
    rng = np.random.default_rng(start)
    return {"logits": rng.random((size, N_OUT), dtype=np.float32), "features": rng.random((size, DIM), dtype=np.float32),
            "labels": np.zeros(size, np.int64), "pred": np.zeros(size, np.int64), "correct": np.zeros(size, bool),
            "sample_id": np.array([f"s{start + i}" for i in range(size)], dtype=object)}


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "job.log")


# the job of one extraction, in a process whose writes fail past `limit` bytes (a disk that fills up)
JOB = textwrap.dedent("""
    import resource, signal, sys
    import numpy as np
    from csfbench.features.store import FeatureWriter
    from csfbench.logs import job_logging
    from tests.hostile.test_faults import N, N_OUT, DIM, _batch

    out, log, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write returns EFBIG instead of killing
    with job_logging(log):
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        with FeatureWriter(out, N, N_OUT, DIM, 0, False, {"model": "m"}, compression="none") as writer:
            for start in range(0, N, 100):
                writer.write_batch(_batch(start))
                print(f"wrote {start + 100}", flush=True)
""")


def _run_job(tmp_path, limit: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", JOB, str(tmp_path / "x.h5"), str(tmp_path / "job.log"), str(limit)],
                          capture_output=True, text=True, timeout=120, cwd=os.getcwd())


def test_disk_full_during_extraction_logs_the_error_and_leaves_nothing(tmp_path):
    result = _run_job(tmp_path, limit=300_000)  # the file needs ~0.7 MB: the first batches' flush fails
    log = (tmp_path / "job.log").read_text()
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])  # not SIGSEGV (-11)
    assert "ERROR" in log and "x.h5: cannot write rows" in log, log
    assert "File too large" in log or "No space left" in log, log
    assert _leftovers(tmp_path) == []  # neither the final name nor the hidden temporary file


def test_the_same_job_with_room_writes_the_file(tmp_path):
    result = _run_job(tmp_path, limit=50_000_000)
    assert result.returncode == 0, result.stderr[-2000:]
    assert _leftovers(tmp_path) == ["x.h5"]
    with h5py.File(tmp_path / "x.h5", "r") as fh:
        assert fh["features"].shape == (N, DIM)
        np.testing.assert_array_equal(fh["features"][1900:], _batch(1900)["features"])


def test_too_little_free_space_is_refused_before_writing(tmp_path, monkeypatch):
    class Usage:
        free = 100_000

    monkeypatch.setattr(atomic.shutil, "disk_usage", lambda folder: Usage)
    with pytest.raises(WriteError, match=r"x\.h5: not enough free disk space: the file needs up to 0\.7 MiB, "
                                         r"0\.1 MiB are free"):
        FeatureWriter(tmp_path / "x.h5", N, N_OUT, DIM, 0, False, {}, compression="none")
    assert _leftovers(tmp_path) == []


def test_a_failed_flush_in_any_hdf5_writer_leaves_nothing(tmp_path, monkeypatch):
    """atomic_hdf5 (CSF fits, scores, embeddings): the final flush that fails is a WriteError naming the file."""
    def refuse(self):
        raise RuntimeError("Unable to synchronously flush file (errno = 28, error message = 'No space left on device')")

    monkeypatch.setattr(h5py.File, "flush", refuse)
    with pytest.raises(WriteError, match=r"fit\.h5: cannot write: .*No space left on device"):
        with atomic.atomic_hdf5(tmp_path / "fit.h5") as fh:
            fh.create_dataset("a", data=np.arange(10))
    assert _leftovers(tmp_path) == []


def test_temporaries_of_killed_jobs_are_removed_when_a_run_starts(tmp_path):
    """Snakefile `onstart` calls remove_stale_temporaries on results/; finished files are kept."""
    (tmp_path / "features" / "m").mkdir(parents=True)
    stale = [tmp_path / "features" / "m" / ".test.h5.tmp-123", tmp_path / ".results.parquet.tmp-9"]
    for path in stale:
        path.write_bytes(b"partial")
    kept = tmp_path / "features" / "m" / "test.h5"
    kept.write_bytes(b"done")
    assert atomic.remove_stale_temporaries(tmp_path) == sorted(stale)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [kept]
