"""Logging for workflow jobs: progress and errors go to the rule's ``log:`` file."""
from __future__ import annotations

import contextlib
import faulthandler
import logging
import os
import sys
from pathlib import Path
from typing import Iterator

from threadpoolctl import threadpool_limits

from csfbench.errors import CsfbenchError


def _limit_threads(threads: int) -> None:
    """Cap BLAS/OpenMP pools to the rule's threads without importing torch for jobs that never use it.

    torch reads OMP_NUM_THREADS when it is first imported; BLAS pools already loaded by numpy/scipy
    are capped through threadpoolctl.
    """
    os.environ["OMP_NUM_THREADS"] = str(threads)
    threadpool_limits(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def _exit_before_hdf5_crash(logger: logging.Logger) -> None:
    """End the job with exit status 1 now: HDF5 would crash (SIGSEGV) at exit trying once more to close a
    file it could not write.  The error is logged and the temporary file deleted already."""
    logger.error("job failed: exiting without closing the HDF5 library (it cannot close the file it failed to write)")
    logging.shutdown()
    sys.stderr.flush()
    os._exit(1)


@contextlib.contextmanager
def job_logging(log_path: str | Path | None, threads: int | None = None) -> Iterator[logging.Logger]:
    """Log INFO+ to ``log_path`` (and stderr); on a csfbench error write its message plainly, then re-raise.

    ``threads`` caps the intra-op threads (torch, BLAS) to what the rule requested.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        handlers=handlers, force=True)
    logging.captureWarnings(True)
    if log_path:
        faulthandler.enable(handlers[-1].stream)
    if threads:
        _limit_threads(int(threads))
    logger = logging.getLogger("csfbench")
    try:
        yield logger
    except CsfbenchError as err:
        logger.error("%s", err)
        if getattr(err, "hdf5_unclosed", False):
            _exit_before_hdf5_crash(logger)
        raise
    except Exception:
        logger.exception("job failed")
        raise
