"""Correct/incorrect decomposition of new-class and failure AUROC (Yang, Zhang & Russakovsky,
"ImageNet-OOD: Deciphering Modern Out-of-Distribution Detection Algorithms", ICLR 2024, App. E,
Table 4): direct values against scikit-learn, the identities on random tied data, the paper's
numeric case, and the per-cell check."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from csfbench import metrics as m
from csfbench.analysis import decomposition as dec
from csfbench.reproduction import load_targets

#: Yang, Zhang & Russakovsky, Table 4's conditional AUROCs ×100 (the reproduction targets' published inputs)
_TABLE4 = load_targets()["published_inputs"]["imagenet_ood_table4"]


def tied_cell(rng, n_id=300, n_ood=170, levels=9, accuracy=None):
    acc = rng.uniform(0.2, 0.9) if accuracy is None else accuracy
    id_conf = rng.integers(0, levels, n_id) / levels
    correct = rng.random(n_id) < acc
    ood_conf = rng.integers(0, levels, n_ood) / levels - 0.1 * rng.integers(0, 2, n_ood)
    return id_conf, correct, ood_conf


def sklearn_values(id_conf, correct, ood_conf):
    """The six AUROCs from scikit-learn (positive = the ID-role side, label 1)."""
    n_id, n_ood = id_conf.size, ood_conf.size
    cor, inc = id_conf[correct], id_conf[~correct]
    both = np.concatenate
    a_co = roc_auc_score(both([np.ones(cor.size), np.zeros(n_ood)]), both([cor, ood_conf]))
    a_io = roc_auc_score(both([np.ones(inc.size), np.zeros(n_ood)]), both([inc, ood_conf]))
    a_ci = roc_auc_score(both([np.ones(cor.size), np.zeros(inc.size)]), both([cor, inc]))
    nc = roc_auc_score(both([np.ones(n_id), np.zeros(n_ood)]), both([id_conf, ood_conf]))
    labels = both([correct.astype(float), np.zeros(n_ood)])
    scores = both([id_conf, ood_conf])
    weights = both([np.full(n_id, 1 / n_id), np.full(n_ood, 1 / n_ood)])
    fd = roc_auc_score(labels, scores, sample_weight=weights)
    fd_pooled = roc_auc_score(labels, scores)
    return {"a_co": a_co, "a_io": a_io, "a_ci": a_ci, "newclass": nc, "failure": fd, "failure_pooled": fd_pooled}


@pytest.mark.parametrize("seed", range(6))
def test_direct_values_and_identities_match_sklearn_on_tied_data(seed):
    rng = np.random.default_rng(seed)
    id_conf, correct, ood_conf = tied_cell(rng)
    got = dec.decompose(id_conf, correct, ood_conf)
    ref = sklearn_values(id_conf, correct, ood_conf)
    for name, value in ref.items():
        assert getattr(got, name) == pytest.approx(value, abs=1e-12), name
    a, n_inc, n_out = correct.mean(), int((~correct).sum()), ood_conf.size
    assert got.accuracy == a and (got.n_correct, got.n_incorrect, got.n_ood) == (int(correct.sum()), n_inc, n_out)
    # the three identities, with scikit-learn on both sides
    assert ref["newclass"] == pytest.approx(a * ref["a_co"] + (1 - a) * ref["a_io"], abs=1e-12)
    assert ref["failure"] == pytest.approx(((1 - a) * ref["a_ci"] + ref["a_co"]) / (2 - a), abs=1e-12)
    assert ref["failure_pooled"] == pytest.approx((n_inc * ref["a_ci"] + n_out * ref["a_co"]) / (n_inc + n_out),
                                                  abs=1e-12)
    # and with ours
    assert abs(got.newclass - got.newclass_from_parts) < 1e-12
    assert abs(got.failure - got.failure_from_parts) < 1e-12
    assert abs(got.failure_pooled - got.failure_pooled_from_parts) < 1e-12
    dec.check_identities(got, {"seed": seed})


@pytest.mark.parametrize("seed", range(4))
def test_auroc_orientation_id_positive_equals_ood_positive_on_negated_scores(seed):
    rng = np.random.default_rng(100 + seed)
    id_conf, _, ood_conf = tied_cell(rng)
    s = np.concatenate([id_conf, ood_conf])
    is_id = np.concatenate([np.ones(id_conf.size), np.zeros(ood_conf.size)])
    id_positive = roc_auc_score(is_id, s)
    ood_positive = roc_auc_score(1 - is_id, -s)
    assert id_positive == pytest.approx(ood_positive, abs=1e-15)
    ours = m.auroc(s, 1 - is_id)  # residual 1 = the OOD side, success (ID) positive
    assert ours == pytest.approx(id_positive, abs=1e-12)
    # OOD as the positive class (residual 0) on -s: the same value
    assert m.auroc(-s, is_id) == pytest.approx(id_positive, abs=1e-12)
    assert m.auroc(s, is_id) == pytest.approx(1 - id_positive, abs=1e-12)  # OOD positive on s: the complement


@pytest.mark.parametrize("method, nc, fd", [
    ("MSP", 0.7921, 0.8680),   # Table 4 -> Table 3's 79.2 / 86.8
    ("Max-Logit", 0.8045, 0.8464),
    ("Energy", 0.7991, 0.8363),
])
def test_paper_numeric_case(method, nc, fd):
    # by hand, MSP: NC = 0.7613·0.869 + 0.2387·0.547 = 0.79213; FD = (0.2387·0.864 + 0.869)/1.2387 = 0.86804
    row = _TABLE4[method]
    a_co, a_io, a_ci = (row[k] / 100 for k in ("a_co", "a_io", "a_ci"))
    assert round(dec.newclass_from_parts(a_co, a_io, row["accuracy"]), 4) == nc
    assert round(dec.failure_weighted_from_parts(a_co, a_ci, row["accuracy"]), 4) == fd


def test_pooled_from_parts_hand_value():
    # n_inc = 10, n_out = 30: (10·0.6 + 30·0.8) / 40 = 0.75
    assert dec.failure_pooled_from_parts(0.8, 0.6, 10, 30) == pytest.approx(0.75)


def test_all_correct_and_all_incorrect_cells():
    ood = np.array([0.1, 0.5, 0.2])
    every = dec.decompose([0.9, 0.4, 0.6], [1, 1, 1], ood)
    assert math.isnan(every.a_io) and math.isnan(every.a_ci)
    assert every.newclass == every.failure == every.failure_pooled == every.a_co == pytest.approx(8 / 9)
    dec.check_identities(every)
    none = dec.decompose([0.9, 0.4, 0.6], [0, 0, 0], ood)
    assert math.isnan(none.a_co) and math.isnan(none.failure) and math.isnan(none.failure_pooled)
    assert none.newclass == none.a_io == pytest.approx(8 / 9)
    dec.check_identities(none)


def test_check_identities_names_the_cell():
    rng = np.random.default_rng(7)
    good = dec.decompose(*tied_cell(rng))
    dec.check_identities(dataclasses.replace(good, newclass=good.newclass + 5e-10), "c")  # inside 1e-9
    bad = dataclasses.replace(good, failure=good.failure + 2e-9)
    with pytest.raises(dec.IdentityError, match=r"cell model='resnet', csf='MSP'.*failure: direct"):
        dec.check_identities(bad, {"model": "resnet", "csf": "MSP"})
    with pytest.raises(dec.IdentityError, match="pooled"):
        dec.check_identities(dataclasses.replace(good, failure_pooled=math.nan), ("m", "x"))


def test_decomposition_table_checks_every_cell():
    rng = np.random.default_rng(8)
    cells = {(model, csf): tied_cell(rng, n_id=80, n_ood=40) for model in ("m1", "m2") for csf in ("MSP", "Energy")}
    table = dec.decomposition_table(cells, ("model", "csf"))
    assert list(table[["model", "csf"]].itertuples(index=False, name=None)) == list(cells)
    assert {"a_co", "a_io", "a_ci", "newclass_from_parts", "failure_pooled_from_parts"} <= set(table.columns)
    dec.check_identity_table(table, ["model", "csf"])
    broken = table.copy()
    broken.loc[2, "newclass"] += 1e-6
    with pytest.raises(dec.IdentityError, match=r"1 cell\(s\):\n  cell model='m2', csf='MSP': newclass"):
        dec.check_identity_table(broken, ["model", "csf"])
    with pytest.raises(ValueError, match="missing column"):
        dec.check_identity_table(table.drop(columns="a_io"), ["model", "csf"])
    with pytest.raises(ValueError, match="key_names"):
        dec.decomposition_table({("m1",): tied_cell(rng)}, ("model", "csf"))


def test_conditional_auroc_table_splits_the_change_against_a_reference():
    rng = np.random.default_rng(9)
    id_conf, correct, ood_conf = tied_cell(rng, accuracy=0.76)
    noise = rng.normal(0, 0.2, id_conf.size)
    id_scores = {"MSP": id_conf, "MaxLogit": id_conf + noise * (~correct)}
    ood_scores = {"MSP": ood_conf, "MaxLogit": ood_conf}
    table = dec.conditional_auroc_table(id_scores, correct, ood_scores, reference="MSP")
    assert list(table.index) == ["MSP", "MaxLogit"]
    assert table.loc["MSP", ["delta_newclass", "delta_from_correct", "delta_from_incorrect"]].abs().max() == 0
    row = table.loc["MaxLogit"]
    assert row["delta_from_correct"] == pytest.approx(0.0, abs=1e-12)  # correct samples untouched
    assert row["delta_newclass"] == pytest.approx(row["delta_from_correct"] + row["delta_from_incorrect"], abs=1e-12)
    assert isinstance(table, pd.DataFrame)
    with pytest.raises(ValueError, match="same CSFs"):
        dec.conditional_auroc_table(id_scores, correct, {"MSP": ood_conf})
    with pytest.raises(ValueError, match="reference CSF"):
        dec.conditional_auroc_table(id_scores, correct, ood_scores, reference="ViM")


def test_decompose_input_errors():
    with pytest.raises(ValueError, match="non-empty"):
        dec.decompose([0.1], [1], [])
    with pytest.raises(ValueError, match="id_correct"):
        dec.decompose([0.1, 0.2], [1, 3], [0.3])
