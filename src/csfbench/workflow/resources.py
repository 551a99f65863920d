"""What a job takes of its machine, from its resource settings (``resources.<rule>`` of the config): a
module of its own, light to import, because every job that loads images imports it."""
from __future__ import annotations

import os

def loader_workers(num_workers: int | None, threads: int) -> int:
    """DataLoader worker processes of a job: the configured ``resources.<rule>.num_workers`` when set, else
    the job's ``threads`` less one for the main process, at most the CPUs this process may run on less one
    (never below 0 = loading in the main process)."""
    if num_workers is not None:
        return int(num_workers)
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(min(int(threads), available) - 1, 0)
