"""The records of :mod:`csfbench.audit.records` from a run's files, each given by its path.

Fit files are read for their attributes and the shapes of their banks only (:func:`read_csf_fit`: a KNN bank is
N_train × D, and the audit needs its row count, not its values), in the layouts of :mod:`csfbench.csf.store` and
:mod:`csfbench.network_csf.store`.  The search range of a Bayesian search is rebuilt as the fit built it: the
registry's range (:func:`csfbench.csf.registry.space_bounds`) with the fit's recorded ``csf_config`` overrides and
neighbour-count clips; a grid's is the smallest and largest value of each column of its probed points, which are
every point of the grid.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping

import h5py
import pandas as pd

from csfbench.audit.ranking_checks import cell_record
from csfbench.audit.records import AccuracyRecord, CellRecord, FitRecord
from csfbench.csf.registry import BY_NAME, PROJECTION_SPACE, space_bounds
from csfbench.csf.store import FIT_FORMAT
from csfbench.errors import FeatureFileError
from csfbench.hdf5_read import open_hdf5
from csfbench.features.store import read_features

#: the record name of a fit group's projection (its tuned variance)
PROJECTION = "projection"
#: the network-pass CSF with tuned hyper-parameters and the name of its fit-group slot
ODIN_IP, NETWORK_GROUP = "ODIN-IP", "network"


def bayes_space(name: str, space: dict, n_classes: int, config: dict, clips: dict) -> dict[str, tuple[float, float]]:
    """{param: (low, high)} the Bayesian search of tuned quantity ``name`` (a CSF or the projection) ran over:
    ``space`` (its registry :class:`~csfbench.csf.tuning.Param` ranges) with ``config``'s ``search_space``
    overrides, without the parameters ``config`` pins (``fixed``), each clipped range replaced by its clip."""
    bounds = space_bounds(space, n_classes, config.get("search_space", {}).get(name))
    pinned = config.get("fixed", {}).get(name, {})
    out = {k: (float(p.low), float(p.high)) for k, p in bounds.items() if k not in pinned}
    out.update({k: (float(c["clipped"][0]), float(c["clipped"][1])) for k, c in clips.items() if k in out})
    return out


def grid_space(path: str | Path, name: str, space: dict, config: dict, probed) -> dict[str, tuple[float, float]]:
    """{param: (smallest, largest) grid value} of a grid search from its ``probed`` points (G × the free
    parameters, sorted by name, as :func:`csfbench.csf.tuning.grid_search` records them)."""
    pinned = config.get("fixed", {}).get(name, {})
    names = sorted(k for k in space if k not in pinned)
    if probed.ndim != 2 or probed.shape[1] != len(names) or not len(probed):
        raise ValueError(f"{path}: the grid trace of {name} has shape {probed.shape}, expected G × {len(names)} "
                         f"(the parameters {names})")
    return {k: (float(probed[:, j].min()), float(probed[:, j].max())) for j, k in enumerate(names)}


def _projection_record(group: h5py.Group, base: dict, n_classes: int, config: dict) -> FitRecord | None:
    projection = group["projection"]
    if str(projection.attrs["group"]) == "none":
        return None
    protocol = str(projection.attrs["tuning_protocol"])
    space = bayes_space(PROJECTION, PROJECTION_SPACE, n_classes, config, {}) if protocol == "bayes" else {}
    return FitRecord(**base, name=PROJECTION, variant=base["fit_group"], csf=PROJECTION, protocol=protocol,
                     params={"variance": float(projection.attrs["variance"])}, space=space)


def _csf_record(path, item: h5py.Group, base: dict, name: str, variant: str, n_classes: int,
                config: dict) -> FitRecord:
    csf, protocol = str(item.attrs["csf"]), str(item.attrs["tuning_protocol"])
    clips, undefined = json.loads(item.attrs["range_clips"]), str(item.attrs["undefined"])
    space: dict = {}
    if csf in BY_NAME and not undefined:
        if protocol == "bayes":
            space = bayes_space(csf, BY_NAME[csf].space, n_classes, config, clips)
        elif protocol == "grid":
            space = grid_space(path, csf, BY_NAME[csf].space, config, item["tuning/probed"][()])
    bank = item.get("bank")
    return FitRecord(**base, name=name, variant=variant, csf=csf, protocol=protocol,
                     params=json.loads(item.attrs["params"]), space=space, clips=clips,
                     bank_rows=int(bank.shape[0]) if isinstance(bank, h5py.Dataset) else None, undefined=undefined)


def read_csf_fit(path: str | Path, n_classes: Mapping[str, int]) -> list[FitRecord]:
    """The records of a CSF fit file (``fit.h5``): per input mode, its projection (fit groups other than ``none``)
    and every (CSF flavour, variant) that owns its hyper-parameters (variants that share another's are left
    out: they repeat its values).  ``n_classes``: {source: number of classes} (a range bounded by C)."""
    with open_hdf5(path, "CSF fit file") as fh:
        found = int(fh.attrs.get("fit_format", 1))
        if found != FIT_FORMAT:
            raise FeatureFileError(f"{path}: CSF fit format {found}, the audit reads format {FIT_FORMAT}: rerun its "
                                   "fit job (snakemake --forcerun fit_csf)")
        source = str(fh.attrs["source"])
        if source not in n_classes:
            raise ValueError(f"{path}: fit of source {source!r}, whose number of classes was not given "
                             f"(known: {sorted(n_classes)})")
        config = json.loads(fh.attrs["csf_config"])
        records = []
        for mode in ("det", "mcd"):
            if mode not in fh:
                continue
            base = {"source": source, "model": str(fh.attrs["model"]), "fit_group": str(fh.attrs["group"]),
                    "mode": mode}
            projection = _projection_record(fh[mode], base, n_classes[source], config)
            records.extend([projection] if projection else [])
            for name, per_variant in sorted(fh[f"{mode}/csf"].items()):
                for variant, item in sorted(per_variant.items()):
                    if not str(item.attrs["shares"]):
                        records.append(_csf_record(path, item, base, name, variant, n_classes[source], config))
    return records


def read_network_fit(path: str | Path) -> list[FitRecord]:
    """The ODIN-IP record of a network-pass fit file (none when the file has no ODIN-IP): its tuned (T, ε) and
    the grid of the fit's settings (protocol ``id_grid``; ``fixed`` for a grid of one point)."""
    with open_hdf5(path, "network CSF fit") as fh:
        if ODIN_IP not in fh:
            return []
        settings = json.loads(fh.attrs["settings"])
        temperatures, noises = settings["temperatures"], settings["noises"]
        protocol = "fixed" if len(temperatures) * len(noises) == 1 else "id_grid"
        space = {"temperature": (float(min(temperatures)), float(max(temperatures))),
                 "noise": (float(min(noises)), float(max(noises)))}
        return [FitRecord(str(fh.attrs["source"]), str(fh.attrs["model"]), NETWORK_GROUP, "det", ODIN_IP, "none",
                          ODIN_IP, protocol, json.loads(fh[ODIN_IP].attrs["params"]), space)]


