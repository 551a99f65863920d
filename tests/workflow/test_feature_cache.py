"""Feature files shared between studies: two configs evaluate the same pretrained timm weights on the same data
under other names (source, backbone, run number, seed, batch size, regime) with Snakemake's between-workflow cache
(`--cache`, SNAKEMAKE_OUTPUT_CACHE).  The first run writes the feature files into the cache; the second takes all
of them from it without running extract_pretrained_features, and its CSF fit and scores read them; a third config
with another normalisation is a cache miss."""
from __future__ import annotations

import re

import h5py
import pandas as pd
import pytest

from csfbench.data.demo import generate_demo
from csfbench.features.identity import model_hash
from csfbench.workflow import paths
from csfbench.workflow.grid import Grid
from csfbench.workflow.settings import load_config

from tests.helpers.micro_run import MICRO, snakemake
from tests.helpers.workflow_runs import core_config, write_config

pytestmark = pytest.mark.workflow

SETS = ("train", "val", "test", "near")
ARCH = {"name": "vit_tiny_patch16_224", "patch_size": 8, "depth": 1, "img_size": 32}
NORMALIZE = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}


def _config(data_root, weights, source: str, backbone: str, run: int, seed: int, batch_size: int, regime: str,
            normalize: dict = NORMALIZE) -> dict:
    """The core workflow config (tests.helpers.workflow_runs) on the shared data: one source of the demo10 data, one
    OOD set and one timm classifier evaluated with ``weights`` (paradigm pretrained), the unprojected fit group."""
    config = core_config(seed=seed, data_root=str(data_root), training={},
                         features={"batch_size": batch_size, "compression": "gzip"},
                         datasets={name: {"format": "npy", "path": name} for name in ("demo10", "near")})
    del config["demo"]
    config["sources"] = {source: {"dataset": "demo10", "n_classes": 10, "val_size": 100,
                                  "image_size": {backbone: 32}, "normalize": NORMALIZE,
                                  "ood": {"near": {"shift_type": "semantic", "regime": regime}}}}
    config["backbones"] = {backbone: {"library": "timm", "arch": ARCH, "paradigms": ["pretrained"], "runs": [run],
                                      "weights": {"file": str(weights)},
                                      "eval": {"geometry": "stretch", "interpolation": "bilinear", "crop_pct": 1.0,
                                               "normalize": normalize}}}
    config["csf"]["groups"] = ["none"]
    return config


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The shared data folder (the micro config's demo datasets), a weights file of the timm classifier and an
    empty cache folder."""
    from safetensors.torch import save_file

    from csfbench.torch_compat import ensure_torchvision

    ensure_torchvision()  # timm needs it on CPU-only torch
    import timm

    root = tmp_path_factory.mktemp("feature_cache")
    generate_demo(root / "data", 0, load_config(MICRO)["demo"]["spec"], threads=1)
    weights = root / "weights" / "vit_micro.safetensors"
    weights.parent.mkdir()
    save_file(timm.create_model(ARCH["name"], pretrained=False, num_classes=10,
                                **{k: v for k, v in ARCH.items() if k != "name"}).state_dict(), str(weights))
    (root / "cache").mkdir()
    return root


def _run(root, name: str, config: dict, *args):
    """Snakemake on ``config`` in its own run folder, with the between-workflow cache, to the metric rows of
    its one model; (run folder, source, model id, completed process)."""
    workdir = root / name
    workdir.mkdir(exist_ok=True)
    config_file = write_config(config, workdir / "config.yaml")
    (source, model), = [(s, str(m)) for s, m in Grid(load_config(config_file)).iter_models()]
    # the target first: --cache and --configfile take every word that follows them up to the next option
    proc = snakemake(paths.metrics(source, model, "none"), *args, "--cores", 2, "--configfile", config_file, "--cache",
                     workdir=workdir)
    return workdir, source, model, proc


def test_a_second_study_of_the_same_weights_reuses_the_cached_feature_files(shared, monkeypatch):
    monkeypatch.setenv("SNAKEMAKE_OUTPUT_CACHE", str(shared / "cache"))
    weights = shared / "weights/vit_micro.safetensors"
    first, source_a, model_a, proc = _run(shared, "study_a", _config(shared / "data", weights, "micro", "tiny", 1, 0,
                                                                     128, "near"))
    assert proc.returncode == 0, proc.stderr[-5000:]
    a_files = {d: first / paths.features(source_a, model_a, d) for d in SETS}
    # written by this run's own extraction jobs, then moved into the cache and linked back
    assert all((first / paths.log("features", f"{source_a}/{model_a}/{d}")).stat().st_size > 0 for d in SETS)
    assert all(f.is_symlink() and f.resolve().parent == (shared / "cache").resolve() for f in a_files.values())
    cached = {d: f.resolve() for d, f in a_files.items()}
    stamps = {d: c.stat().st_mtime_ns for d, c in cached.items()}

    # other names for the same weights on the same data: source, backbone, run number, seed, batch size, regime
    config_b = _config(shared / "data", weights, "study2", "vitmicro", 3, 7, 50, "far")
    second, source_b, model_b, proc = _run(shared, "study_b", config_b)
    assert proc.returncode == 0, proc.stderr[-5000:]
    out = proc.stdout + proc.stderr
    # Snakemake lists the cached jobs but links their files instead of running them (their logs stay empty); the
    # study's checkpoint is no input of them, and no other rule extracts features
    assert not re.search(r"^\s*(local)?rule (train|extract_features):", out, re.M), out[-5000:]
    for dataset in SETS:
        path = second / paths.features(source_b, model_b, dataset)
        assert path.is_symlink() and path.resolve() == cached[dataset]
        assert f"Symlinking output file {paths.features(source_b, model_b, dataset)} from cache" in out
        log = second / paths.log("features", f"{source_b}/{model_b}/{dataset}")
        assert not log.exists() or log.stat().st_size == 0
        assert cached[dataset].stat().st_mtime_ns == stamps[dataset]
        with h5py.File(path, "r") as fh:  # the first study's file, accepted by the second's identity
            assert fh.attrs["source"] == source_a and fh.attrs["model"] == model_a
            assert fh.attrs["extraction_model"] == model_hash(Grid(load_config(second / "config.yaml"))
                                                               .model_spec(source_b, model_b))
    # the CSF fit and scores of the second study read the reused files: the same rows as the first study's
    assert all((second / paths.log("csf", f"{source_b}/{model_b}/none_{job}")).is_file() for job in ("fit", "score"))
    rows_a = pd.read_parquet(first / paths.metrics(source_a, model_a, "none"))
    rows_b = pd.read_parquet(second / paths.metrics(source_b, model_b, "none"))
    assert len(rows_a) > 0 and set(rows_b["source"]) == {source_b} and set(rows_b["backbone"]) == {"vitmicro"}
    assert set(rows_b["run"]) == {3} and set(rows_b.loc[rows_b["dataset"] == "near", "regime"]) == {"far"}
    keys = [c for c in rows_a.columns if c not in ("source", "backbone", "run", "regime")]
    pd.testing.assert_frame_equal(rows_a[keys].reset_index(drop=True), rows_b[keys].reset_index(drop=True))

    # another normalisation is another extraction: a cache miss for every set (dry run)
    config_c = _config(shared / "data", weights, "micro", "tiny", 1, 0, 128, "near",
                       normalize={"mean": [0.4, 0.5, 0.5], "std": [0.25, 0.25, 0.25]})
    _, source_c, model_c, proc = _run(shared, "study_c", config_c, "-n")
    assert proc.returncode == 0, proc.stderr[-5000:]
    out = proc.stdout + proc.stderr
    for dataset in SETS:
        assert f"Output file {paths.features(source_c, model_c, dataset)} will be written to global " \
               "between-workflow cache" in out, out[-3000:]
