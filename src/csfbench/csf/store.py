"""HDF5 files of the CSF stage: fitted state (``fit.h5``) and per-sample scores (``scores/*.h5``).

No pickle: every fitted quantity is an array dataset; hyper-parameters, temperatures and the
projection's variance are attributes (JSON where they are mappings).  Layout of ``fit.h5``::

    attrs: fit_format, source, model, group, quirks, csf_config (JSON), tuning_protocols (JSON),
           ood_validation (the OOD validation set of the grid protocol, or ""), provenance
    head/weight, head/bias                         full head (Deep Gamblers: C+1 rows)
    {mode}/  attrs: temperatures (JSON), base_temperature, temperature_choices (JSON)
    {mode}/projection/  attrs: group, variance, tuning_protocol; global: mean, basis; class: means, bases, k,
                        mean_targets
    {mode}/csf/{name}/{variant}/  attrs: params (JSON), shares, undefined (reason or ""), csf (registry name),
                                  temperature ("fitted", "one", or "" when the CSF reads none), tuning_protocol
                                  (bayes, grid, fixed, none), range_clips (JSON: the neighbour-count search
                                  ranges clipped to the training rows, {param: {range, clipped, train_rows}},
                                  ``{}`` when none was); datasets: state arrays, tuning/probed, tuning/objective

``{name}`` is the flavour's name (:func:`csfbench.csf.registry.flavour_name`: ``MLS``, ``MLS@T1``, ``KNN@grid``).

``scores/{source}/{model}/{fit_group}.h5``: one HDF5 group per evaluation set holding
``{mode}/{CSF}/{variant}`` (N,) float64 confidences (higher = more confident), ``{mode}/pred`` and
``{mode}/correct``, ``labels``; file attrs as above, set attrs dataset, shift_type, regime and the set's group keys (``corruption``, ``severity``, ``rendition``) where it has them.  Both are written to a temporary name and renamed when complete.
"""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from csfbench.atomic import atomic_hdf5
from csfbench.csf.engine import FittedCsf, FittedMode
from csfbench.csf.inputs import SplitData
from csfbench.csf.projection import ClassSubspaces
from csfbench.csf.registry import BY_NAME
from csfbench.errors import FeatureFileError
from csfbench.specs import GROUP_KEYS

#: layout version of the CSF states in ``fit.h5``; read_fit refuses any other.  4: every CSF records its
#: clipped neighbour-count search ranges (``range_clips``; a format-3 fit searched KNN's and NNGuide's k
#: unclipped); 3: every CSF records its registry name, temperature and tuning protocol, every mode its
#: temperature choices (2: pNML stores the factors ``plus_factor``/``perp_factor`` of its projectors; 1: the
#: projectors ``p_plus``/``p_perp``)
FIT_FORMAT = 4


def _write_arrays(group: h5py.Group, arrays: dict, written: dict | None = None) -> None:
    """Write ``arrays`` into ``group``; an array already written (the same object, in ``written``: {id: (array,
    dataset)}) becomes a hard link to its dataset, so a state shared by two fitted CSFs (one KNN bank of KNN and
    KNN@grid) is stored once, and read back once (:func:`read_fit`)."""
    for key, value in arrays.items():
        if written is not None and id(value) in written and written[id(value)][0] is value:
            group[key] = written[id(value)][1]
            continue
        dataset = group.create_dataset(key, data=np.asarray(value))
        if written is not None and isinstance(value, np.ndarray):
            written[id(value)] = (value, dataset)


def _projection_arrays(projection: dict) -> dict:
    if projection["group"] == "global":
        return {"mean": projection["mean"], "basis": projection["basis"]}
    if projection["group"] == "class":
        s: ClassSubspaces = projection["subspaces"]
        return {"means": s.means, "bases": s.bases, "k": s.k, "mean_targets": projection["mean_targets"]}
    return {}