def read_accuracy(path: str | Path) -> AccuracyRecord | None:
    """A model's top-1 accuracy on the labelled samples of a feature file (its ``correct`` flags, as ``csfbench
    summary``'s test_acc); None for a set without labels (semantic shift).  A file shared between studies
    (:mod:`csfbench.features.identity`; attribute ``extraction_model``) names the study that wrote it: its source
    and model are those of its place in this run (``features/{source}/{model}/{dataset}.h5``)."""
    arrays, attrs = read_features(path, keys=("correct", "labels"))
    missing = [k for k in ("correct", "labels") if k not in arrays]
    if missing:
        raise FeatureFileError(f"{path}: the feature file has no dataset(s) {missing}")
    labelled = arrays["labels"] >= 0
    if not labelled.any():
        return None
    source, model = (Path(path).parent.parent.name, Path(path).parent.name) if "extraction_model" in attrs \
        else (str(attrs["source"]), str(attrs["model"]))
    return AccuracyRecord(source, model, str(attrs["paradigm"]), str(attrs["dataset"]),
                          str(attrs["shift_type"]), int(labelled.sum()),
                          float(arrays["correct"][labelled].mean()))


def read_cells(paths: Iterable[str | Path], rows: pd.DataFrame) -> list[CellRecord]:
    """The records of the ranked cells among ranking JSON files (:func:`csfbench.audit.ranking_checks.cell_record`),
    their blocks counted on ``rows``, the ranked rows of the results table."""
    records = []
    for path in paths:
        with open(path) as fh:
            record = cell_record(json.load(fh), rows)
        if record is not None:
            records.append(record)
    return records
