"""The pair analyses' job functions (csfbench.stages.analyses) on tiny scores and embeddings files with known
answers: the decomposition and false-rejection cells of a model, the cell check that names the failing cell,
the distance-controlled AUROC (semantic and covariate query sets), ICONIC-444's category rows and tables, the
rank comparison, the rank-gap gallery, the cliques over (model, pair) blocks and the whole job's outputs."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
from scipy.stats import linregress, percentileofscore
from sklearn.metrics import roc_auc_score

from csfbench.analysis import IdentityError
from csfbench.analysis import decomposition as decomposition_module
from csfbench.errors import FeatureFileError
from csfbench.proximity import encoders
from csfbench.report.analyses import pair_ranking_table
from csfbench.stats import IncompleteBlocksWarning
from csfbench.stages import analyses as stage
from csfbench.workflow.sections import AnalysisPair, Analyses

TRAINED = "vgg13_devries_do0_rew0_run1"
RANDOM = "vit_random_do0_rew0_run1"
SETTINGS = Analyses.from_dict({"enabled": True, "csfs": None, "pairs": [], "covariate_x_semantic": True,
                               "frr_quantile": 0.5, "reference_csf": "MSR", "distance_bins": 3, "gallery_k": 2,
                               "schemes": ["incorrect_vs_ood", "frr_at_q"]})

# ID test split: MSR confidences, correctness; the semantic set "near", the covariate set "corrupt"
TEST_MSR = [0.9, 0.8, 0.3, 0.2]
TEST_CORRECT = [1, 1, 0, 1]
NEAR_MSR = [0.5, 0.1]
CORRUPT_MSR = [0.7, 0.4, 0.35, 0.05]
CORRUPT_CORRECT = [1, 0, 1, 1]


def _set(name, shift_type, regime, msr, correct, mls=None, projected=None):
    return name, {"shift_type": shift_type, "regime": regime, "msr": msr, "correct": correct,
                  "mls": msr if mls is None else mls, "projected": projected}


def write_scores_file(path: Path, model: str, sets: list[tuple[str, dict]], source: str = "demo10") -> Path:
    """A scores file in the CSF stage's layout (csfbench.csf.store): per set det/correct, det/MSR/none,
    det/MLS/none and a projected variant det/MSR/global that the analyses must not read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as fh:
        fh.attrs.update(model=model, source=source)
        for name, s in sets:
            group = fh.create_group(name)
            group.attrs.update(dataset=name, shift_type=s["shift_type"], regime=s["regime"])
            group.create_dataset("det/correct", data=np.asarray(s["correct"], dtype=bool))
            group.create_dataset("det/MSR/none", data=np.asarray(s["msr"], dtype=float))
            group.create_dataset("det/MLS/none", data=np.asarray(s["mls"], dtype=float))
            group.create_dataset("det/MSR/global", data=np.full(len(s["msr"]), 0.5) if s["projected"] is None
                                 else np.asarray(s["projected"], dtype=float))
    return path


def standard_sets():
    return [_set("test", "id", "test", TEST_MSR, TEST_CORRECT, mls=[0.6, 0.9, 0.7, 0.1]),
            _set("near", "semantic", "near", NEAR_MSR, [0, 0], mls=[0.2, 0.3]),
            _set("corrupt", "covariate", "covariate", CORRUPT_MSR, CORRUPT_CORRECT, mls=[0.5, 0.45, 0.3, 0.2])]


@pytest.fixture
def trained(tmp_path):
    return write_scores_file(tmp_path / "trained.h5", TRAINED, standard_sets())


