"""Configs that `csfbench validate` accepted and the run refused later: each is now a ConfigError before the DAG.

Probes (the behaviour before the fix):

- ``lr: .nan`` / ``.inf`` (any number): valid; training ran to a NaN loss and NaN logits, the first error was
  raised by ``fit_csf``;
- a 250-character dataset name (what ``csfbench init`` proposes for a long folder name): valid; the DAG build
  failed on a 260-byte file name (``index_{name}.log``; the limit is 255 bytes);
- a misspelt or unscored CSF in ``figures.rc_curves.csfs`` / ``conformal.figure.csf``: valid; the run's last jobs
  (``rc_curves``, ``conformal_report``) failed on the scores file;
- a typo in the ViT's ``arch`` or an unknown ``timm_name``: valid; the ``train`` job failed in timm
  (``TypeError: ... unexpected keyword argument``, ``RuntimeError: Unknown model``);
- ``n_cal`` at least the ID test split (or a ``val_size`` that leaves none): valid; ``conformal_metrics`` (or
  ``train``) failed;
- a source that no backbone serves: valid; the DAG build failed with an IndexError;
- typos in ``figures.clique_map_group`` and ``figures.heatmap`` (refused since the workflow package's checks;
  kept here as regressions).
"""
from __future__ import annotations

import copy
import errno
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from csfbench.errors import ConfigError
from csfbench.workflow import paths
from csfbench.workflow.jobs import Jobs
from csfbench.workflow.settings import load_yaml, validate_config
from tests.helpers.repo import REPO

MICRO = load_yaml(REPO / "tests/config/micro.yaml")
#: what an atomic write adds to a file name while it writes it (csfbench.atomic.temporary_name; pids < 2**22)
TEMPORARY = len(".") + len(".tmp-4194304")


def refused(edit, origin="probe", build_models=False) -> str:
    """The ConfigError message of the micro config changed by ``edit`` (a function of the config)."""
    config = copy.deepcopy(MICRO)
    edit(config)
    with pytest.raises(ConfigError) as err:
        validate_config(config, origin, build_models=build_models)
    return str(err.value)


def accepted(edit) -> dict:
    config = copy.deepcopy(MICRO)
    edit(config)
    return validate_config(config, "probe")


def setter(*path):
    """An edit that sets the key at ``path`` (all but the last element: the keys) to the last element."""
    *keys, value = path

    def edit(config):
        node = config
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return edit


# ---- numbers ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [".nan", ".inf", "-.inf", ".NaN"])
@pytest.mark.parametrize("path, key", [
    (("training", "vgg13", "common", "lr"), "training/vgg13/common/lr"),
    (("training", "vit", "common", "lr", "do0"), "training/vit/common/lr/do0"),
    (("pretrain", "lr"), "pretrain/lr"),
    (("training", "vgg13", "common", "momentum"), "training/vgg13/common/momentum"),
    (("sources", "demo10", "training", "vgg13", "common", "lr"), "sources/demo10/training/vgg13/common/lr"),
])
def test_a_non_finite_number_is_refused(text, path, key):
    value = yaml.safe_load(text)  # YAML's NaN and infinities load as floats, which JSON-schema numbers accept
    assert isinstance(value, float)
    message = refused(setter(*path, value))
    assert f"invalid value at '{key}': expected a finite number, found {value!r}" in message, message


# ---- names and file names -----------------------------------------------------------------------------------
def renamed(dataset: str | None = None, source: str | None = None):
    """An edit renaming the micro config's ``noise`` dataset and ``demo10`` source (their paths unchanged)."""
    def edit(config):
        if dataset:
            config["datasets"][dataset] = config["datasets"].pop("noise")
            ood = config["sources"]["demo10"]["ood"]
            ood[dataset] = ood.pop("noise")
        if source:
            config["sources"][source] = config["sources"].pop("demo10")
            config["shifts"]["sources"] = [source]
    return edit


def file_names(grid: Jobs) -> list[str]:
    """The names of the files the workflow writes for ``grid`` (every output the jobs list, each dataset's index
    and its log)."""
    files = [*grid.feature_files(), *grid.metric_files(), *grid.network_metric_files(), *grid.conformal_outputs(),
             *grid.analysis_outputs(), *grid.figure_targets(), *grid.proximity_outputs(), *grid.projnorm_outputs(),
             *grid.nc_tables(), *grid.ranking_files("json"), *grid.ranking_files("csv")]
    for name in grid.config["datasets"]:
        files += [paths.dataset_index(name), paths.log("data", f"index_{name}")]
    return [Path(f).name for f in files]


@pytest.mark.parametrize("edit, key, length", [
    (renamed(dataset="d" * 250), "datasets", 250),
    (renamed(dataset="d" * 65), "datasets", 65),
    (renamed(source="s" * 70), "sources", 70),
])
def test_a_name_too_long_for_the_file_names_built_from_it_is_refused(edit, key, length):
    message = refused(edit)
    assert f"at '{key}': expected a name of at most 64 characters" in message and f"({length} characters)" in message


