"""ICONIC-444's tables (Krumpl, Avenhaus & Possegger, arXiv 2601.10802, Tables 4 and 10): category
means ± deviation over runs, the "Average" column (mean of the category means ± their ddof-1
deviation) against hand computations, pooled and averaged sub-dataset categories, both FPR
conventions."""
import math

import numpy as np
import pandas as pd
import pytest

from csfbench import metrics as m
from csfbench.analysis import iconic
from csfbench.reproduction import load_targets


def test_category_metrics_both_conventions_and_pooling():
    rng = np.random.default_rng(0)
    id_conf = rng.normal(1, 1, 400)
    subsets = {"imagenet": rng.normal(0, 1, 150), "textures": rng.normal(-1, 1, 90)}
    rows = iconic.category_metrics(id_conf, subsets).set_index(["subset", "metric"])["value"]
    assert set(rows.index.get_level_values(0)) == {"imagenet", "textures", iconic.POOLED}
    for name, ood in [*subsets.items(), (iconic.POOLED, np.concatenate(list(subsets.values())))]:
        conf = np.r_[id_conf, ood]
        res = np.r_[np.zeros(id_conf.size), np.ones(ood.size)]
        assert rows[(name, "auroc")] == pytest.approx(m.auroc(conf, res))
        assert rows[(name, "fpr95")] == pytest.approx(m.fpr_at_tpr(conf, res, 0.95, "success"))
        assert rows[(name, "fpr99_failure_positive")] == pytest.approx(m.fpr_at_tpr(conf, res, 0.99, "failure"))
    assert rows[("imagenet", "fpr99")] != rows[("imagenet", "fpr99_failure_positive")]  # the conventions differ
    single = iconic.category_metrics(id_conf, {"near": subsets["imagenet"]}, metrics=("auroc",))
    assert list(single["subset"]) == ["near"]
    with pytest.raises(ValueError, match="reserved"):
        iconic.category_metrics(id_conf, {iconic.POOLED: id_conf})


def fixture_frame():
    """GRAM and MSP, 2 tasks × 1 arch × 2 runs; 'extreme' has two sub-datasets plus pooled rows."""
    rows = []
    runs = [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)]
    gram = {"near": [0.30, 0.40, 0.34, 0.36], "far": [0.2] * 4, "synthetic": [0.01, 0.03, 0.01, 0.03]}
    for i, (task, run) in enumerate(runs):
        for method, shift in (("GRAM", 0.0), ("MSP", 0.5)):
            base = {"method": method, "task": task, "arch": "r18", "run": run, "metric": "fpr95"}
            for category, values in gram.items():
                rows.append({**base, "category": category, "subset": category, "value": values[i] + shift})
            rows.append({**base, "category": "extreme", "subset": "imagenet", "value": 0.0 + shift})
            rows.append({**base, "category": "extreme", "subset": "textures", "value": 0.1 + shift})
            rows.append({**base, "category": "extreme", "subset": iconic.POOLED, "value": 0.02 + shift})
    frame = pd.DataFrame(rows)
    # categories in the paper's order: near, far, extreme, synthetic
    order = {"near": 0, "far": 1, "extreme": 2, "synthetic": 3}
    return frame.sort_values("category", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)