def test_model_cells_decompose_every_pair_and_reject_at_the_transferred_threshold(trained):
    table, frr, random = stage.model_cells(stage.read_model_scores(trained), SETTINGS)
    assert random == {}
    cells = table.set_index(["csf", "id_set", "ood_set"])
    assert set(cells.index) == {(c, i, "near") for c in ("MLS", "MSR") for i in ("test", "corrupt")}
    msr = cells.loc[("MSR", "test", "near")]
    # correct ID {0.9, 0.8, 0.2} vs near {0.5, 0.1}: 5 of 6 pairs; incorrect {0.3} vs near: 1 of 2;
    # correct vs incorrect ID: 2 of 3; a = 3/4 → NC = 3/4·5/6 + 1/4·1/2 = 0.75 (all ID vs near: 6 of 8)
    assert (msr["a_co"], msr["a_io"], msr["a_ci"], msr["accuracy"]) == pytest.approx((5 / 6, 0.5, 2 / 3, 0.75))
    assert msr["newclass"] == pytest.approx(0.75) and msr["n_ood"] == 2
    assert msr["failure"] == pytest.approx(((1 - 0.75) * 2 / 3 + 5 / 6) / (2 - 0.75))
    # corrupt in the ID role: correct {0.7, 0.35, 0.05}, incorrect {0.4}
    corrupt = cells.loc[("MSR", "corrupt", "near")]
    assert corrupt["a_co"] == pytest.approx(roc_auc_score([1, 1, 1, 0, 0], [0.7, 0.35, 0.05, *NEAR_MSR]))
    assert corrupt["a_io"] == pytest.approx(roc_auc_score([1, 0, 0], [0.4, *NEAR_MSR]))
    # threshold = median of near's MSR = 0.3: correct test samples below it {0.2} of 3; corrupt {0.05} of 3
    rows = frr.set_index(["csf", "set"])
    assert rows.loc[("MSR", "test"), "threshold"] == pytest.approx(0.3)
    assert rows.loc[("MSR", "test"), "frr"] == pytest.approx(1 / 3)
    assert rows.loc[("MSR", "corrupt"), "frr"] == pytest.approx(1 / 3)
    assert rows.loc[("MLS", "test"), "frr"] == pytest.approx(1 / 3)  # τ = 0.25: {0.1} of {0.6, 0.9, 0.1}
    assert set(frr["semantic_set"]) == {"near"} and set(frr["model"]) == {TRAINED}
    only_msr = stage.model_cells(stage.read_model_scores(trained),
                                 replace(SETTINGS, csfs=("MSR",), covariate_x_semantic=False,
                                         pairs=(AnalysisPair("test", "corrupt", None),)))[0]
    assert list(zip(only_msr["csf"], only_msr["id_set"], only_msr["ood_set"])) == [("MSR", "test", "corrupt")]


def write_metrics_file(path: Path) -> Path:
    """The CSF stage's metric rows as the pair analyses read them: the tuning protocol of every CSF variant."""
    pd.DataFrame({"mcd": False, "csf": ["MSR", "MLS", "MSR"], "variant": ["none", "none", "global"],
                  "tuning_protocol": ["bayes", "bayes", "bayes"]}).to_parquet(path, index=False)
    return path


def test_pair_rows_carry_every_scheme_of_their_pair_with_the_id_role_named(trained):
    settings = replace(SETTINGS, schemes=stage.PAIR_SCHEMES)
    table, frr, _ = stage.model_cells(stage.read_model_scores(trained), settings)
    sets = {"test": {"shift_type": "id", "regime": "test"}, "near": {"shift_type": "semantic", "regime": "near"},
            "corrupt": {"shift_type": "covariate", "regime": "covariate", "corruption": "fog", "severity": 3}}
    rows = stage.pair_metric_rows("demo10", table, frr, sets, settings, {(False, "MSR", "none"): "none"})
    msr = rows[rows["csf"] == "MSR"].set_index(["id_set", "scheme"])
    # the ID test split in the ID role: only the schemes its classical rows lack
    assert sorted(msr.loc["test"].index) == ["failure_pooled", "frr_at_q", "incorrect_vs_ood", "shiftdetect"]
    assert msr.loc[("test", "incorrect_vs_ood"), "value"] == pytest.approx(0.5)
    # pooled: (n_inc·A_ci + n_out·A_co) / (n_inc + n_out) = (1·2/3 + 2·5/6) / 3; shiftdetect = all ID vs near
    assert msr.loc[("test", "failure_pooled"), "value"] == pytest.approx(7 / 9)
    assert msr.loc[("test", "shiftdetect"), "value"] == pytest.approx(roc_auc_score([1] * 4 + [0] * 2,
                                                                                     TEST_MSR + NEAR_MSR))
    assert msr.loc[("test", "frr_at_q"), ["metric", "value"]].tolist() == ["frr_q0.5", pytest.approx(1 / 3)]
    # a covariate set in the ID role: every scheme, the OOD-role set in `dataset`
    assert len(msr.loc["corrupt"]) == 7 and set(msr["dataset"]) == {"near"}
    assert msr.loc[("corrupt", "correct_vs_ood"), "value"] == pytest.approx(
        roc_auc_score([1, 1, 1, 0, 0], [0.7, 0.35, 0.05, *NEAR_MSR]))
    assert set(rows["shift_type"]) == {"semantic"} and set(rows["regime"]) == {"near"}
    assert rows["corruption"].isna().all()  # the OOD-role set's group keys: near has none
    assert set(rows.loc[rows["csf"] == "MSR", "tuning_protocol"]) == {"none"}
    assert rows.loc[rows["csf"] == "MLS", "tuning_protocol"].isna().all()
    # an explicit pair names its own schemes
    explicit = replace(settings, covariate_x_semantic=False,
                       pairs=(AnalysisPair("corrupt", "near", ("incorrect_vs_ood",)),))
    table = stage.model_cells(stage.read_model_scores(trained), explicit)[0]
    only = stage.pair_metric_rows("demo10", table, frr, sets, explicit, {})
    assert set(only["scheme"]) == {"incorrect_vs_ood"} and set(only["id_set"]) == {"corrupt"}


