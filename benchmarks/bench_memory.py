"""Process memory readings shared by the benchmarks: the kernel's RSS counters and the reset of the peak."""
from __future__ import annotations

import resource


def proc_status(field: str) -> int:
    """Bytes of a ``/proc/self/status`` field (``VmRSS:``, ``VmHWM:``); the peak RSS where there is no /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak() -> bool:
    """Reset the high-water mark VmHWM (``/proc/self/clear_refs`` "5"); False where that is not permitted."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False
