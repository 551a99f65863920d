"""Start-up weight of the workflow's jobs: a job's script imports its stage module, and a stage module that
pulls in a library its job never calls costs every one of its jobs that library's import (torch ~2 s,
matplotlib or the ranking statistics ~1 s each, scipy's special functions or MATLAB reader ~0.2 s each).
The libraries below are imported inside the functions that use them; each case imports the stage module of
one job script in a fresh interpreter, and ``csfbench.workflow.settings``, which most job scripts import.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "matplotlib", "scipy.stats", "networkx", "scipy.special", "scipy.io")

# job: (the stage module its script imports, the heavy libraries that job may load)
CASES = {
    "conformal_metrics": ("csfbench.stages.conformal", ["scipy.special"]),
    "nc_metrics": ("csfbench.stages.geometry", []),
    "proximity_regimes": ("csfbench.stages.proximity", []),
    "projnorm_shift": ("csfbench.stages.projnorm", ["torch", "scipy.special"]),
    "pair_analyses": ("csfbench.stages.analyses", ["matplotlib", "scipy.stats", "networkx", "scipy.special"]),
    "extract_features": ("csfbench.stages.features", ["torch"]),
    # the CSF kernels' torch path (csfbench.csf.device) imports torch only when a job runs on a GPU
    "fit_csf, score_csf": ("csfbench.stages.csf", ["scipy.special"]),
    "any job's resources": ("csfbench.workflow.resources", []),
}


def loaded_heavy(module: str) -> list[str]:
    """The libraries of :data:`HEAVY` loaded after importing ``module`` in a fresh interpreter."""
    code = f"import {module}, json, sys; print(json.dumps([h for h in {list(HEAVY)!r} if h in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("job", sorted(CASES))
def test_job_loads_only_the_libraries_it_uses(job):
    module, allowed = CASES[job]
    assert sorted(set(loaded_heavy(module)) - set(allowed)) == []


def test_the_check_sees_a_heavy_import():
    """The check itself: a module that does import torch at the top is reported."""
    assert "torch" in loaded_heavy("csfbench.stages.features")
