"""Jobs of ``rules/projnorm.smk``: ProjNorm's reference fine-tune, one ProjNorm fine-tune per
(model, labelled shifted set), and one evaluation per source (Yu et al., "Predicting Out-of-Distribution
Error with the Projection Norm", ICML 2022, arXiv 2202.05834, §3)."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from csfbench.atomic import atomic_path, write_json
from csfbench.data.eval_sets import eval_images
from csfbench.data.sources import source_split
from csfbench.models import load_checkpoint
from csfbench.projnorm.baselines import agree_score
from csfbench.projnorm.finetune import finetune, initial_model, parameter_distance, predict, trained_parameters
from csfbench.projnorm.study import model_rows
from csfbench.report.tables import write_table
from csfbench.specs import EvalSet, ModelSpec
from csfbench.training.loop import resolve_device
from csfbench.workflow.paths import table_view
from csfbench.workflow.sections import Projnorm

log = logging.getLogger(__name__)


def projnorm_reference(spec: ModelSpec, settings: Projnorm, checkpoint: str | Path, out_file: str | Path) -> None:
    """θ_ref of ProjNorm as safetensors: θ₀ fine-tuned on the training split (``reference: finetune``,
    true labels, as in the authors' code) or the trained model itself (``reference: trained``)."""
    from safetensors.torch import save_file

    device = resolve_device()
    if settings.reference == "trained":
        model = load_checkpoint(spec, checkpoint, device)
    else:
        train_set = source_split(spec.dataset, spec.val_size, "train")
        model = finetune(initial_model(spec, int(settings.seed), device), spec, train_set, train_set.labels,
                         settings.to_dict(), device)
    state = {k: v.detach().float().cpu().contiguous() for k, v in trained_parameters(model).items()}
    with atomic_path(out_file) as tmp:
        save_file(state, str(tmp))


def projnorm_shift(spec: ModelSpec, eval_set: EvalSet, settings: Projnorm, checkpoint: str | Path,
                   reference: str | Path, out_json: str | Path, partner_spec: ModelSpec | None = None,
                   partner_checkpoint: str | Path | None = None) -> dict:
    """ProjNorm of one (model, shifted set): pseudo-label with the model, fine-tune θ₀ on the pseudo-labels,
    ‖θ_ref − θ̃‖₂; with a partner model also the AgreeScore disagreement rate on the same images."""
    from safetensors.torch import load_file

    t0 = time.perf_counter()
    device = resolve_device()
    images = eval_images(spec, eval_set)
    m = int(settings.max_samples)
    if 0 < m < len(images):
        rng = np.random.default_rng(int(settings.seed))
        images = images.subset(np.sort(rng.choice(len(images), m, replace=False)))
    batch = int(settings.batch_size)
    pseudo = predict(load_checkpoint(spec, checkpoint, device), spec, images, batch, device)
    tilde = finetune(initial_model(spec, int(settings.seed), device), spec, images, pseudo, settings.to_dict(),
                     device)
    value = parameter_distance(trained_parameters(tilde), load_file(str(reference)))
    result = {"source": spec.source, "model": spec.model, "dataset": eval_set.name,
              "shift_type": eval_set.shift_type, "n": len(images), "projnorm": value, "settings": settings.to_dict()}
    if partner_checkpoint:
        partner = predict(load_checkpoint(partner_spec, partner_checkpoint, device), partner_spec, images, batch,
                          device)
        result.update(agree_score=agree_score(pseudo, partner), agree_partner=partner_spec.model)
    write_json(result, out_json, sort_keys=True)  # no wall-clock time: equal runs write equal files
    log.info("%s/%s: ProjNorm %.4f on %d images (%.1fs)", spec.model, eval_set.name, value, len(images),
             time.perf_counter() - t0)
    return result


def study_from_inputs(study: list[dict], val_files: list[str], feature_files: list[str],
                      projnorm_files: list[str]) -> list[dict]:
    """The study of :func:`projnorm_evaluate` from the rule's params (``[{"spec", "eval_sets"}]`` as dicts)
    and its input lists (one val file per model; one feature and one result file per (model, set), in
    study order)."""
    models, k = [], 0
    for item, val in zip(study, val_files, strict=True):
        sets = []
        for eval_set in item["eval_sets"]:
            sets.append({"eval_set": EvalSet.from_dict(eval_set), "features": feature_files[k],
                         "projnorm": projnorm_files[k]})
            k += 1
        models.append({"spec": ModelSpec.from_dict(item["spec"]), "val": val, "sets": sets})
    if k != len(feature_files) or k != len(projnorm_files):
        raise ValueError(f"ProjNorm study: {k} (model, set) pairs but {len(feature_files)} feature files and "
                         f"{len(projnorm_files)} result files")
    return models


def projnorm_evaluate(models: list[dict], atc_score: str, out_tables: dict, out_figure: str | Path,
                      out_metrics: str | Path) -> None:
    """Tables, scatter plot and metric rows of one source's error-prediction study.

    ``models`` items: ``{"spec": ModelSpec, "val": h5, "sets": [{"eval_set": EvalSet, "features", "projnorm"}]}``;
    ``out_tables``: paths for ``per_set``, ``correlations``, ``stress`` and ``stress_mse`` (CSV); the report's
    two, ``correlations`` and ``stress``, also get their LaTeX twin and report view beside them.
    """
    # imported here, not at the top: scipy.stats and matplotlib would cost each fine-tune job of the stage
    # ~1 s of start-up
    from csfbench.projnorm.evaluate import MIN_SETS, correlations, stress_table
    from csfbench.projnorm.plots import scatter_plot
    from csfbench.projnorm.rows import metric_rows

    per_set = pd.concat([model_rows(m["spec"], m["val"], m["sets"], atc_score) for m in models], ignore_index=True)
    corr = correlations(per_set)
    stress, mse = stress_table(per_set)
    for key, frame in (("per_set", per_set), ("stress_mse", mse)):
        with atomic_path(out_tables[key]) as tmp:
            frame.to_csv(tmp, index=False, float_format="%.6g")
    source = models[0]["spec"].source
    corr_csv, stress_csv = out_tables["correlations"], out_tables["stress"]
    write_table(corr, corr_csv, Path(corr_csv).with_suffix(".tex"), table_view(corr_csv), f"{source}: how well each "
                "label-free predictor tracks the test error over the corruption sets, R2 and Spearman correlation per "
                "model", empty_reason="No model of this source has a corruption (covariate) set.")
    write_table(stress, stress_csv, Path(stress_csv).with_suffix(".tex"), table_view(stress_csv), f"{source}: "
                "adversarial stress test, the test error predicted from the corruption sets and the actual one on the "
                "clean test set and the adversarial sets",
                empty_reason=f"No model of this source has {MIN_SETS} corruption (covariate) sets to fit the "
                "predictors on.")
    scatter_plot(per_set, out_figure, f"{source}: predictor vs test error ({len(models)} model(s))")
    groups = {s["eval_set"].name: s["eval_set"].groups for m in models for s in m["sets"]}
    rows = metric_rows({m["spec"].model: m["spec"] for m in models}, per_set, corr, stress, groups)
    with atomic_path(out_metrics) as tmp:
        rows.to_parquet(tmp, index=False)
    for row in corr.itertuples():
        log.info("%s %s: R2 %.3f, Spearman %.3f over %d sets", row.model, row.predictor, row.r2, row.spearman,
                 row.n_sets)
