"""ProjNorm (zero for identical data and seeds, grows with shift severity), baselines against hand-computed
values, R²/ρ against scipy, the stress-test regression, metric rows and config helpers."""
import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats


from csfbench.workflow.grid import Grid
from csfbench.data.base import ArrayImageSet
from csfbench.evaluation import COLUMNS
from csfbench.projnorm import baselines
from csfbench.projnorm.evaluate import correlations, r2_spearman, stress_table
from csfbench.projnorm.finetune import finetune, initial_model, parameter_distance, predict, trained_parameters
from csfbench.projnorm.rows import metric_rows
from csfbench.workflow.settings import load_config
from csfbench.shifts.corruptions import corrupt_images
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec

from tests.helpers.repo import REPO

CPU = torch.device("cpu")
SETTINGS = {"iterations": 12, "lr": 1e-2, "batch_size": 32, "momentum": 0.9, "weight_decay": 0.0, "seed": 1}


# ------------------------------------------------------------------ baselines, hand-computed

LOGITS = np.log(np.array([[0.7, 0.2, 0.1], [0.5, 0.5, 1e-300], [0.1, 0.1, 0.8]]))


def test_conf_score_and_entropy_by_hand():
    assert baselines.conf_score(LOGITS) == pytest.approx((0.7 + 0.5 + 0.8) / 3)
    h = [-(0.7 * np.log(0.7) + 0.2 * np.log(0.2) + 0.1 * np.log(0.1)), np.log(2),
         -(2 * 0.1 * np.log(0.1) + 0.8 * np.log(0.8))]
    assert baselines.entropy_score(LOGITS) == pytest.approx(np.mean(h))


def test_atc_threshold_leaves_the_validation_error_below_it():
    # max-confidence scores 0.9, 0.8, 0.6, 0.55, 0.4; predictions 0,0,1,0,1 vs labels 0,0,0,0,1: error 1/5
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.55, 0.45], [0.6, 0.4]])
    probs[4] = [0.4, 0.6]
    val_logits, val_labels = np.log(probs), np.array([0, 0, 0, 0, 1])
    t = baselines.atc_threshold(val_logits, val_labels, "max_confidence")
    assert t == pytest.approx(0.6)  # k = round(0.2 · 5) = 1: the second-smallest of 0.55, 0.6, 0.6, 0.8, 0.9
    assert np.mean(baselines.sample_scores(val_logits, "max_confidence") < t) == pytest.approx(0.2)
    shifted = np.log(np.array([[0.52, 0.48], [0.7, 0.3], [0.5, 0.5], [0.95, 0.05]]))
    assert baselines.atc_error(shifted, t, "max_confidence") == pytest.approx(0.5)
    all_wrong = baselines.atc_threshold(val_logits, 1 - val_logits.argmax(1), "negative_entropy")
    assert all_wrong == np.inf
    with pytest.raises(ValueError, match="unknown ATC score"):
        baselines.sample_scores(val_logits, "energy")


def test_agree_score_is_the_disagreement_rate():
    assert baselines.agree_score([0, 1, 2, 3], [0, 1, 0, 0]) == 0.5
    with pytest.raises(ValueError, match="shapes"):
        baselines.agree_score([0, 1], [0])


# ------------------------------------------------------------------ evaluation vs scipy

def _per_set(rng, n_sets=8):
    err = np.sort(rng.uniform(0.05, 0.9, n_sets))
    rows = [{"source": "s", "model": "m", "dataset": f"corrupt-contrast-{i + 1}", "shift_type": "covariate",
             "test_error": e, "ConfScore": 1 - e + rng.normal(0, 0.05), "Entropy": 2 * e + rng.normal(0, 0.1),
             "ATC": e + rng.normal(0, 0.02), "AgreeScore": np.nan, "ProjNorm": 3 * e + 1 + rng.normal(0, 0.1)}
            for i, e in enumerate(err)]
    rows.append({"source": "s", "model": "m", "dataset": "test", "shift_type": "id", "test_error": 0.04,
                 "ConfScore": 0.95, "Entropy": 0.1, "ATC": 0.05, "AgreeScore": np.nan, "ProjNorm": 1.1})
    for eps, e in ((2, 0.5), (8, 0.99)):
        rows.append({"source": "s", "model": "m", "dataset": f"pgd-eps{eps}", "shift_type": "adversarial",
                     "test_error": e, "ConfScore": 0.9, "Entropy": 0.2, "ATC": 0.1, "AgreeScore": np.nan,
                     "ProjNorm": 1.5 + eps / 8})
    return pd.DataFrame(rows)


