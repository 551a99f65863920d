"""The micro config end to end on a GPU: `pytest -m cuda` on a machine with CUDA.

Training under mixed precision (bfloat16 autocast, or float16 with a gradient scaler), Monte-Carlo
dropout feature extraction, the adversarial attack and the network-pass CSFs all run on the device; the
test checks from the job logs and the files that they did.  Skipped, with the reason, where torch sees no CUDA device.
"""
from __future__ import annotations

import h5py
import pytest
import torch

from csfbench.workflow import paths
from csfbench.workflow.grid import Grid, generated_set_folder
from csfbench.workflow.settings import load_config

from tests.helpers.micro_run import MICRO, snakemake

pytestmark = [pytest.mark.cuda, pytest.mark.workflow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible to torch")]


def test_micro_config_runs_on_the_gpu(tmp_path):
    proc = snakemake("--cores", 4, "--resources", "gpu=1", "--configfile", MICRO, workdir=tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-5000:]
    config = load_config(MICRO)
    for source, model in Grid(config).iter_models():
        log = (tmp_path / paths.log("train", f"{source}/{model}")).read_text()
        assert " on cuda (autocast torch.bfloat16)" in log or " on cuda (autocast torch.float16)" in log, \
            f"{model} did not train on the GPU under mixed precision:\n{log[-2000:]}"
        if model.dropout:
            with h5py.File(tmp_path / paths.features(source, str(model), "test"), "r") as fh:
                assert fh["mcd/logits"].shape[1] == config["backbones"][model.backbone]["mcd_samples"]
        # the network-pass CSFs (rules/network_csf.smk) run their passes on the device
        for log_name in ("fit", "sets/test"):
            log = (tmp_path / paths.log("network_csf", f"{source}/{model}/{log_name}")).read_text()
            assert " on cuda" in log, f"{model}: network_csf {log_name} did not run on the GPU:\n{log[-2000:]}"
    for source, model in Grid(config).study_models():
        for dataset in Grid(config).adversarial_sets(source, model):
            folder = generated_set_folder(source, dataset, model)
            assert (tmp_path / paths.npy_file(folder, "images")).is_file()
            log = (tmp_path / paths.log("adversarial", f"{source}/{model}/{dataset}")).read_text()
            assert " on cuda" in log, f"{model}/{dataset}: the attack did not run on the GPU:\n{log[-2000:]}"
