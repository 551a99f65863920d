"""Jobs of ``rules/conformal.smk``: correction bands (one file per key), a model's conformal metric rows and
its conformal prediction sets (Novello, Dalmau & Andéol, "Out-of-Distribution Detection Should Use
Conformal Prediction (and Vice-versa?)", 2024, arXiv 2403.11532, §4–§5).

The calibration set of the conformal rows is ``n_cal`` samples of the ID test split, drawn with the
configured seed: the same samples for every model and CSF of a source (paired comparisons), and never data
a CSF was fitted on (CSFs are fitted on train and tuned on val).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import numpy as np

from csfbench.errors import ConfigError
from csfbench.specs import EvalSet, ModelSpec
from csfbench.workflow.sections import Conformal, ConformalFit, CorrectionBand, PredictionSets
from csfbench.heads import class_outputs

# pandas, the CSF stores, the conformity scores and the metric rows are imported inside the functions that use
# them: the band job (:func:`correction_band`) needs none of them, and they would cost each of its jobs ~1.2 s
# of start-up

log = logging.getLogger(__name__)
PREDICTION_SET_COLUMNS = ["source", "backbone", "paradigm", "dropout", "reward", "run", "score", "method", "alpha",
                          "size", "size_std", "coverage", "coverage_std", "repeats", "n_cal", "n_eval"]


def correction_band(band: CorrectionBand, out: str | Path) -> None:
    """Job: the correction band b_1..b_n of one key (method, n, δ, Monte-Carlo size, seed) into ``out``
    (:func:`csfbench.metrics.conformal.write_band`: .npy, written atomically), read back by
    :func:`csfbench.metrics.conformal.read_band`."""
    from csfbench.metrics.conformal import write_band

    write_band(band.n, band.delta, band.method, band.n_mc, band.seed, out)


def calibration_indices(n_test: int, n_cal: int, seed: int) -> np.ndarray:
    """The ``n_cal`` calibration samples among the ``n_test`` of the ID test split (sorted indices), drawn
    without replacement by a numpy Generator seeded with ``seed``."""
    if not 0 < n_cal < n_test:
        raise ConfigError("conformal/calibration/n_cal", f"fewer than the {n_test} samples of the ID test split",
                          n_cal)
    return np.sort(np.random.default_rng(seed).choice(n_test, n_cal, replace=False))


def conformal_metrics(spec: ModelSpec, scores_files: list[str | Path], metrics_files: list[str | Path],
                      band_files: dict[tuple[str, float], str | Path], settings: ConformalFit,
                      out: str | Path) -> None:
    """The conformal rows (:func:`csfbench.evaluation.conformal_rows`) of every CSF variant of a model (the
    scores files of all its fit groups) on every shifted set, into one parquet file.

    ``metrics_files``: the same groups' metric rows (their tuning protocols are copied); ``band_files``:
    {(method, δ): band file}; ``settings``: the config's ``conformal`` section (the part the rows read).
    """
    import pandas as pd

    from csfbench.atomic import atomic_path
    from csfbench.csf.store import read_scores, scores_sets, set_groups
    from csfbench.evaluation import COLUMNS, CONFORMAL_COLUMNS, conformal_rows, tuning_protocols
    from csfbench.metrics.conformal import read_band

    calibration = settings.calibration
    bands = {key: read_band(path, calibration.n_cal) for key, path in band_files.items()}
    protocols = tuning_protocols(metrics_files)
    tables = []
    for path in scores_files:
        sets = scores_sets(path)
        if "test" not in sets:
            raise ValueError(f"{path}: no scores of the ID test split, the calibration set")
        test, _ = read_scores(path, "test")
        n_test = len(next(iter(test.values()))["correct"])
        chosen = calibration_indices(n_test, calibration.n_cal, calibration.seed)
        cal = {mode: {key: conf[chosen] for key, conf in data["scores"].items()} for mode, data in test.items()}
        for name, attrs in sorted(sets.items()):
            if attrs["shift_type"] == "id":
                continue
            shifted, _ = read_scores(path, name)
            eval_set = EvalSet(name, str(attrs["shift_type"]), str(attrs["regime"]))
            scores = {mode: data["scores"] for mode, data in shifted.items()}
            tables.append(conformal_rows(spec, eval_set, cal, scores, bands, settings.tpr, calibration.split,
                                         protocols, set_groups(attrs), (settings.n_mc, settings.seed)))
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=COLUMNS + CONFORMAL_COLUMNS)
    with atomic_path(out) as tmp:
        table.to_parquet(tmp, index=False)
    log.info("%s: %d conformal metric rows", spec.model, len(table))


def prediction_set_table(spec: ModelSpec, train_h5: str | Path, test_h5: str | Path, settings: PredictionSets,
                         out: str | Path, gram: Callable[[], np.ndarray] | None = None) -> None:
    """Mean set size and coverage of LAC/APS/RAPS sets on the ID test split per conformity score
    (:data:`csfbench.csf.conformity_scores.CONFORMITY_SCORES`) and α
    (:func:`csfbench.metrics.prediction_sets.evaluate_prediction_sets`), ``settings`` the config's
    ``conformal.prediction_sets``; one parquet file (:data:`PREDICTION_SET_COLUMNS`).  ``gram`` returns the
    N×K class-dependent GRAM scores of the test images in the feature file's order (score ``gram``, the one
    that needs a network pass)."""
    import pandas as pd

    from csfbench.atomic import atomic_path
    from csfbench.csf.conformity_scores import conformity_score
    from csfbench.features.store import feature_expect, read_features, validate_feature_file
    from csfbench.metrics.prediction_sets import evaluate_prediction_sets

    chosen = [conformity_score(name) for name in settings.scores]  # an unknown name fails before any read
    arrays = {}
    for split, path in (("train", train_h5), ("test", test_h5)):
        validate_feature_file(path, {**feature_expect(spec), "dataset": split})
        arrays[split], _ = read_features(path, keys=("features", "logits", "labels", "head/weight", "head/bias",
                                                     "sample_id"))
    c = spec.n_classes
    head = tuple(class_outputs(arrays["train"][f"head/{name}"], c, axis=0) for name in ("weight", "bias"))
    train = {"features": arrays["train"]["features"], "logits": class_outputs(arrays["train"]["logits"], c),
             "labels": arrays["train"]["labels"]}
    test = {"features": arrays["test"]["features"], "logits": class_outputs(arrays["test"]["logits"], c)}
    labels = arrays["test"]["labels"]
    n_cal = int(round(settings.cal_fraction * len(labels)))
    base = {k: getattr(spec, k) for k in ("source", "backbone", "paradigm", "dropout", "reward", "run")}
    rows = []
    for score in chosen:
        if score.network:
            if gram is None:
                raise ValueError(f"conformity score {score.name!r} needs the model's GRAM fit and its test images")
            scores = gram()
        else:
            scores = score.compute(test, train, head, **{key: getattr(settings, key) for key in score.params})
        for row in evaluate_prediction_sets(scores, labels, n_cal=n_cal, alphas=settings.alphas,
                                            methods=settings.methods, repeats=settings.repeats,
                                            seed=settings.seed, lam=settings.raps.lam, k_reg=settings.raps.k_reg):
            rows.append({**base, "score": score.name, "method": row.method, "alpha": row.alpha, "size": row.size,
                         "size_std": row.size_std, "coverage": row.coverage, "coverage_std": row.coverage_std,
                         "repeats": row.repeats, "n_cal": n_cal, "n_eval": len(labels) - n_cal})
    with atomic_path(out) as tmp:
        pd.DataFrame(rows, columns=PREDICTION_SET_COLUMNS).to_parquet(tmp, index=False)
    log.info("%s: prediction sets of %d scores", spec.model, len(settings.scores))


def conformal_report(results_table: str | Path, prediction_set_files: list[str | Path], scores_file: str | Path,
                     band_files: dict[tuple[str, int], str | Path], settings: Conformal, source: str,
                     outputs: dict) -> None:
    """Job: the report's conformal figure (classical vs conformal ROC of ``settings.figure.csf`` on the
    first semantic set of ``scores_file``, whose model is the source's first; band width against n) and its
    two tables (:mod:`csfbench.report.conformal`) for one source.  ``band_files``: {(method, n): band file}
    of rule ``conformal_band`` at the first δ — the figure's band (the first method, n = n_cal) and the
    band-width panel's (every method × ``figure.band_sizes``); no band is recomputed here.  ``outputs``:
    png, pdf, table1, table2 paths; the tables are written as CSV with LaTeX twins and report views beside them."""
    # imported here, not at the top: matplotlib and the ranking statistics would cost each of the stage's
    # metric and prediction-set jobs, which draw nothing, ~1.3 s of start-up
    import pandas as pd

    from csfbench.csf.store import read_scores, scores_sets
    from csfbench.metrics.conformal import band_roc, read_band
    from csfbench.report import conformal as report
    from csfbench.csf.projection import parse_variant
    from csfbench.report.figures import save_figure
    from csfbench.report.tables import write_table
    from csfbench.workflow.paths import table_view

    method, delta = settings.methods[0], settings.delta[0]
    calibration, figure = settings.calibration, settings.figure
    keys = [(method, calibration.n_cal)] + [(m, n) for m in settings.methods for n in figure.band_sizes]
    missing = sorted({key for key in keys if key not in band_files})
    if missing:
        raise ValueError(f"conformal report of {source}: no band file for (method, n) {missing}")
    bands = {key: read_band(band_files[key], key[1]) for key in keys}
    results = pd.read_parquet(results_table)
    table1, table2 = outputs["table1"], outputs["table2"]
    write_table(report.conformal_table(results, source, method, delta), table1, Path(table1).with_suffix(".tex"),
                table_view(table1), f"{source}: classical vs conformal AUROC and FPR@TPR95 ({method}, "
                f"delta = {delta:g}), mean over models")
    write_table(report.prediction_set_table([pd.read_parquet(p) for p in prediction_set_files]), table2,
                Path(table2).with_suffix(".tex"), table_view(table2), f"{source}: conformal prediction sets, mean "
                "set size (with its standard deviation over the uniform draws for APS and RAPS) and coverage per "
                "conformity score, alpha and method, mean over models")
    csf, variant = parse_variant(figure.csf)
    sets = scores_sets(scores_file)
    shifted = sorted(sets, key=lambda s: (sets[s]["shift_type"] != "semantic", s))
    shifted = [s for s in shifted if sets[s]["shift_type"] != "id"]
    if not shifted:
        raise ValueError(f"{scores_file}: no shifted set to draw the conformal ROC of")
    test, _ = read_scores(scores_file, "test", modes=("det",))
    ood, attrs = read_scores(scores_file, shifted[0], modes=("det",))
    if (csf, variant) not in test["det"]["scores"]:
        raise ConfigError("conformal/figure/csf", f"a CSF variant of {scores_file}", figure.csf)
    id_conf = test["det"]["scores"][(csf, variant)]
    id_conf = id_conf[calibration_indices(len(id_conf), calibration.n_cal, calibration.seed)]
    roc = band_roc(id_conf, ood["det"]["scores"][(csf, variant)], bands[(method, calibration.n_cal)])
    widths = report.band_widths({key: bands[key] for key in keys[1:]})
    title = f"{attrs['model']}: {figure.csf} on {shifted[0]} ({method}, n = {calibration.n_cal})"
    save_figure(report.plot_conformal(roc, title, widths, delta), outputs["png"], outputs["pdf"])