def test_correlations_match_scipy():
    per_set = _per_set(np.random.default_rng(0))
    corr = correlations(per_set).set_index("predictor")
    cov = per_set[per_set.shift_type == "covariate"]
    assert set(corr.index) == {"ConfScore", "Entropy", "ATC", "ProjNorm"}  # AgreeScore all NaN: left out
    for predictor, sign in (("ConfScore", -1), ("ProjNorm", 1)):
        assert corr.loc[predictor, "r2"] == pytest.approx(stats.pearsonr(cov[predictor], cov.test_error)[0] ** 2)
        assert corr.loc[predictor, "spearman"] == pytest.approx(stats.spearmanr(cov[predictor], cov.test_error)[0] * sign)
    assert corr.loc["ConfScore", "spearman"] > 0.5  # oriented: larger = more error
    assert corr.loc["ProjNorm", "n_sets"] == 8
    assert np.isnan(r2_spearman([1, 2], [1, 2])[0]) and np.isnan(r2_spearman([1, 1, 1], [1, 2, 3])[1])


def test_stress_table_applies_the_corruption_regression():
    per_set = _per_set(np.random.default_rng(1))
    table, mse = stress_table(per_set)
    assert table["dataset"].tolist() == ["test", "pgd-eps2", "pgd-eps8"]
    assert table["eps"].tolist() == [0.0, 2.0, 8.0] and table["attack"].tolist() == ["clean", "pgd", "pgd"]
    cov = per_set[per_set.shift_type == "covariate"]
    fit = stats.linregress(cov["ProjNorm"], cov["test_error"])
    expected = fit.intercept + fit.slope * per_set.set_index("dataset").loc["pgd-eps8", "ProjNorm"]
    assert table.set_index("dataset").loc["pgd-eps8", "ProjNorm"] == pytest.approx(expected)
    # the MSE covers the clean test set (ε = 0) and the adversarial sets, as the paper's Table 9; the
    # ε > 0 mean is an extra column
    adv = table[table.attack == "pgd"]
    atc = mse.set_index("predictor").loc["ATC"]
    assert atc["mse"] == pytest.approx(np.mean((table["ATC"] - table["test_error"]) ** 2))
    assert atc["mse_eps_positive"] == pytest.approx(np.mean((adv["ATC"] - adv["test_error"]) ** 2))
    spec = ModelSpec(source="s", model="m", backbone="vgg13", paradigm="dg", dropout=1, reward=2.2, run=1, seed=0,
                     n_classes=4, image_size=32, normalize={}, arch={}, mcd_samples=0, optim={}, paradigm_params={},
                     dataset=DatasetSpec("s", "npy", "unused"), val_size=1)
    groups = {name: EvalSet(name, "covariate", "covariate").groups for name in per_set["dataset"]}
    rows = metric_rows({"m": spec}, per_set, correlations(per_set), table, groups)
    assert list(rows.columns) == COLUMNS and not rows.duplicated([c for c in COLUMNS if c != "value"]).any()
    assert set(rows["metric"]) == {"test_error", "predictor_value", "r2", "spearman", "predicted_error"}
    # a corruption set's rows carry its group keys (parsed from its name), the other sets' none
    keyed = rows.dropna(subset=["corruption"])
    corrupted = {name for name, keys in groups.items() if keys["corruption"] is not None}
    assert set(keyed["dataset"]) == corrupted and {"corrupt-contrast-1", "corrupt-contrast-5"} <= corrupted
    assert (keyed["severity"] == keyed["dataset"].str.rsplit("-", n=1).str[1].astype(int)).all()
    assert rows.loc[~rows["dataset"].isin(corrupted), "corruption"].isna().all()


def test_stress_mse_includes_the_clean_test_set_by_hand():
    """Yu et al., "Predicting Out-of-Distribution Error with the Projection Norm" (ICML 2022), App. E:
    Table 9's MSE is over every column of Table 10, the first being the clean test set (ε = 0).

    Covariate sets x = 0, 1, 2 with errors 0.1, 0.3, 0.5 give the exact fit ŷ = 0.1 + 0.2 x; the clean
    set (x = 0.5, error 0.05) is predicted 0.2, pgd ε = 2 (x = 1.5, error 0.6) 0.4 and pgd ε = 8
    (x = 2.5, error 1.0) 0.6: squared errors 0.0225, 0.04 and 0.16.
    """
    rows = [{"dataset": f"corrupt-contrast-{i + 1}", "shift_type": "covariate", "test_error": e, "ProjNorm": x}
            for i, (x, e) in enumerate(((0.0, 0.1), (1.0, 0.3), (2.0, 0.5)))]
    rows += [{"dataset": "test", "shift_type": "id", "test_error": 0.05, "ProjNorm": 0.5},
             {"dataset": "pgd-eps2", "shift_type": "adversarial", "test_error": 0.6, "ProjNorm": 1.5},
             {"dataset": "pgd-eps8", "shift_type": "adversarial", "test_error": 1.0, "ProjNorm": 2.5}]
    per_set = pd.DataFrame([{"source": "s", "model": "m", **r} for r in rows])
    table, mse = stress_table(per_set)
    assert table["ProjNorm"].tolist() == pytest.approx([0.2, 0.4, 0.6])
    assert mse.to_dict("records") == [{"source": "s", "model": "m", "predictor": "ProjNorm",
                                       "mse": pytest.approx((0.0225 + 0.04 + 0.16) / 3),
                                       "mse_eps_positive": pytest.approx((0.04 + 0.16) / 2)}]