def test_summary_hand_computation():
    summary = iconic.iconic_summary(fixture_frame())
    gram = summary[summary.method == "GRAM"].set_index(["view", "category"])
    near = gram.loc[("averaged", "near")]
    assert near["mean"] == pytest.approx(0.35) and near["n"] == 4 and near["aggregation"] == "single"
    # ddof 1 over the 4 runs: deviations -0.05, 0.05, -0.01, 0.01
    assert near["std"] == pytest.approx(math.sqrt((0.0025 + 0.0025 + 0.0001 + 0.0001) / 3))
    assert gram.loc[("averaged", "extreme"), "mean"] == pytest.approx(0.05)
    assert gram.loc[("averaged", "extreme"), "aggregation"] == "averaged"
    assert gram.loc[("pooled", "extreme"), "mean"] == pytest.approx(0.02)
    assert gram.loc[("pooled", "extreme"), "aggregation"] == "pooled"
    # Average (averaged view): category means 0.35, 0.2, 0.05, 0.02 -> 0.155; deviations 0.195, 0.045, -0.105, -0.135
    avg = gram.loc[("averaged", "Average")]
    assert avg["mean"] == pytest.approx(0.155)
    assert avg["std"] == pytest.approx(math.sqrt((0.038025 + 0.002025 + 0.011025 + 0.018225) / 3))
    assert avg["n"] == 4
    # Average (pooled view): 0.35, 0.2, 0.02, 0.02 -> 0.1475; deviations 0.2025, 0.0525, -0.1275, -0.1275
    pooled = gram.loc[("pooled", "Average")]
    assert pooled["mean"] == pytest.approx(0.1475)
    assert pooled["std"] == pytest.approx(math.sqrt((0.04100625 + 0.00275625 + 2 * 0.01625625) / 3))
    msp = summary[(summary.method == "MSP") & (summary.view == "averaged") & (summary.category == "Average")]
    assert msp["mean"].item() == pytest.approx(0.655) and msp["std"].item() == pytest.approx(avg["std"])
    assert list(summary[summary.view == "averaged"].category.unique()) == ["near", "far", "extreme", "synthetic",
                                                                           "Average"]


def test_average_of_the_papers_gram_fpr95_row():
    # Table 4/10: GRAM FPR95 category means 35.74, 19.75, 0.00, 0.44 (the reproduction targets' published inputs)
    # -> Average 13.98 ± 17.18; every Average cell of Table 4 is a target of `csfbench reproduce`
    means = load_targets()["published_inputs"]["iconic_table4"]["GRAM"]["fpr95"]
    assert means == [35.74, 19.75, 0.00, 0.44]
    rows = [{"method": "GRAM", "task": "t", "arch": "a", "run": 0, "category": c, "subset": c, "metric": "fpr95",
             "value": v} for c, v in zip(("near", "far", "extreme", "synthetic"), means)]
    summary = iconic.iconic_summary(pd.DataFrame(rows))
    avg = summary[(summary.view == "averaged") & (summary.category == "Average")].iloc[0]
    assert round(avg["mean"], 2) == 13.98 and round(avg["std"], 2) == 17.18
    assert np.isnan(summary[summary.category == "near"]["std"]).all()  # one run: no deviation


def test_wide_table_labels_and_order():
    table = iconic.iconic_table(fixture_frame(), "pooled")
    assert list(table.index) == ["GRAM", "MSP"]
    categories = list(dict.fromkeys(table.columns.get_level_values("category")))
    assert categories == ["near", "far", "extreme (pooled)", "synthetic", "Average"]
    assert table.loc["GRAM", ("extreme (pooled)", "fpr95", "mean")] == pytest.approx(0.02)
    assert table.loc["GRAM", ("Average", "fpr95", "std")] == pytest.approx(
        math.sqrt((0.04100625 + 0.00275625 + 2 * 0.01625625) / 3))
    # beside each mean its deviation and the number of values averaged: 4 runs, 4 categories for the Average
    assert list(table.columns[:3]) == [("near", "fpr95", "mean"), ("near", "fpr95", "std"), ("near", "fpr95", "n")]
    assert table.loc["GRAM", ("near", "fpr95", "n")] == 4 and table.loc["GRAM", ("Average", "fpr95", "n")] == 4
    averaged = iconic.iconic_table(fixture_frame())
    assert "extreme (averaged)" in averaged.columns.get_level_values("category")
    one_run = iconic.iconic_table(fixture_frame().query("task == 't1' and run == 0"))
    assert one_run.loc["GRAM", ("near", "fpr95", "n")] == 1 and np.isnan(one_run.loc["GRAM", ("near", "fpr95", "std")])
    with pytest.raises(ValueError, match="aggregation"):
        iconic.iconic_table(fixture_frame(), "median")


def test_input_errors():
    frame = fixture_frame()
    with pytest.raises(ValueError, match="no '\\(pooled\\)' rows"):
        iconic.iconic_summary(frame[frame.subset != iconic.POOLED])
    with pytest.raises(ValueError, match="lacks column"):
        iconic.iconic_summary(frame.drop(columns="run"))
