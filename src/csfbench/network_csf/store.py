"""The HDF5 fit file of a model's network-pass CSFs (:mod:`csfbench.network_csf.detectors`); their
confidences go to the scores file of fit group ``network`` (:func:`csfbench.csf.store.write_scores`).  No
pickle; written to a temporary name and renamed when complete.

``network_csf/{source}/{model}/fit.h5``::

    attrs: network_format, settings (JSON), source, model, config_hash, provenance
    ODIN-IP/  attrs: params (JSON {temperature, noise}); datasets: tuning/probed (G×2), tuning/objective (G,)
    GRAM/     attrs: powers (JSON), unpredicted (JSON); datasets: norms (L,), mins/{l}, maxs/{l} (P×K×C_l)
    RankFeat/ attrs: params (JSON {power_iterations})
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import h5py
import torch

from csfbench.atomic import atomic_hdf5
from csfbench.network_csf.detectors import GramFit, NetworkFit, NetworkSettings
from csfbench.errors import FeatureFileError
from csfbench.hdf5_read import open_hdf5

#: layout version of ``fit.h5``; a reader refuses any other
NETWORK_FORMAT = 1


def write_network_fit(path: str | Path, fitted: NetworkFit, attrs: dict) -> None:
    with atomic_hdf5(path) as fh:
        fh.attrs.update(attrs)
        fh.attrs["network_format"] = NETWORK_FORMAT
        fh.attrs["settings"] = json.dumps(dataclasses.asdict(fitted.settings), sort_keys=True)
        if fitted.odin is not None:
            g = fh.create_group("ODIN-IP")
            g.attrs["params"] = json.dumps(fitted.odin["params"], sort_keys=True)
            g.create_dataset("tuning/probed", data=fitted.odin["probed"])
            g.create_dataset("tuning/objective", data=fitted.odin["objective"])
        if fitted.gram is not None:
            g = fh.create_group("GRAM")
            g.attrs["powers"] = json.dumps(list(fitted.gram.powers))
            g.attrs["unpredicted"] = json.dumps(list(fitted.gram.unpredicted))
            g.create_dataset("norms", data=fitted.gram.norms.cpu().numpy())
            for l, (low, high) in enumerate(zip(fitted.gram.mins, fitted.gram.maxs)):
                g.create_dataset(f"mins/{l}", data=low.cpu().numpy())
                g.create_dataset(f"maxs/{l}", data=high.cpu().numpy())
        if "RankFeat" in fitted.settings.methods:
            g = fh.create_group("RankFeat")
            g.attrs["params"] = json.dumps({"power_iterations": fitted.settings.power_iterations})


def read_network_fit(path: str | Path) -> tuple[NetworkFit, dict]:
    """The fitted network-pass CSFs and the file's attributes."""
    with open_hdf5(path, "network CSF fit") as fh:
        attrs = dict(fh.attrs)
        found = int(attrs.get("network_format", 0))
        if found != NETWORK_FORMAT:
            raise FeatureFileError(f"{path}: network CSF fit format {found}, this csfbench reads format "
                                   f"{NETWORK_FORMAT}: delete it, or rerun its job "
                                   "(snakemake --forcerun fit_network_csf)")
        raw = json.loads(attrs["settings"])
        settings = NetworkSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
        fitted = NetworkFit(settings)
        if "ODIN-IP" in fh:
            g = fh["ODIN-IP"]
            fitted.odin = {"params": json.loads(g.attrs["params"]), "probed": g["tuning/probed"][()],
                           "objective": g["tuning/objective"][()]}
        if "GRAM" in fh:
            g = fh["GRAM"]
            n = len(g["mins"])
            fitted.gram = GramFit(tuple(json.loads(g.attrs["powers"])),
                                  [torch.from_numpy(g[f"mins/{l}"][()]) for l in range(n)],
                                  [torch.from_numpy(g[f"maxs/{l}"][()]) for l in range(n)],
                                  torch.from_numpy(g["norms"][()]), tuple(json.loads(g.attrs["unpredicted"])))
    return fitted, attrs