# ------------------------------------------------------------------ ProjNorm on a trained micro model

def _projnorm(spec, model, images, reference, settings=SETTINGS):
    pseudo = predict(model, spec, images, 64, CPU)
    tilde = finetune(initial_model(spec, 1, CPU), spec, images, pseudo, settings, CPU)
    return parameter_distance(trained_parameters(tilde), reference)


def test_projnorm_is_zero_for_the_reference_data_and_seed(trained):
    model, spec, train, _ = trained
    # reference: θ0 fine-tuned on the training images with the labels the model predicts for them;
    # ProjNorm of the same images (pseudo-labelled by the same model) under the same seeds is exactly 0
    pseudo = predict(model, spec, train, 64, CPU)
    reference = trained_parameters(finetune(initial_model(spec, 1, CPU), spec, train, pseudo, SETTINGS, CPU))
    assert _projnorm(spec, model, train, reference) == 0.0
    other = trained_parameters(finetune(initial_model(spec, 2, CPU), spec, train, pseudo, SETTINGS, CPU))
    assert parameter_distance(reference, other) > 0


def test_projnorm_grows_with_shift_severity(trained):
    # the blobs' class is a colour: contrast loss raises the error (about 0.17 -> 0.68 here)
    model, spec, train, test = trained
    settings = {**SETTINGS, "iterations": 20, "lr": 0.05}
    reference = trained_parameters(finetune(initial_model(spec, 1, CPU), spec, train, train.labels, settings, CPU))
    clean = np.stack([test.image(i) for i in range(len(test))])
    values, errors = [], []
    for severity in (0, 5):
        images = ArrayImageSet(f"contrast{severity}", corrupt_images(clean, "contrast", severity, 0) if severity
                               else clean, test.labels, test.sample_ids)
        values.append(_projnorm(spec, model, images, reference, settings))
        errors.append(float(np.mean(predict(model, spec, images, 64, CPU) != test.labels)))
    assert errors[1] > errors[0] + 0.3, errors
    assert values[1] > values[0], values


def test_parameter_distance_by_hand_and_errors():
    a = {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.0])}
    b = {"w": torch.tensor([4.0, 6.0]), "b": torch.tensor([0.0])}
    assert parameter_distance(a, b) == pytest.approx(5.0)
    with pytest.raises(ValueError, match="parameter sets differ"):
        parameter_distance(a, {"w": b["w"]})


def test_finetune_rejects_bad_labels(trained):
    model, spec, train, _ = trained
    with pytest.raises(ValueError, match="labels must lie in 0..3"):
        finetune(model, spec, train, np.full(len(train), 7), SETTINGS, CPU)


# ------------------------------------------------------------------ config helpers

def test_study_sets_and_partner():
    config = load_config(REPO / "tests/config/micro.yaml")
    model = "vgg13_dg_do1_rew2.2_run1"
    assert Grid(config).corruption_sets("demo10") == [f"corrupt-contrast-{s}" for s in (1, 3, 5)]
    assert Grid(config).adversarial_sets("demo10", model) == ["pgd-eps8"]
    assert Grid(config).adversarial_sets("demo10", "vit_ce_do0_rew0_run1") == []
    assert Grid(config).projnorm_sets("demo10", model) == ["test", "corrupt-contrast-1", "corrupt-contrast-3",
                                                          "corrupt-contrast-5", "pgd-eps8"]
    assert Grid(config).agree_partner(model) == "vgg13_dg_do1_rew2.2_run2"
    adv = Grid(config).eval_set_spec("demo10", "pgd-eps8", model)
    assert adv.shift_type == "adversarial" and adv.dataset.path.endswith(f"{model}/pgd-eps8")
    assert Grid(config).attack_spec("pgd-eps8") == {"name": "pgd", "eps": 8.0, "steps": 3, "step_size": 2.5 * 8 / 3,
                                                   "random_start": False}
    with pytest.raises(ValueError, match="the model must be given"):
        Grid(config).eval_set_spec("demo10", "pgd-eps8")