def test_a_random_model_gets_its_check_scores_and_no_false_rejection(tmp_path):
    path = write_scores_file(tmp_path / "random.h5", RANDOM, standard_sets())
    table, frr, random = stage.model_cells(stage.read_model_scores(path), SETTINGS)
    assert frr.empty and set(table["paradigm"]) == {"random"}
    assert list(random["id"]["MSR"]) == TEST_MSR and set(random["shift"]) == {"near", "corrupt"}


def test_the_cell_check_fails_naming_the_cell(trained, monkeypatch):
    real = decomposition_module.decompose

    def off(id_conf, id_correct, ood_conf):
        cell = real(id_conf, id_correct, ood_conf)
        return cell if len(id_conf) != 4 or list(id_conf) != [0.7, 0.4, 0.35, 0.05] else \
            decomposition_module.Decomposition(**{**cell.__dict__, "newclass": cell.newclass + 1e-6})

    monkeypatch.setattr(decomposition_module, "decompose", off)
    with pytest.raises(IdentityError, match=f"model='{TRAINED}'.*csf='MSR', id_set='corrupt', ood_set='near'.*"
                                            "newclass: direct"):
        stage.model_cells(stage.read_model_scores(trained), SETTINGS)


def write_embeddings(path: Path, sets: dict[str, np.ndarray], encoder: str = "enc") -> Path:
    with h5py.File(path, "w") as fh:
        fh.attrs.update(source="demo10", encoder=encoder, sets=json.dumps(list(sets)))
        for name, emb in sets.items():
            fh.create_dataset(f"embeddings/{name}", data=emb)
        fh.create_dataset("labels", data=np.zeros(1, dtype=np.int64))
    return path


def test_distance_analysis_bins_semantic_and_covariate_sets_by_their_distance_to_the_id_test_split(tmp_path):
    rng = np.random.default_rng(0)
    test_msr = rng.uniform(size=6)
    near_msr, corrupt_msr = rng.uniform(size=6), rng.uniform(size=6)
    sets = [_set("test", "id", "test", test_msr, [1] * 6), _set("near", "semantic", "near", near_msr, [0] * 6),
            _set("corrupt", "covariate", "covariate", corrupt_msr, [1] * 6)]
    trained = write_scores_file(tmp_path / "a.h5", TRAINED, sets)
    partial = write_scores_file(tmp_path / "b.h5", "vgg13_devries_do0_rew0_run2", sets[:2])  # no covariate set
    # 1-D embeddings: the ID test split at 0 and 10, the query samples at known distances from 0
    near_distance, corrupt_distance = np.array([5.0, 1, 3, 2, 4, 0.5]), np.array([2.0, 2.5, 0.1, 4, 1, 3])
    proximity = write_embeddings(tmp_path / "p.h5", {"train": np.zeros((2, 1)), "test": np.array([[0.0], [10.0]]),
                                                     "near": -near_distance[:, None]})
    covariate = write_embeddings(tmp_path / "c.h5", {"corrupt": -corrupt_distance[:, None]})
    distances = stage.query_distances([proximity, covariate])
    parts = [stage.model_distance(stage.read_model_scores(path), distances, SETTINGS) for path in (trained, partial)]
    bins, fits = (pd.concat(frames, ignore_index=True) for frames in zip(*parts))
    overlaps = stage.distance_overlaps(fits)
    assert set(zip(fits["model"], fits["query_set"])) == {(TRAINED, "near"), (TRAINED, "corrupt"),
                                                          ("vgg13_devries_do0_rew0_run2", "near")}
    for name, distance, conf in (("near", near_distance, near_msr), ("corrupt", corrupt_distance, corrupt_msr)):
        mine = bins[(bins["model"] == TRAINED) & (bins["csf"] == "MSR") & (bins["query_set"] == name)]
        order = np.argsort(distance)
        for k, chunk in enumerate(np.split(order, 3)):  # 3 equal-count bins of 2 samples, nearest first
            row = mine[mine["bin"] == k].iloc[0]
            assert row["distance_mean"] == pytest.approx(distance[chunk].mean())
            assert row["auroc"] == pytest.approx(roc_auc_score([1] * 6 + [0] * 2, [*test_msr, *conf[chunk]]))
        fit = fits[(fits["model"] == TRAINED) & (fits["csf"] == "MSR") & (fits["query_set"] == name)].iloc[0]
        ref = linregress(mine["distance_mean"], mine["auroc"])
        assert (fit["slope"], fit["intercept"]) == pytest.approx((ref.slope, ref.intercept))
        assert (fit["slope_se"], fit["intercept_se"]) == pytest.approx((ref.stderr, ref.intercept_stderr))
    # the overlap flags: near vs corrupt per (model, CSF) of the model with both
    assert len(overlaps) == 2 and set(overlaps["cell"]) == {f"{TRAINED} MSR", f"{TRAINED} MLS"}
    with pytest.raises(ValueError, match="different encoders"):
        stage.query_embeddings([proximity, write_embeddings(tmp_path / "o.h5", {"corrupt": np.zeros((6, 1))}, "x")])
    short = write_embeddings(tmp_path / "s.h5", {"corrupt": np.zeros((5, 1))})
    with pytest.raises(ValueError, match=r"5 embeddings of set 'corrupt', but .*a\.h5 scores 6 samples"):
        stage.model_distance(stage.read_model_scores(trained), stage.query_distances([proximity, short]), SETTINGS)


