"""The reproduction certificate (:mod:`csfbench.reproduction`): every data-free target is reproduced, by the
library and by ``csfbench reproduce``; the targets file validates against its schema and a broken one is refused
naming the target; a run that meets a data target's needs gives ``reproduced``, a perturbed published value
``deviates`` (with its interval verdict), a run without the data ``not run`` naming what is missing."""
from __future__ import annotations

import copy
import subprocess

import pandas as pd
import pytest
import yaml

from csfbench.reproduction import RunResults, certify, load_targets
from csfbench.reproduction.certificate import COLUMNS, _text
from tests.helpers.repo import venv_bin
from tests.helpers.results_synthetic import synthetic_results
from tests.unit.aggregate.test_ranking import _ranking


def test_every_data_free_target_is_reproduced_and_the_data_targets_say_what_they_need():
    certificate = certify()
    assert list(certificate.columns) == COLUMNS
    targets = {t["id"]: t for t in load_targets()["targets"]}
    free = certificate[[targets[t]["needs"] is None for t in certificate["target"]]]
    assert len(free) >= 14 and (free["verdict"] == "reproduced").all(), free[["target", "verdict"]]
    assert free.loc[free["target"] == "cb-c1-friedman-q", "obtained"].item() == pytest.approx(46.161905, abs=1e-6)
    assert free.loc[free["target"] == "cb-t6-layer1-members", "obtained"].item() == "Confidence, GEN"
    obtained = free.set_index("target")["obtained"]
    # by hand: mean((Table 10's ConfScore − true error)²) over its 15 columns, as fractions
    assert obtained["yu-t9-confscore-mse"] == pytest.approx(0.874809, abs=1e-6)
    # std(35.74, 19.75, 0.00, 0.44; ddof 1) and the mean of GRAM's AUROC means (88.13, 94.03, 99.99, 99.88)
    assert obtained["iconic-t10-gram-fpr95-average-std"] == pytest.approx(17.181021, abs=1e-6)
    assert obtained["iconic-t4-gram-auroc-average"] == pytest.approx(95.5075, abs=1e-9)
    assert obtained["yu-t1-cifar10-confscore-r2-average"] == pytest.approx((0.847 + 0.935 + 0.929) / 3, abs=1e-12)
    families = {targets[target]["paper"] for target in free["target"]}
    assert families == {"cb", "imagenet_ood", "nda", "iconic", "yu"}, families
    data = certificate[[targets[t]["needs"] is not None for t in certificate["target"]]]
    configs = data["verdict"].str.extract(r"^not run: needs a run of (config/\w+\.yaml) \(sources ")[0]
    assert configs.notna().all() and set(configs) == {"config/paper.yaml", "config/imagenet.yaml",
                                                      "config/openood.yaml"}
    assert certificate["paper"].str.contains('"A Systematic Analysis of Out-of-Distribution Detection').any()
    assert certificate["paper"].str.contains("arXiv 2310.01755").any()


def test_the_cli_prints_the_certificate_and_exits_zero(tmp_path):
    proc = subprocess.run([venv_bin("csfbench"), "reproduce", "--output", str(tmp_path / "c.csv")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "cb-c1-friedman-q" in proc.stdout and "reproduced" in proc.stdout and "not run" in proc.stdout
    assert (tmp_path / "c.csv").read_text().startswith("target,paper,")
    missing = subprocess.run([venv_bin("csfbench"), "reproduce", "--results", str(tmp_path)], capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 2 and "no results.parquet there" in missing.stderr


def _broken(edit) -> str:
    data = yaml.safe_load(_text("targets.yaml"))
    edit(data)
    return yaml.safe_dump(data)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["targets"][0].pop("tolerance"), "invalid at targets/0"),
    (lambda d: d["targets"][4].__setitem__("tolerance", 0.1), "invalid at targets/4"),  # a set has no tolerance
    (lambda d: d["targets"][0].__setitem__("recipe", "nope"), "'cb-c1-friedman-q' has unknown recipe 'nope'"),
    (lambda d: d["targets"][0].__setitem__("paper", "nope"), "'cb-c1-friedman-q' cites unknown paper 'nope'"),
    (lambda d: d["targets"].append(copy.deepcopy(d["targets"][0])), "'cb-c1-friedman-q' appears twice"),
    (lambda d: d["papers"]["cb"].__setitem__("arxiv", "1234"), "invalid at papers/cb/arxiv"),
])
def test_a_broken_targets_file_is_refused_naming_the_target(edit, message):
    load_targets()  # the shipped file validates
    with pytest.raises(ValueError, match=message):
        load_targets(_broken(edit))