def _projection_from(group: h5py.Group) -> dict:
    name = str(group.attrs["group"])
    out = {"group": name}
    if name != "none":
        out["variance"] = float(group.attrs["variance"])
    if name == "global":
        out.update(mean=group["mean"][()], basis=group["basis"][()])
    elif name == "class":
        out.update(subspaces=ClassSubspaces(group["means"][()], group["bases"][()], group["k"][()]),
                   mean_targets=group["mean_targets"][()])
    return out


def read_projection(path: str | Path, mode: str = "det") -> dict:
    """The fitted projection state of one input ``mode`` of a ``fit.h5``, without its CSF states."""
    if not Path(path).is_file():
        raise FeatureFileError(f"CSF fit file not found: {path}")
    with h5py.File(path, "r", locking=False) as fh:
        if mode not in fh:
            raise ValueError(f"{path}: the CSF fit has no {mode!r} mode")
        return _projection_from(fh[f"{mode}/projection"])


def write_fit(path: str | Path, modes: dict[str, FittedMode], head: tuple[np.ndarray, np.ndarray],
              attrs: dict) -> None:
    """Write the fitted state of every input mode of one (model, fit group)."""
    with atomic_hdf5(path) as fh:
        fh.attrs.update(attrs)
        fh.attrs["fit_format"] = FIT_FORMAT
        _write_arrays(fh.create_group("head"), {"weight": head[0], "bias": head[1]})
        for mode, fitted in modes.items():
            g = fh.create_group(mode)
            g.attrs["temperatures"] = json.dumps(fitted.temperatures, sort_keys=True)
            g.attrs["base_temperature"] = fitted.base_temperature
            g.attrs["temperature_choices"] = json.dumps(list(fitted.temperature_choices))
            p = g.create_group("projection")
            p.attrs["group"] = fitted.projection["group"]
            p.attrs["tuning_protocol"] = fitted.projection_protocol
            if "variance" in fitted.projection:
                p.attrs["variance"] = fitted.projection["variance"]
            _write_arrays(p, _projection_arrays(fitted.projection))
            written: dict = {}
            for (name, variant), item in fitted.csfs.items():
                c = g.create_group(f"csf/{name}/{variant}")
                c.attrs["params"] = json.dumps(item.params, sort_keys=True)
                c.attrs["shares"] = item.shares or ""
                c.attrs["undefined"] = item.undefined
                c.attrs.update(csf=item.csf or name, temperature=item.temperature, tuning_protocol=item.protocol,
                               range_clips=json.dumps(item.range_clips, sort_keys=True))
                _write_arrays(c, item.state or {}, written)
                _write_arrays(c, {"tuning/probed": item.probed, "tuning/objective": item.objectives})


def _params(csf: str, text: str) -> dict:
    """A fitted CSF's hyper-parameters from their JSON, each as the kind its registry entry declares (a JSON
    number of an integer parameter may read back as a float)."""
    params = json.loads(text)
    return BY_NAME[csf].typed(params) if csf in BY_NAME else params


def read_fit(path: str | Path) -> tuple[dict[str, FittedMode], tuple[np.ndarray, np.ndarray], dict]:
    """The fitted modes, the head (W, b) and the attributes of a ``fit.h5``."""
    path = Path(path)
    if not path.is_file():
        raise FeatureFileError(f"CSF fit file not found: {path}")
    modes = {}
    with h5py.File(path, "r", locking=False) as fh:
        attrs = dict(fh.attrs)
        found = int(attrs.get("fit_format", 1))
        if found != FIT_FORMAT:
            raise FeatureFileError(f"{path}: CSF fit format {found}, this csfbench reads format {FIT_FORMAT} "
                                   f"(the file was written by another version): delete it, or rerun its fit job "
                                   f"(snakemake --forcerun fit_csf), and its scores are recomputed from the new fit")
        head = (fh["head/weight"][()], fh["head/bias"][()])
        for mode in ("det", "mcd"):
            if mode not in fh:
                continue
            g = fh[mode]
            csfs = {}
            arrays: dict = {}  # a dataset linked from several states (write_fit) is read once: {object id: array}

            def read(dataset: h5py.Dataset) -> np.ndarray:
                if dataset.id not in arrays:
                    arrays[dataset.id] = dataset[()]
                return arrays[dataset.id]

            for name, per_csf in g["csf"].items():
                for variant, c in per_csf.items():
                    state = {k: read(v) for k, v in c.items() if isinstance(v, h5py.Dataset)}
                    csfs[(name, variant)] = FittedCsf(_params(str(c.attrs["csf"]), c.attrs["params"]), state or None,
                                                      c["tuning/probed"][()], c["tuning/objective"][()],
                                                      str(c.attrs["shares"]) or None, str(c.attrs["undefined"]),
                                                      str(c.attrs["csf"]), str(c.attrs["temperature"]),
                                                      str(c.attrs["tuning_protocol"]),
                                                      json.loads(c.attrs["range_clips"]))
            modes[mode] = FittedMode(_projection_from(g["projection"]), json.loads(g.attrs["temperatures"]), csfs,
                                     float(g.attrs["base_temperature"]),
                                     tuple(json.loads(g.attrs["temperature_choices"])),
                                     str(g["projection"].attrs["tuning_protocol"]))
    return modes, head, attrs