def test_the_analyses_read_only_the_unprojected_deterministic_scores(tmp_path):
    path = write_scores_file(tmp_path / "t.h5", TRAINED, standard_sets())
    with h5py.File(path, "a") as fh:
        fh.create_dataset("test/mcd/correct", data=np.zeros(4, dtype=bool))
        fh.create_dataset("test/mcd/MSR/none", data=np.zeros(4))
    scores = stage.read_model_scores(path)
    assert (scores.model, scores.source, scores.paradigm) == (TRAINED, "demo10", "devries")
    assert set(scores.confidences) == {"test", "near", "corrupt"}
    assert list(scores.confidences["test"]["MSR"]) == TEST_MSR  # not the projected variant's 0.5s
    assert list(scores.correct["test"]) == [bool(c) for c in TEST_CORRECT]  # not the MC-dropout mode's
    assert scores.of("test", ["MLS"]).keys() == {"MLS"}
    assert stage.read_scores(path, "test")[0].keys() == {"det", "mcd"}
    assert stage.read_scores(path, "test", modes=("det",))[0].keys() == {"det"}
    with pytest.raises(FeatureFileError, match=r"t\.h5: no scores of evaluation set 'far' \(has \['corrupt', "):
        scores.of("far", None)
    with h5py.File(path, "a") as fh:
        del fh["near/det"]
    with pytest.raises(FeatureFileError, match=r"t\.h5: evaluation set 'near' has no scores of the deterministic"):
        stage.read_model_scores(path)
    with h5py.File(path, "a") as fh:
        del fh["test"]
    with pytest.raises(FeatureFileError, match=r"t\.h5: no scores of the ID test split \('test'\); has "
                                               r"\['corrupt', 'near'\]"):
        stage.read_model_scores(path)


def test_category_tables_are_written_when_no_source_has_a_category(tmp_path):
    """A failure-detection-only run (no semantic or covariate set anywhere) still gets its category tables and
    figure, with no rows, instead of a failed job."""
    plain = write_scores_file(tmp_path / "u.h5", TRAINED, standard_sets()[:1])
    long_file = tmp_path / "long.csv"
    stage.category_rows(stage.read_model_scores(plain), ["MSR"]).to_csv(long_file, index=False)
    outputs = {view: str(tmp_path / f"categories_{view}.csv") for view in ("averaged", "pooled")}
    outputs.update(png=str(tmp_path / "categories.png"), pdf=str(tmp_path / "categories.pdf"))
    stage.write_category_tables([long_file], outputs)
    for view in ("averaged", "pooled"):
        assert Path(outputs[view]).is_file() and Path(outputs[view]).with_suffix(".tex").is_file()
    assert Path(outputs["png"]).stat().st_size > 1_000