def _fixture_targets(**inputs) -> dict:
    """One best_metric target on the synthetic results: GEN on s1's ID test set, runs 11 and 12 (×1000)."""
    target = {"id": "fixture", "paper": "cb", "artefact": "fixture cell", "quantity": "best AUGRC ×1000",
              "convention": "misclf", "published": 11.5, "tolerance": 0.01, "tolerance_reason": "exact fixture",
              "recipe": "best_metric",
              "inputs": {"source": "s1", "dataset": "test", "backbone": "vgg13", "metric": "augrc", "mcd": False,
                         **inputs},
              "needs": {"sources": ["s1"], "backbones": ["vgg13"], "datasets": ["test"], "config": "fixture.yaml"}}
    data = load_targets()
    return {**data, "targets": [target]}


def _verdict(targets: dict, table=None, **edit):
    targets["targets"][0].update(edit)
    run = RunResults(synthetic_results() if table is None else table, _ranking())
    return certify(run, targets).iloc[0]


def test_a_run_that_meets_the_needs_reproduces_or_deviates():
    row = _verdict(_fixture_targets())
    assert row["verdict"] == "reproduced" and row["obtained"] == pytest.approx(11.5)
    assert row["difference"] == pytest.approx(0.0, abs=1e-9) and row["explanation"] is None
    mcd = _verdict(_fixture_targets(mcd=True), published=6.5)  # the MC-dropout rows: 0.005 lower
    assert mcd["verdict"] == "reproduced"
    off = _verdict(_fixture_targets(), published=12.0, explanation="docs/methods.md#8-ranking-statistics")
    assert off["verdict"] == "deviates" and off["difference"] == pytest.approx(0.5)
    assert off["explanation"] == "docs/methods.md#8-ranking-statistics"
    assert pd.isna(off["in_interval"]) and pd.isna(off["ci_low"])  # two runs: no interval


def test_a_single_run_judges_the_published_value_against_the_interval():
    table = synthetic_results()
    table = table[table["run"] == 1].assign(ci_low=table["value"] - 0.0005, ci_high=table["value"] + 0.0005,
                                            n_boot=100, ci_level=0.95)
    inside = _verdict(_fixture_targets(), table, published=11.2, tolerance=0.5)  # run 1: 11.0, interval 10.5–11.5
    assert inside["verdict"] == "reproduced" and bool(inside["in_interval"])
    assert (inside["ci_low"], inside["ci_high"]) == (pytest.approx(10.5), pytest.approx(11.5))
    outside = _verdict(_fixture_targets(), table, published=11.7, tolerance=0.75)
    assert outside["verdict"] == "reproduced" and not bool(outside["in_interval"])


@pytest.mark.parametrize("inputs, fragment", [
    ({"source": "cifar10"}, "not run: needs source 'cifar10', which the run did not evaluate"),
    ({"backbone": "vit"}, "not run: needs backbone 'vit', which the run did not evaluate"),
    ({"dataset": "svhn"}, "not run: needs evaluation set 'svhn' of source 's1'"),
])
def test_a_run_without_the_data_is_not_run_naming_what_is_missing(inputs, fragment):
    assert _verdict(_fixture_targets(**inputs))["verdict"] == fragment
    no_mcd = synthetic_results()
    assert _verdict(_fixture_targets(mcd=True), no_mcd[~no_mcd["mcd"]])["verdict"] == (
        "not run: needs MC-dropout rows of backbone 'vgg13' on 's1'")


def _nc_target(published: float) -> dict:
    """Table 7(a)'s CIFAR-10 unfiltered Var Collapse cell as a target on a fixture run."""
    data = load_targets()
    target = next(t for t in data["targets"] if t["id"] == "cb-t7-vgg13-cifar10-none-var-collapse")
    return {**data, "targets": [{**target, "published": published}]}


