"""The CSF engine: variant registry, orientation of every variant, MCD variants, tuning, storage, bad input.

The CSF variants are those of Claros-Olivares & Brockmeier, *A Systematic Analysis of Out-of-Distribution
Detection Under Representation and Training Paradigm Shifts* (preprint; no year or arXiv id in its text),
§3.2 and App. A.4 (Table 3)."""
from __future__ import annotations

import dataclasses
from unittest import mock

import h5py
import numpy as np
import pytest

from csfbench.csf import engine
from csfbench.csf.engine import TuningSettings, fit_mode, score_mode
from csfbench.csf.projection import GROUP_VARIANTS, GROUPS, ClassSubspaces, Pca, class_rec_confidence, class_views, \
    n_components
from csfbench.csf.registry import EXPECTED, variants_for
from csfbench.csf.store import FIT_FORMAT, read_fit, write_fit
from csfbench.csf.temperature import fit_temperature, temperature_nll
from csfbench.csf.logit_scores import softmax
from csfbench.csf.views import build_views
from csfbench.errors import FeatureFileError

from tests.helpers.csf_synthetic import FIXED, FIXED_TUNING, make_splits, with_abstention_row

# the variant support matrix (Claros-Olivares & Brockmeier, Table 3 and the N/A cells of Table 8; 83 variants
# for a CNN, 82 for a ViT without Confidence), written out independently of the registry: CSF -> variants
SUPPORT = {
    **{name: {"none", "global", "class", "class_avg", "class_pred"}
       for name in ("MSR", "MLS", "PE", "GEN", "REN", "GE", "PCE", "Energy", "CTM", "CTMmean")},
    "GradNorm": {"none", "global", "class_avg", "class_pred"},
    "PCA RecError": {"global", "class", "class_avg", "class_pred"},
    "KPCA RecError": {"global", "class", "class_avg", "class_pred"},
    "CTMmeanOC": {"none"}, "Residual": {"none"}, "ViM": {"none"}, "NeCo": {"none"},
    **{name: {"none", "global", "class_avg", "class_pred"} for name in ("NNGuide", "fDBD", "Maha", "pNML")},
    "Confidence": {"none"},
}
# the post-hoc detectors of ICONIC-444 and ImageNet-OOD, on the unprojected outputs only
POSTHOC = ("MSP", "EBO", "ODIN", "KLM", "OpenMax", "KNN", "ReAct", "ASH-S", "ASH-B", "ASH-P", "SCALE", "DICE", "RMDS",
           "SHE", "MaxCosine")


def test_registry_has_83_cnn_and_82_vit_variants_matching_the_papers_support_matrix_plus_the_posthoc_detectors():
    cnn = {(csf.name, v) for csf, v in variants_for("vgg13")}
    vit = {(csf.name, v) for csf, v in variants_for("vit")}
    expected = {(name, v) for name, variants in SUPPORT.items() for v in variants}
    posthoc = {(name, "none") for name in POSTHOC}
    assert len(expected) == 83 and len(posthoc) == 15
    assert cnn == expected | posthoc
    assert vit == (expected - {("Confidence", "none")}) | posthoc


def _fit_and_score(group, splits, ctx, tuning=FIXED_TUNING):
    fitted = fit_mode(group, splits["train"], splits["val"], ctx, tuning)
    return fitted, {name: score_mode(splits[name], fitted, ctx) for name in ("test", "ood")}


@pytest.mark.parametrize("passes", [0, 4])
@pytest.mark.parametrize("group", GROUPS)
def test_every_variant_gives_far_ood_lower_confidence(group, passes):
    splits, ctx = make_splits(passes=passes)
    _, scores = _fit_and_score(group, splits, ctx)
    expected = {(c.name, v) for c, v in variants_for("vgg13", GROUP_VARIANTS[group])}
    if passes and group == "none":
        expected |= {(f"E{name}", "none") for name in EXPECTED} | {("MI", "none")}
    assert set(scores["test"]) == expected
    wrong = {key: (scores["test"][key].mean(), scores["ood"][key].mean()) for key in expected
             if not scores["test"][key].mean() > scores["ood"][key].mean()}
    assert not wrong, f"OOD not less confident than ID for {wrong}"


def test_a_methods_selection_fits_and_scores_only_those_csfs_with_their_expected_variants():
    splits, ctx = make_splits(passes=4)
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, FIXED_TUNING, frozenset({"MSR", "KNN"}))
    assert set(fitted.csfs) == {("MSR", "none"), ("KNN", "none")}
    assert set(score_mode(splits["test"], fitted, ctx)) == {("MSR", "none"), ("KNN", "none"), ("EMSR", "none"),
                                                           ("MI", "none")}


