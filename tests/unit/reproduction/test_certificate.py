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
    families = {targets[target]["paper"] for target in free["target"]}
    assert families == {"cb", "imagenet_ood", "nda", "iconic", "yu"}, families

    data = certificate[[targets[t]["needs"] is not None for t in certificate["target"]]]
    assert len(data) and data["verdict"].str.startswith("not run: needs a run of config/paper.yaml (sources ").all()
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