def test_a_neural_collapse_target_averages_the_dropout_groups_of_the_runs_nc_table():
    # the NC table's rows of (vgg13, none) have Var Collapse 0.0078 (dropout 0) and 0.0086 (dropout 1): mean 0.0082
    nc = pd.DataFrame({"backbone": ["vgg13", "vgg13", "vgg13", "vit"], "dropout": [0, 1, 1, 0],
                       "regime": ["none", "none", "global", "none"], "n_models": 15,
                       "Var Collapse": [0.0078, 0.0086, 0.5, 0.9]})
    run = RunResults(synthetic_results(), _ranking(), {"cifar10": nc})
    row = certify(run, _nc_target(0.0081)).iloc[0]
    assert row["verdict"] == "reproduced" and row["obtained"] == pytest.approx(0.0082)
    assert row["tolerance"] == 0.001 and pd.isna(row["in_interval"])
    assert certify(run, _nc_target(0.0150)).iloc[0]["verdict"] == "deviates"
    without = certify(RunResults(synthetic_results(), _ranking()), _nc_target(0.0081)).iloc[0]
    assert without["verdict"] == ("not run: needs the neural-collapse table of source 'cifar10' (a run with a "
                                  "geometry section)")
    other = RunResults(synthetic_results(), _ranking(), {"cifar10": nc[nc["backbone"] == "vit"]})
    assert certify(other, _nc_target(0.0081)).iloc[0]["verdict"] == (
        "not run: needs neural-collapse rows of backbone 'vgg13' on 'cifar10' in regime 'none'")


def _run_metric_target(**inputs) -> dict:
    """A run_metric target on the synthetic results: GEN's new-class AUGRC, the mean of its o_near and o_far sets."""
    target = {"id": "fixture-run-metric", "paper": "nda", "artefact": "fixture", "quantity": "group-mean AUGRC",
              "convention": "newclass", "published": 0.8385, "tolerance": 1e-9, "tolerance_reason": "exact fixture",
              "recipe": "run_metric",
              "inputs": {"source": "s1", "backbone": "vgg13", "datasets": ["o_near", "o_far"], "scheme": "newclass",
                         "csf": "GEN", "variant": "none", "metric": "augrc", "scale": 1, **inputs},
              "needs": {"sources": ["s1"], "backbones": ["vgg13"], "datasets": ["o_near", "o_far"],
                        "config": "fixture.yaml"}}
    return {**load_targets(), "targets": [target]}


def test_a_run_metric_target_averages_the_runs_then_the_sets_of_its_group():
    # by hand (tests/helpers/results_synthetic.py): a newclass row is 1 − (0.01·factor + 0.001·run + 0.1·set
    # + 0.05·[dropout 0]); for the confidnet (factor 1), dropout-1 model over runs 1-2 the mean is
    # 1 − (0.01 + 0.0015 + 0.1·set): o_near 0.8885, o_far 0.7885, their mean 0.8385
    every = synthetic_results().assign(id_set="test")
    table = every[(every["paradigm"] == "confidnet") & (every["dropout"] == 1)]
    run = RunResults(table, _ranking())
    row = certify(run, _run_metric_target()).iloc[0]
    assert row["verdict"] == "reproduced" and row["obtained"] == pytest.approx(0.8385, abs=1e-12)
    scaled = certify(run, _run_metric_target(scale=100, datasets=["o_near"])).iloc[0]
    assert scaled["obtained"] == pytest.approx(88.85) and scaled["verdict"] == "deviates"
    # four configurations of the backbone: a published cell is one model's, so they are not pooled
    assert certify(RunResults(every, _ranking()), _run_metric_target()).iloc[0]["verdict"] == (
        "not run: the run's augrc rows of GEN (none, newclass) of backbone 'vgg13' come from 4 model configurations "
        "(paradigm, dropout, reward); the target reads one model's runs")
    assert certify(run, _run_metric_target(datasets=["o_near", "svhn"])).iloc[0]["verdict"] == (
        "not run: needs evaluation set(s) ['svhn'] of source 's1'")
    assert certify(run, _run_metric_target(csf="KNN")).iloc[0]["verdict"] == (
        "not run: needs augrc rows of KNN (none, newclass) on ['o_near', 'o_far']")