def test_class_variants_match_an_explicit_per_class_projection():
    splits, ctx = make_splits()
    fitted, scores = _fit_and_score("class", splits, ctx)
    proj = fitted.projection
    test = splits["test"]
    per_class = [proj["subspaces"].project_class(test.features, c) for c in range(ctx.n_classes)]
    class_logits = np.stack([per_class[c] @ ctx.weight[c] + ctx.bias[c] for c in range(ctx.n_classes)], 1)
    t = fitted.temperatures
    assert np.allclose(scores["test"][("MSR", "class")], softmax(class_logits, t["class"]).max(1))
    avg = np.mean(per_class, axis=0)
    assert np.allclose(scores["test"][("MLS", "class_avg")], (avg @ ctx.weight.T + ctx.bias).max(1) / t["class_avg"])
    pred_feat = np.stack([per_class[p][i] for i, p in enumerate(test.pred)])
    rec = -np.linalg.norm(test.features - pred_feat, axis=1) / np.linalg.norm(test.features, axis=1)
    assert np.allclose(scores["test"][("PCA RecError", "class_pred")], rec)
    cos = np.stack([per_class[c] @ ctx.weight[c] / np.linalg.norm(per_class[c], axis=1) / np.linalg.norm(ctx.weight[c])
                    for c in range(ctx.n_classes)], 1)
    assert np.allclose(scores["test"][("CTM", "class")], cos.max(1))


def test_k_keeps_at_least_the_requested_variance():
    values = np.array([4.0, 3.0, 2.0, 1.0])  # cumulative ratios 0.4, 0.7, 0.9, 1.0
    assert [n_components(values, v) for v in (0.3, 0.4, 0.5, 0.85, 0.9, 0.95, 1.0)] == [1, 2, 2, 3, 4, 4, 4]
    assert n_components(np.zeros(3), 0.9) == 0


def test_class_views_project_each_row_onto_every_class_subspace():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(30, 6))
    pcas = [Pca.fit(h[i::3]) for i in range(3)]
    subspaces = ClassSubspaces.from_pcas(pcas, 0.8)
    w, b = rng.normal(size=(3, 6)), rng.normal(size=3)
    pred = rng.integers(0, 3, 30)
    cv = class_views(h, pred, subspaces, w, b)
    for c, pca in enumerate(pcas):
        basis = pca.eigenvectors[:, :n_components(pca.eigenvalues, 0.8)]
        hc = (h - pca.mean) @ basis @ basis.T + pca.mean
        assert np.allclose(cv.logits[:, c], hc @ w[c] + b[c])
        assert np.allclose(cv.pred[pred == c], hc[pred == c])
        rec = -np.linalg.norm(h - hc, axis=1) / np.linalg.norm(h, axis=1)
        assert np.allclose(cv.rec[:, c], rec)
        assert np.allclose(class_rec_confidence(h, subspaces)[:, c], rec)  # the tuning objective's fast path


def test_temperature_minimises_the_validation_nll():
    splits, _ = make_splits()
    val = splits["val"]
    t = fit_temperature(val.logits, val.labels)
    grid = np.exp(np.linspace(np.log(t) - 1, np.log(t) + 1, 401))
    nll = [temperature_nll(val.logits, val.labels, g) for g in grid]
    assert temperature_nll(val.logits, val.labels, t) <= min(nll) + 1e-9
    assert fit_temperature(val.logits * 3, val.labels) == pytest.approx(3 * t, rel=1e-6)


def test_a_temperature_at_the_search_bound_is_logged_as_a_warning(caplog):
    """Separable validation logits: the NLL keeps falling as T → 0, so the minimiser sits on the lower bound;
    logits of no information about the labels put it on the upper bound.  A calibrated T logs nothing."""
    splits, _ = make_splits()
    val = splits["val"]
    with caplog.at_level("WARNING", logger="csfbench.csf.temperature"):
        fit_temperature(val.logits, val.labels)
        assert not caplog.records
        separable = np.eye(4)[np.arange(40) % 4] * 5.0
        fit_temperature(separable, np.arange(40) % 4)  # the NLL underflows to 0 below T ~ 0.01: any T there
        assert "than at the search bound T = 0.000123" in caplog.text
        assert "classified correctly" in caplog.text
        caplog.clear()
        uninformative = np.tile(np.eye(4), (10, 1)) * 5.0  # a quarter right: chance for C = 4
        assert fit_temperature(uninformative, np.ones(40, dtype=int)) > 8e3
        assert "than at the search bound T = 8.1e+03" in caplog.text
        assert "no better than chance" in caplog.text