def test_the_file_names_of_the_longest_names_fit_the_file_system(tmp_path):
    """At the limit every file name the workflow builds (with its temporary suffix) is well under 255 bytes;
    the 250-character name of the probe built one the file system refuses."""
    grid = Jobs(accepted(renamed(dataset="d" * 64, source="s" * 64)))
    names = file_names(grid)
    assert any("d" * 64 in name for name in names) and any("s" * 64 in name for name in names)
    longest = max(names, key=len)
    assert len(longest) + TEMPORARY < 200, longest
    (tmp_path / f".{longest}.tmp-4194304").write_text("")
    with pytest.raises(OSError) as err:
        (tmp_path / Path(paths.log("data", "index_" + "d" * 250)).name).write_text("")
    assert err.value.errno == errno.ENAMETOOLONG


# ---- CSF names of the figures -------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["figures/rc_curves/csfs", "conformal/figure/csf"])
@pytest.mark.parametrize("name, fragments", [
    ("MSRR", ["expected a CSF that model vgg13_confidnet_do1_rew0_run1 is scored with: ['ASH-B'", "'RankFeat']",
              "(did you mean 'MSR'?)"]),
    ("Energy globl", ["(did you mean 'Energy global'?)"]),
    ("MSR@T1", ["expected a variant of MSR that model vgg13_confidnet_do1_rew0_run1 is scored with: ['MSR', "
                "'MSR global', 'MSR class', 'MSR class_avg', 'MSR class_pred']"]),  # csf.temperatures: [fitted]
    ("KNN global", ["expected a variant of KNN that model vgg13_confidnet_do1_rew0_run1 is scored with: ['KNN']"]),
    ("KNN class", ["expected a variant of KNN"]),
])
def test_a_drawn_csf_the_model_is_not_scored_with_is_refused(key, name, fragments):
    value = [name] if key == "figures/rc_curves/csfs" else name
    message = refused(setter(*key.split("/"), value))
    assert f"invalid value at '{key}'" in message and message.endswith(f"found {name!r}"), message
    for fragment in fragments:
        assert fragment in message, message


def test_a_drawn_csf_follows_the_csf_sections_methods_and_the_drawn_model():
    message = refused(setter("csf", "methods", ["MLS", "Energy"]))  # the micro config draws MSR
    assert "figures/rc_curves/csfs': expected a CSF that model vgg13_confidnet_do1_rew0_run1 is scored with: " \
           "['Energy', 'MLS', 'ODIN-IP', 'GRAM', 'RankFeat'] (MSR's variants: ['none', 'global', 'class', " \
           "'class_avg', 'class_pred']), found 'MSR'" in message, message
    # a ViT has no confidence head: no Confidence CSF
    vit = "vit_ce_do0_rew0_run1"
    message = refused(lambda c: (setter("figures", "rc_curves", "models", "demo10", vit)(c),
                                 setter("figures", "rc_curves", "csfs", ["Confidence"])(c)))
    assert f"expected a CSF that model {vit} is scored with" in message and "found 'Confidence'" in message
    accepted(setter("figures", "rc_curves", "csfs", ["Confidence"]))  # a ConfidNet's head is drawn


@pytest.mark.parametrize("edit", [
    setter("figures", "rc_curves", "csfs", ["MSR", "KPCA RecError class_pred", "Maha global", "GRAM", "ODIN"]),
    lambda c: (setter("csf", "temperatures", ["fitted", "one"])(c),
               setter("figures", "rc_curves", "csfs", ["MSR@T1", "GEN@T1 class"])(c),
               setter("conformal", "figure", "csf", "MLS@T1")(c)),
    setter("conformal", "figure", "csf", "RankFeat"),
])
def test_the_csfs_a_model_is_scored_with_are_drawn(edit):
    accepted(edit)


# ---- the ViT's architecture ---------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, key, fragments", [
    (setter("backbones", "vit", "arch", "deph", 1), "backbones/vit/arch/deph",
     ["expected a keyword of timm's VisionTransformer: [", "'depth'", "(did you mean 'depth'?)", "found 'deph'"]),
    (setter("backbones", "vit", "arch", "num_classes", 3), "backbones/vit/arch/num_classes",
     ["(the source's image_size and n_classes set img_size and num_classes)"]),
    (setter("backbones", "vit", "arch", "timm_name", "vit_tiny_patch16_22"), "backbones/vit/arch/timm_name",
     ["expected a timm architecture (timm.list_models()) (did you mean 'vit_tiny_patch16_224'?)",
      "found 'vit_tiny_patch16_22'"]),
    (setter("backbones", "vit", "arch", "timm_name", "vitt"), "backbones/vit/arch/timm_name", ["found 'vitt'"]),
    (setter("backbones", "vit", "arch", "patch_size", 0), "backbones/vit/arch",
     ["expected keywords timm builds vit_tiny_patch16_224 with (ZeroDivisionError"]),
    (setter("proximity", "encoder", "arch", "timm_name", "vit_tiny"), "proximity/encoder/arch/timm_name",
     ["expected a timm architecture"]),
])
def test_a_vit_timm_cannot_build_is_refused(edit, key, fragments):
    message = refused(edit, build_models=True)
    assert f"invalid value at '{key}'" in message, message
    for fragment in fragments:
        assert fragment in message, message
    accepted(edit)  # Snakemake's validation, repeated by every job, leaves the build out (it imports torch)