def test_category_rows_and_tables_follow_iconic_444(tmp_path):
    sets = [*standard_sets(), _set("noise", "semantic", "far", [0.05, 0.15, 0.6], [0, 0, 0]),
            _set("photos", "semantic", "far", [0.25, 0.95], [0, 0])]
    first = write_scores_file(tmp_path / "1.h5", TRAINED, sets)
    rows = stage.category_rows(stage.read_model_scores(first), ["MSR"])
    assert set(rows["category"]) == {"near", "far", "covariate"} and set(rows["method"]) == {"MSR"}
    assert set(rows["arch"]) == {"vgg13 devries"} and set(rows["run"]) == {1} and set(rows["task"]) == {"demo10"}
    auroc = rows[rows["metric"] == "auroc"].set_index(["category", "subset"])["value"]
    assert auroc[("near", "near")] == pytest.approx(roc_auc_score([1] * 4 + [0] * 2, [*TEST_MSR, *NEAR_MSR]))
    far = [0.05, 0.15, 0.6, 0.25, 0.95]
    assert auroc[("far", "(pooled)")] == pytest.approx(roc_auc_score([1] * 4 + [0] * 5, [*TEST_MSR, *far]))
    # a second run; a random network's rows are left out of the tables
    second = write_scores_file(tmp_path / "2.h5", "vgg13_devries_do0_rew0_run2",
                               [(n, {**s, "msr": list(np.asarray(s["msr"]) ** 2)}) for n, s in sets])
    noise = write_scores_file(tmp_path / "r.h5", RANDOM, sets)
    unshifted = write_scores_file(tmp_path / "u.h5", TRAINED, sets[:1], source="plain")  # no category: no rows
    assert stage.category_rows(stage.read_model_scores(unshifted), ["MSR"]).empty
    long_files = []
    for i, path in enumerate((first, second, noise, unshifted)):
        long_files.append(tmp_path / f"long{i}.csv")
        stage.category_rows(stage.read_model_scores(path), ["MSR"]).to_csv(long_files[-1], index=False)
    outputs = {view: str(tmp_path / f"categories_{view}.csv") for view in ("averaged", "pooled")}
    outputs.update(png=str(tmp_path / "categories.png"), pdf=str(tmp_path / "categories.pdf"))
    stage.write_category_tables(long_files, outputs)
    runs = pd.concat([stage.category_rows(stage.read_model_scores(p), ["MSR"]) for p in (first, second)])
    runs = runs[runs["metric"] == "auroc"]
    near = runs[runs["category"] == "near"]["value"].to_numpy()
    far_avg = [runs[(runs["category"] == "far") & (runs["subset"] != "(pooled)") & (runs["run"] == r)]["value"].mean()
               for r in (1, 2)]
    far_pooled = runs[(runs["category"] == "far") & (runs["subset"] == "(pooled)")]["value"].to_numpy()
    covariate = runs[runs["category"] == "covariate"]["value"].to_numpy()
    for view, far_values in (("averaged", far_avg), ("pooled", far_pooled)):
        table = pd.read_csv(outputs[view], index_col=0)
        means = [np.mean(near), np.mean(far_values), np.mean(covariate)]
        assert table.loc["MSR", f"far ({view}) auroc mean"] == pytest.approx(np.mean(far_values), abs=1e-5)
        assert table.loc["MSR", f"far ({view}) auroc std"] == pytest.approx(np.std(far_values, ddof=1), abs=1e-5)
        assert table.loc["MSR", "Average auroc mean"] == pytest.approx(np.mean(means), abs=1e-5)
        assert table.loc["MSR", "Average auroc std"] == pytest.approx(np.std(means, ddof=1), abs=1e-5)
    assert Path(outputs["png"]).stat().st_size > 10_000 and Path(outputs["pdf"]).is_file()


def test_score_views_rank_msp_and_max_logit_per_group(trained):
    scores = stage.read_model_scores(trained)
    ranks = stage.rank_views(scores)
    curves, title = stage.density_curves(scores, "MSR")
    assert set(ranks["model"]) == {TRAINED} and set(ranks["ood_set"]) == {"near"}
    pool = [*TEST_MSR, *NEAR_MSR]
    expected = {"correct_id": [percentileofscore(pool, s, kind="mean") for s in (0.9, 0.8, 0.2)],
                "incorrect_id": [percentileofscore(pool, 0.3, kind="mean")],
                "ood": [percentileofscore(pool, s, kind="mean") for s in NEAR_MSR]}
    msr = ranks[ranks["csf"] == "MSR"].set_index("group")
    for group, values in expected.items():
        assert msr.loc[group, "mean_rank"] == pytest.approx(np.mean(values))
        assert msr.loc[group, "n"] == len(values)
    assert set(curves["group"]) == {"ID test correct", "ID test incorrect", "near"}
    assert title == f"{TRAINED}: MSR on the ID test split and near"