def test_mcd_expected_variants_average_per_pass_scores():
    splits, ctx = make_splits(passes=4)
    _, scores = _fit_and_score("none", splits, ctx)
    test = splits["test"]
    fitted = fit_mode("none", splits["train"], splits["val"], ctx, FIXED_TUNING)
    t = fitted.temperatures["none"]
    per_pass = softmax(test.pass_logits, t).max(2)  # N×T per-pass MSR
    assert np.allclose(scores["test"][("EMSR", "none")], per_pass.mean(1))
    assert np.allclose(scores["test"][("MSR", "none")], softmax(test.pass_logits, t).mean(1).max(1))


def test_tuning_is_deterministic_and_uses_the_budget():
    splits, ctx = make_splits()
    tuning = TuningSettings(init_points=3, n_iter=2, seed=1, fixed={"KPCA RecError": FIXED["KPCA RecError"]})
    first = fit_mode("none", splits["train"], splits["val"], ctx, tuning)
    second = fit_mode("none", splits["train"], splits["val"], ctx, tuning)
    for key in (("GEN", "none"), ("REN", "none"), ("NNGuide", "none")):
        assert first.csfs[key].params == second.csfs[key].params
        assert len(first.csfs[key].objectives) == 5
        assert np.array_equal(first.csfs[key].objectives, second.csfs[key].objectives)
        # the chosen parameters are the best probe on validation
        assert first.csfs[key].objectives.max() == pytest.approx(first.csfs[key].objectives.max())
    assert 1 <= first.csfs[("GEN", "none")].params["m"] <= ctx.n_classes
    assert isinstance(first.csfs[("GEN", "none")].params["m"], int)


def test_a_tuned_state_is_the_best_probes_state_and_is_not_refitted():
    splits, ctx = make_splits()
    tuning = TuningSettings(init_points=3, n_iter=2, seed=1,
                            fixed={"projection": FIXED["projection"], "KPCA RecError": {"n_landmarks": 40}},
                            budgets={"KPCA RecError": (2, 2)})  # its own budget: 4 probes
    fits = {"NNGuide": 0, "KPCA RecError": 0}

    def counted(csf):
        def fit(train, c, hp):
            fits[csf.name] += 1
            return csf.fit(train, c, hp)
        return dataclasses.replace(csf, fit=fit)

    def counted_variants(backbone, variants, methods):
        return [(counted(csf) if csf.name in fits else csf, v) for csf, v in variants_for(backbone, variants, methods)]

    with mock.patch.object(engine, "variants_for", counted_variants):
        fitted = fit_mode("global", splits["train"], splits["val"], ctx, tuning)
    assert fits == {"NNGuide": 5, "KPCA RecError": 4}  # one fit per probe, none after the search
    train_views = build_views(splits["train"], fitted.projection, ctx.weight, ctx.bias, fitted.temperatures)
    for name in fits:
        item = fitted.csfs[(name, "global")]
        assert len(item.objectives) == fits[name]
        refit = engine.BY_NAME[name].fit(train_views["global"], ctx, item.params)
        assert item.state.keys() == refit.keys()
        for key in refit:
            np.testing.assert_array_equal(item.state[key], refit[key])


def test_fitting_accepts_only_the_train_and_val_splits():
    splits, ctx = make_splits()
    with pytest.raises(ValueError, match="train and val splits only"):
        fit_mode("none", splits["train"], splits["ood"], ctx, FIXED_TUNING)
    with pytest.raises(ValueError, match="train and val splits only"):
        fit_mode("none", splits["test"], splits["val"], ctx, FIXED_TUNING)


@pytest.mark.parametrize("group", GROUPS)
def test_fit_file_round_trip_reproduces_the_scores(tmp_path, group):
    splits, ctx = make_splits(passes=3)
    fitted, scores = _fit_and_score(group, splits, ctx)
    path = tmp_path / "fit.h5"
    write_fit(path, {"mcd": fitted}, (ctx.weight, ctx.bias), {"model": "m", "group": group, "quirks": "strict"})
    modes, head, attrs = read_fit(path)
    assert attrs["group"] == group and not list(tmp_path.glob(".*tmp*"))
    again = score_mode(splits["ood"], modes["mcd"], ctx)
    assert again.keys() == scores["ood"].keys()
    for key, conf in scores["ood"].items():
        assert np.array_equal(again[key], conf), key