def write_scores(path: str | Path, sets: dict[str, tuple[dict, dict[str, SplitData], dict]], attrs: dict) -> None:
    """Write the per-sample confidences of every evaluation set of one (model, fit group).

    ``sets``: {dataset: (scores {mode: {(CSF, variant): (N,)}}, splits {mode: SplitData}, set attrs)}.
    """
    with atomic_hdf5(path) as fh:
        fh.attrs.update(attrs)
        for dataset, (scores, splits, set_attrs) in sets.items():
            group = fh.create_group(dataset)
            group.attrs.update(set_attrs)
            group.create_dataset("labels", data=next(iter(splits.values())).labels)
            for mode, per_mode in scores.items():
                group.create_dataset(f"{mode}/pred", data=splits[mode].pred)
                group.create_dataset(f"{mode}/correct", data=splits[mode].correct)
                for (name, variant), conf in per_mode.items():
                    group.create_dataset(f"{mode}/{name}/{variant}", data=conf, compression="gzip",
                                         compression_opts=1)


def scores_sets(path: str | Path) -> dict[str, dict]:
    """{evaluation set: its attributes (``dataset``, ``shift_type``, ``regime``, and the group keys it has)} of a
    scores file."""
    path = Path(path)
    if not path.is_file():
        raise FeatureFileError(f"scores file not found: {path}")
    with h5py.File(path, "r", locking=False) as fh:
        return {name: dict(fh[name].attrs) for name in fh}


def set_groups(attrs: dict) -> dict:
    """The group keys (:data:`csfbench.specs.GROUP_KEYS`) of a set's attributes in a scores file
    (:func:`scores_sets`), None where the set has none (``severity`` an int, the others str)."""
    return {key: None if key not in attrs else int(attrs[key]) if key == "severity" else str(attrs[key])
            for key in GROUP_KEYS}


def read_scores(path: str | Path, dataset: str, modes: tuple[str, ...] = ("det", "mcd")) -> tuple[dict, dict]:
    """({mode: {"correct": (N,), "scores": {(CSF, variant): (N,)}}}, attrs) of one evaluation set of a
    scores file (``attrs``: the file's attributes updated with the set's); only the ``modes`` asked for
    (those of them the file has) are read."""
    path = Path(path)
    if not path.is_file():
        raise FeatureFileError(f"scores file not found: {path}")
    out: dict = {}
    with h5py.File(path, "r", locking=False) as fh:
        if dataset not in fh:
            raise FeatureFileError(f"{path}: no scores of evaluation set {dataset!r} (has {sorted(fh)})")
        attrs = {**fh.attrs, **fh[dataset].attrs}
        for mode in modes:
            if mode not in fh[dataset]:
                continue
            g = fh[dataset][mode]
            scores = {(name, variant): ds[()] for name, sub in g.items() if isinstance(sub, h5py.Group)
                      for variant, ds in sub.items()}
            out[mode] = {"correct": g["correct"][()].astype(bool), "scores": scores}
    return out, attrs