class FakeImages:
    """An ImageSet stand-in: ``sample_ids`` and ``image(i)`` (a 2×2 image of value i)."""

    def __init__(self, ids):
        self.sample_ids = ids

    def __len__(self):
        return len(self.sample_ids)

    def image(self, i):
        return np.full((2, 2, 3), i, dtype=np.uint8)


def test_gallery_picks_the_largest_msp_over_max_logit_gaps_per_set_and_traces_their_images(trained, tmp_path):
    images = {"test": FakeImages(["t0", "t1", "t2", "t3"]), "near": FakeImages(["n0", "n1"])}
    rows, thumbnails = stage.gallery(stage.read_model_scores(trained), images, k=2)
    # pooled percentile ranks (6 samples): MSR [0.9, 0.8, 0.3, 0.2 | 0.5, 0.1], MLS [0.6, 0.9, 0.7, 0.1 | 0.2, 0.3]
    # MSR − MLS in rank points (100/6 per place): test [+2, −1, −2, +1] places, near [+2, −2]
    assert list(zip(rows["set"], rows["sample_id"])) == [("test", "t0"), ("test", "t3"), ("near", "n0"),
                                                         ("near", "n1")]
    assert rows["gap"].tolist() == pytest.approx([100 / 3, 100 / 6, 100 / 3, -100 / 3])
    assert [int(t[0, 0, 0]) for t in thumbnails] == [0, 3, 0, 1]  # each set's own image index
    assert set(rows["model"]) == {TRAINED}
    assert stage.gallery(stage.read_model_scores(trained), {}, 2)[0].empty
    only_msr = write_scores_file(tmp_path / "m.h5", TRAINED, standard_sets())
    with h5py.File(only_msr, "a") as fh:
        for name in fh:
            del fh[f"{name}/det/MLS"]
    assert stage.gallery(stage.read_model_scores(only_msr), images, 2)[0].empty  # no Max-Logit: no rank gap


def test_pair_rankings_rank_the_csfs_over_model_and_pair_blocks():
    blocks = [(m, i) for m in ("m1", "m2") for i in ("test", "corrupt-a", "corrupt-b")]
    # A best in every block; B and C swap places from block to block (mean rank 2.5 each)
    rows = [{"model": m, "paradigm": "devries", "id_set": i, "ood_set": "near", "csf": c,
             "newclass": v + (0.1 if c == "C" and k % 2 else 0.0)}
            for k, (m, i) in enumerate(blocks) for c, v in (("A", 0.9), ("B", 0.7), ("C", 0.65))]
    rows += [{"model": "r", "paradigm": "random", "id_set": "test", "ood_set": "near", "csf": c, "newclass": v}
             for c, v in (("A", 0.1), ("B", 0.9), ("C", 0.5))]  # a random network (left out) would reverse A and B
    result = stage.pair_rankings(pd.DataFrame(rows), 0.05, "demo10")
    assert result["status"] == "ok" and result["n_blocks"] == 6
    assert result["mean_ranks"] == {"A": 1.0, "B": 2.5, "C": 2.5}
    assert result["cliques"] == [["A"], ["B", "C"]]  # B vs C: p = 1; A vs the others: p < 0.05
    assert result["analysis"] == {"group": "none", "backbone": "all", "mcd": False, "source": "demo10",
                                  "regime": "pairs"}
    table = pair_ranking_table(result)
    assert table.to_dict("list") == {"csf": ["A", "B", "C"], "mean_rank": [1.0, 2.5, 2.5], "layer": [1, 2, 2],
                                     "cliques": ["1", "2", "2"]}
    ties = pd.DataFrame([{**r, "newclass": 0.5} for r in rows])
    skipped = stage.pair_rankings(ties, 0.05, "demo10")
    assert skipped["status"] == "skipped" and "ties" in skipped["reason"]
    assert pair_ranking_table(skipped).empty


