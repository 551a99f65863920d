"""Small run files for the audit's readers and stage: a CSF fit, a network-pass fit and feature files, written in
their real layouts (csfbench.csf.store, csfbench.network_csf.store, the feature-file datasets the audit reads)."""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from csfbench.csf.engine import FittedCsf, FittedMode
from csfbench.csf.store import write_fit

from tests.unit.audit.builders import MODEL

#: the fit's recorded csf section: a projection range, GEN's gamma pinned
CSF_CONFIG = {"search_space": {"projection": {"variance": [0.8, 0.95]}}, "fixed": {"GEN": {"gamma": 0.5}},
              "tuning": {"max_neighbour_fraction": 0.05}}
KNN_CLIP = {"k": {"range": [1, 1000], "clipped": [1, 50], "train_rows": 1000}}


def write_csf_fit(path: Path, source: str = "s1") -> Path:
    """A fit of group ``global`` with a tuned projection, KNN (Bayesian, clipped, at the clip), KNN@grid (k = 200
    of a 1000-row bank), GEN (m tuned, gamma pinned), an undefined ViM and a KPCA variant sharing another's fit."""
    csfs = {
        ("KNN", "none"): FittedCsf({"k": 50}, {"bank": np.zeros((1000, 3), np.float32)}, np.array([[3.0], [50.0]]),
                                   np.zeros(2), csf="KNN", protocol="bayes", range_clips=KNN_CLIP),
        ("KNN@grid", "none"): FittedCsf({"k": 200}, {"bank": np.zeros((1000, 3), np.float32)},
                                        np.array([[1.0], [50.0], [200.0]]), np.zeros(3), csf="KNN", protocol="grid"),
        ("GEN", "none"): FittedCsf({"m": 4, "gamma": 0.5}, None, np.array([[2.0]]), np.zeros(1), csf="GEN",
                                   temperature="fitted", protocol="bayes"),
        ("ViM", "none"): FittedCsf({}, None, undefined="no residual subspace: 3 dimensions for 4 classes", csf="ViM",
                                   protocol="none"),
        ("KPCA RecError", "class"): FittedCsf({"gamma": 0.5}, None, csf="KPCA RecError", protocol="bayes"),
        ("KPCA RecError", "class_avg"): FittedCsf({"gamma": 0.5}, None, shares="class", csf="KPCA RecError",
                                                  protocol="bayes"),
    }
    projection = {"group": "global", "mean": np.zeros(3), "basis": np.eye(3), "variance": 0.95}
    mode = FittedMode(projection, {"none": 1.0}, csfs, 1.0, ("fitted",), "bayes")
    attrs = {"source": source, "model": MODEL, "group": "global", "quirks": "strict",
             "csf_config": json.dumps(CSF_CONFIG, sort_keys=True)}
    write_fit(path, {"det": mode}, (np.zeros((4, 3)), np.zeros(4)), attrs)
    return path


def write_network_fit(path: Path, temperature: float = 1.0, noise: float = 0.0) -> Path:
    from csfbench.network_csf.detectors import NetworkFit, NetworkSettings
    from csfbench.network_csf.store import write_network_fit as write

    settings = NetworkSettings(("ODIN-IP",), temperatures=(1.0, 10.0), noises=(0.0, 0.0014))
    odin = {"params": {"temperature": temperature, "noise": noise}, "probed": np.zeros((4, 2)),
            "objective": np.zeros(4)}
    write(path, NetworkFit(settings, odin=odin), {"source": "s1", "model": MODEL})
    return path


def write_features(path: Path, dataset: str, correct, labels, shift_type: str = "id", paradigm: str = "dg") -> Path:
    """The datasets and attributes of a feature file that the audit reads (``correct``, ``labels``)."""
    with h5py.File(path, "w") as fh:
        fh.attrs.update(source="s1", model=MODEL, dataset=dataset, paradigm=paradigm, shift_type=shift_type,
                        n_classes=4)
        fh.create_dataset("correct", data=np.asarray(correct, dtype=bool))
        fh.create_dataset("labels", data=np.asarray(labels, dtype=np.int64))
    return path