def test_compat_authors_quirks_change_only_the_documented_variants():
    splits, ctx = make_splits(paradigm="dg")
    with_abstention_row(splits, ctx)
    strict = {g: _fit_and_score(g, splits, ctx)[1]["test"] for g in ("none", "class")}
    compat_ctx = dataclasses.replace(ctx, quirks="compat_authors")
    compat = {g: _fit_and_score(g, splits, compat_ctx)[1]["test"] for g in ("none", "class")}
    changed = {key for g in strict for key in strict[g] if not np.allclose(strict[g][key], compat[g][key])}
    documented = {("ViM", "none"), ("Residual", "none"), ("NeCo", "none"), ("NNGuide", "class_avg"),
                  ("NNGuide", "class_pred"), ("fDBD", "class_avg"), ("fDBD", "class_pred")}
    assert changed <= documented
    assert {("ViM", "none"), ("Residual", "none"), ("NeCo", "none"), ("fDBD", "class_avg"),
            ("fDBD", "class_pred")} <= changed


def test_compat_authors_neco_on_vit_uses_the_raw_feature_norm():
    splits, ctx = make_splits(backbone="vit", dim=128)  # NeCo keeps 100 of 128 directions
    strict = _fit_and_score("none", splits, ctx)[1]["test"]
    compat = _fit_and_score("none", splits, dataclasses.replace(ctx, quirks="compat_authors"))[1]["test"]
    assert not np.allclose(strict[("NeCo", "none")], compat[("NeCo", "none")])
    assert np.array_equal(strict[("ViM", "none")], compat[("ViM", "none")])  # no abstention row on a ViT


def test_an_undefined_csf_is_recorded_and_not_scored():
    splits, ctx = make_splits(dim=12, n_classes=3)
    for split in splits.values():  # features of rank 3: no residual subspace beyond the top D/2 = 6
        split.features[:, 3:] = 0.0
    fitted, scores = _fit_and_score("none", splits, ctx)
    assert "residual" in fitted.csfs[("ViM", "none")].undefined
    assert ("ViM", "none") not in scores["test"] and ("MSR", "none") in scores["test"]


def test_mismatched_dimensions_and_empty_splits_are_clear_errors():
    splits, ctx = make_splits()
    bad = dataclasses.replace(splits["val"], features=splits["val"].features[:, :10])
    with pytest.raises(ValueError, match="do not match the model head"):
        fit_mode("none", splits["train"], bad, ctx, FIXED_TUNING)
    empty = dataclasses.replace(splits["val"], features=splits["val"].features[:0], logits=splits["val"].logits[:0],
                                labels=splits["val"].labels[:0], pred=splits["val"].pred[:0])
    with pytest.raises(ValueError, match="val split is empty"):
        fit_mode("none", splits["train"], empty, ctx, FIXED_TUNING)


#: the detectors whose head runs in float32 on float32 features
FLOAT32_HEAD = ("ReAct", "ASH-S", "ASH-B", "ASH-P", "SCALE", "DICE")


@pytest.mark.parametrize("group", GROUPS)
def test_float32_features_as_stored_give_the_float64_scores(group):
    """The engine holds features in their storage precision, float32 (``inputs.load_splits``); every
    variant must score them as it scores the same values held as float64 (arithmetic in float64,
    apart from the documented float32 products of NNGuide, pNML and ViM/Residual, which round the
    same values either way).  The feature-shaping detectors apply the head in the features' own
    precision (feature_shaping._head_energy): float32 rounding there, so 1e-6."""
    splits, ctx = make_splits()
    stored = {name: dataclasses.replace(s, features=s.features.astype(np.float32)) for name, s in splits.items()}
    widened = {name: dataclasses.replace(s, features=s.features.astype(np.float64)) for name, s in stored.items()}
    _, from32 = _fit_and_score(group, stored, ctx)
    _, from64 = _fit_and_score(group, widened, ctx)
    for name in from64:
        for key, expected in from64[name].items():
            assert from32[name][key].dtype == np.float64, key
            rtol = 1e-6 if key[0] in FLOAT32_HEAD else 1e-9
            np.testing.assert_allclose(from32[name][key], expected, rtol=rtol, atol=1e-12, err_msg=f"{name} {key}")


def test_a_fit_file_of_another_format_is_refused_with_what_to_do(tmp_path):
    splits, ctx = make_splits()
    fitted, _ = _fit_and_score("none", splits, ctx)
    path = tmp_path / "fit.h5"
    write_fit(path, {"det": fitted}, (ctx.weight, ctx.bias), {"model": "m", "group": "none", "quirks": "strict"})
    with h5py.File(path, "a") as fh:  # a file written before the attribute existed (format 1)
        del fh.attrs["fit_format"]
    with pytest.raises(FeatureFileError,
                       match=f"CSF fit format 1, this csfbench reads format {FIT_FORMAT}.*--forcerun fit_csf"):
        read_fit(path)