def test_csfbench_validate_builds_the_vits(tmp_path, capsys):
    from csfbench.cli import main

    config = copy.deepcopy(MICRO)
    setter("backbones", "vit", "arch", "deph", 1)(config)
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["validate", str(path)]) == 2
    assert "invalid value at 'backbones/vit/arch/deph'" in capsys.readouterr().err


@pytest.mark.parametrize("build_models", [False, True])
def test_validation_imports_torch_only_to_build_a_vit(tmp_path, build_models):
    """Snakemake's validation (build_models False) never imports torch; ``csfbench validate`` does only for a
    config with a ViT."""
    config = copy.deepcopy(MICRO)
    for section in ("backbones", "training"):
        del config[section]["vit"]
    for source in config["sources"].values():
        del source["image_size"]["vit"]
    del config["pretrain"], config["proximity"], config["ensembles"]
    paths_ = {"cnn": tmp_path / "cnn.yaml", "vit": tmp_path / "vit.yaml"}
    paths_["cnn"].write_text(yaml.safe_dump(config))
    paths_["vit"].write_text(yaml.safe_dump(MICRO))
    code = ("import sys; from csfbench.workflow.settings import load_config; "
            "load_config(sys.argv[1], build_models=sys.argv[2] == 'True'); "
            "print(sorted({'torch', 'timm'} & set(sys.modules)))")
    for kind, path in paths_.items():
        out = subprocess.run([sys.executable, "-c", code, str(path), str(build_models)], cwd=REPO,
                             capture_output=True, text=True, check=True)
        want = "['timm', 'torch']" if build_models and kind == "vit" else "[]"
        assert out.stdout.strip() == want, (kind, out.stdout + out.stderr)


# ---- split sizes --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, key, fragments", [
    (setter("conformal", "calibration", "n_cal", 100), "conformal/calibration/n_cal",
     ["expected fewer than the 100 samples of the ID test split of source 'demo10' (200 test images less val_size "
      "100), from which the calibration set is drawn, found 100"]),
    (setter("conformal", "calibration", "n_cal", 150), "conformal/calibration/n_cal", ["found 150"]),
    (setter("demo", "spec", "demo10", "n_test", 120), "conformal/calibration/n_cal",
     ["fewer than the 20 samples", "found 40"]),
    (setter("sources", "demo10", "val_size", 200), "sources/demo10/val_size",
     ["expected fewer than the 200 images of the test split of dataset 'demo10'", "found 200"]),
])
def test_a_calibration_set_larger_than_the_id_test_split_is_refused(edit, key, fragments):
    message = refused(edit)
    assert f"invalid value at '{key}'" in message, message
    for fragment in fragments:
        assert fragment in message, message


def test_split_sizes_are_checked_only_where_the_config_sets_them():
    accepted(setter("conformal", "calibration", "n_cal", 99))
    accepted(lambda c: (setter("conformal", "calibration", "n_cal", 5000)(c),
                        setter("conformal", "enabled", False)(c)))
    # data on disk (no demo stage): its size is known only when it is read
    accepted(lambda c: (setter("conformal", "calibration", "n_cal", 5000)(c), setter("demo", "enabled", False)(c),
                        setter("data_root", "results/data/other")(c)))


# ---- selections -----------------------------------------------------------------------------------------------
def test_a_source_no_backbone_serves_is_refused():
    def edit(config):
        config["sources"]["demo40"] = {**copy.deepcopy(config["sources"]["demo10"]), "dataset": "demo40",
                                       "n_classes": 40, "val_size": 10}
        config["conformal"]["calibration"]["n_cal"] = 20
        for backbone in config["backbones"].values():
            backbone["sources"] = ["demo10"]
    message = refused(edit)
    assert "invalid value at 'sources/demo40': expected a source that a backbone serves" in message, message


@pytest.mark.parametrize("edit, key, fragment", [
    (setter("figures", "clique_map_group", "rcc"), "figures/clique_map_group", "(did you mean 'rc'?)"),
    (setter("figures", "heatmap", "group", "augrcc"), "figures/heatmap", "found 'augrcc/vgg13_det_demo10_test'"),
    (setter("figures", "heatmap", "backbone", "vgg"), "figures/heatmap", "found 'rc/vgg_det_demo10_test'"),
    (setter("figures", "heatmap", "source", "demo1"), "figures/heatmap", "found 'rc/vgg13_det_demo1_test'"),
    (setter("figures", "heatmap", "regime", "nera"), "figures/heatmap/regime", "found 'nera'"),
    (setter("figures", "heatmap", "regim", "near"), "figures/heatmap", "unexpected key(s) ['regim']"),
    (setter("ranking", "metric_groups", "rc", ["augrc", "aurcc"]), "ranking/metric_groups/rc",
     "(did you mean 'aurc'?)"),
])
def test_typos_in_the_figure_selections_are_refused(edit, key, fragment):
    message = refused(edit)
    assert f"invalid value at '{key}'" in message and fragment in message, message