def job_outputs(folder: Path) -> dict[str, str]:
    """Every output path of :func:`stage.write_analyses` under ``folder``."""
    tables = ["decomposition", "pair_grid", "conditional", "frr", "random_check", "distance", "distance_overlap",
              "ranks", "gallery", "categories", "rankings_table"]
    figures = ["", "decomposition_", "conditional_", "frr_", "rankings_", "distance_", "scores_", "gallery_"]
    outputs = {name: str(folder / f"{name}.csv") for name in tables}
    outputs["rankings"] = str(folder / "rankings.json")
    outputs.update({f"{f}{ext}": str(folder / f"{f or 'pairs_'}figure.{ext}") for f in figures
                    for ext in ("png", "pdf")})
    outputs["pair_metrics"] = str(folder / "pairs.parquet")
    return outputs


def test_the_job_writes_every_table_and_figure(tmp_path, monkeypatch):
    models = (RANDOM, TRAINED, "vgg13_devries_do0_rew0_run2")  # the random network first: left out where it must be
    files = [write_scores_file(tmp_path / f"{m}.h5", m, standard_sets()) for m in models]
    outputs = job_outputs(tmp_path / "out")
    metrics = [write_metrics_file(tmp_path / f"{m}.parquet") for m in models]
    # the distance analysis on the covariate set (3 bins, one OLS line); near's 2 samples would allow 2 bins only
    embeddings = [write_embeddings(tmp_path / "p.h5", {"test": np.arange(4.0)[:, None]}),
                  write_embeddings(tmp_path / "c.h5", {"corrupt": np.array([[0.5], [1], [2], [3]])})]
    images = {"test": FakeImages(["t0", "t1", "t2", "t3"]), "near": FakeImages(["n0", "n1"])}
    reads, modes = [], set()
    real_read = stage.read_scores
    monkeypatch.setattr(stage, "read_scores", lambda path, name, **kw: reads.append((path, name)) or
                        modes.add(kw.get("modes")) or real_read(path, name, **kw))
    stage.write_analyses("demo10", files, metrics, SETTINGS, 0.05, outputs, embeddings, images)
    assert sorted(reads) == sorted((f, name) for f in files for name in ("test", "near", "corrupt"))  # each once
    assert modes == {("det",)}
    rows = pd.read_parquet(outputs["pair_metrics"])
    assert set(rows["run"]) == {1, 2} and set(rows["paradigm"]) == {"devries", "random"}
    assert set(rows["tuning_protocol"]) == {"bayes"} and set(rows["source"]) == {"demo10"}
    for name, path in outputs.items():
        assert Path(path).is_file(), name
    for name in [n for n in outputs if n.endswith("png")]:
        assert Path(outputs[name]).stat().st_size > 5_000, name
    frr = pd.read_csv(outputs["frr"])
    assert set(frr["model"]) == {TRAINED, "vgg13_devries_do0_rew0_run2"}
    assert set(pd.read_csv(outputs["random_check"])["model"]) == {RANDOM}
    trained = {TRAINED, "vgg13_devries_do0_rew0_run2"}
    assert set(pd.read_csv(outputs["distance"])["model"]) == trained
    assert set(pd.read_csv(outputs["ranks"])["model"]) == trained
    assert set(pd.read_csv(outputs["gallery"])["model"]) == {TRAINED}  # the first trained model's
    assert set(pd.read_csv(outputs["categories"])["arch"]) == {"vgg13 devries", "vit random"}
    assert json.loads(Path(outputs["rankings"]).read_text())["analysis"]["source"] == "demo10"


def test_covariate_embeddings_are_written_for_the_distance_analysis(tmp_path, monkeypatch):
    class Encoder:
        description = "enc"

        def embed(self, images, batch_size):
            return np.arange(len(images) * 2, dtype=np.float64).reshape(len(images), 2)

    opened = []
    # the job imports the encoder module when it runs (torch stays out of the stage's other jobs)
    monkeypatch.setattr(encoders, "build_encoder", lambda cfg, device: Encoder())
    monkeypatch.setattr(stage, "shift_set", lambda spec, shift_type: opened.append((spec, shift_type)) or [0] * spec)
    out = tmp_path / "covariate_embeddings.h5"
    stage.embed_covariate_sets("demo10", {"corrupt-a": 3, "corrupt-b": 2}, {}, 8, out)
    assert opened == [(3, "covariate"), (2, "covariate")]
    proximity = write_embeddings(tmp_path / "p.h5", {"train": np.zeros((1, 2)), "test": np.ones((2, 2)),
                                                     "near": np.zeros((4, 2))})
    reference, queries = stage.query_embeddings([proximity, out])
    assert reference.tolist() == [[1, 1], [1, 1]] and list(queries) == ["near", "corrupt-a", "corrupt-b"]
    assert queries["corrupt-b"].dtype == np.float32 and queries["corrupt-b"].tolist() == [[0, 1], [2, 3]]


def test_a_csf_in_no_greedy_layer_has_an_empty_layer():
    # cliques {A, B} and {B, C}: the greedy layers keep {A, B} only, so C (in a clique) is in no layer
    result = {"status": "ok", "mean_ranks": {"A": 1.0, "B": 2.0, "C": 3.0}, "cliques": [["A", "B"], ["B", "C"]],
              "layers": [{"members": ["A", "B"], "mean_rank": 1.5}]}
    table = pair_ranking_table(result)
    assert table["layer"].tolist()[:2] == [1, 1] and pd.isna(table["layer"].iloc[2])
    assert table["cliques"].tolist() == ["1", "1 2", "2"]


def test_gallery_and_densities_are_the_first_trained_models_even_when_its_gallery_is_empty(tmp_path, monkeypatch):
    first, second = TRAINED, "vgg13_devries_do0_rew0_run2"
    files = [write_scores_file(tmp_path / f"{m}.h5", m, standard_sets()) for m in (RANDOM, first, second)]
    with h5py.File(files[1], "a") as fh:  # the first trained model has MSP but no Max-Logit: no rank gap
        for name in fh:
            del fh[f"{name}/det/MLS"]
    titles = []
    real_plot = stage.report.plot_score_views
    monkeypatch.setattr(stage.report, "plot_score_views",
                        lambda ranks, curves, title: titles.append(title) or real_plot(ranks, curves, title))
    outputs = job_outputs(tmp_path / "out")
    images = {"test": FakeImages(["t0", "t1", "t2", "t3"]), "near": FakeImages(["n0", "n1"])}
    metrics = [write_metrics_file(tmp_path / f"{i}.parquet") for i in range(3)]
    with pytest.warns(IncompleteBlocksWarning, match="missing MLS"):  # the cliques drop the first model's blocks
        stage.write_analyses("demo10", files, metrics, SETTINGS, 0.05, outputs, images=images)
    assert pd.read_csv(outputs["gallery"]).empty  # not the second trained model's, which has both CSFs
    assert titles == [f"{first}: MSR on the ID test split and near"]
    assert set(pd.read_csv(outputs["ranks"])["model"]) == {second}  # the rank comparison needs both CSFs


def test_every_table_keeps_its_header_when_it_holds_no_rows(tmp_path):
    """A run without the proximity stage's embeddings or the gallery's images, whose one trained model lacks
    Max-Logit (no rank views), still writes every table with its columns, so pandas (or any CSV reader) can
    read it back; the distance, rank and gallery tables just hold no rows."""
    models = (RANDOM, TRAINED)
    files = [write_scores_file(tmp_path / f"{m}.h5", m, standard_sets()) for m in models]
    with h5py.File(files[1], "a") as fh:
        for name in fh:
            del fh[f"{name}/det/MLS"]
    outputs = job_outputs(tmp_path / "out")
    stage.write_analyses("demo10", files, [write_metrics_file(tmp_path / f"{m}.parquet") for m in models],
                         SETTINGS, 0.05, outputs)
    for name in [n for n in outputs if n.endswith("png")]:
        assert Path(outputs[name]).stat().st_size > 5_000, name
    tables = {name: pd.read_csv(path) for name, path in outputs.items() if path.endswith(".csv")}
    assert tables["distance"].empty and list(tables["distance"].columns) == [
        "query_set", "csf", "slope", "slope_se", "intercept", "intercept_se", "n_bins", "sigma", "r_squared", "model"]
    assert tables["distance_overlap"].empty and list(tables["distance_overlap"].columns) == [
        "cell", "a", "b", "parameter", "estimate_a", "se_a", "estimate_b", "se_b", "overlap"]
    assert tables["ranks"].empty and list(tables["ranks"].columns) == [
        "group", "csf", "n", "mean_rank", "median_rank", "model", "ood_set"]
    assert tables["gallery"].empty and list(tables["gallery"].columns) == [
        "set", "position", "index", "sample_id", "score_a", "score_b", "rank_a", "rank_b", "gap", "model"]
    assert set(tables["frr"]["model"]) == {TRAINED}
