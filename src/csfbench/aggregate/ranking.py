"""The paper's ranking analysis on the results table after validation-based model selection
(Claros-Olivares & Brockmeier, §4.2–4.3, App. C, Figure 1).

One *analysis* (cell) = metric group × backbone × MCD flag × source × evaluation regime. Its rows are
the validation-selected (:mod:`csfbench.aggregate.selection`) test-split rows of that cell; its
entities are the CSF variants
(``"MSR"``, ``"MSR global"``, ``"KPCA RecError class_pred"``: CSF name, then the projection unless it
is ``none``); its blocks are the ``blocks`` columns (default dataset × paradigm × metric, the
paper-time Figure 1 design; add ``run`` for the worked example's design), with the runs averaged
inside a block when ``run`` is not a block column. Lower metric value = better (AUGRC, AURC, ...),
unless :func:`csfbench.metrics.higher_is_better`; a group mixes only
metrics of one orientation.

Regimes: ``test`` (the ID test set, misclassification), the semantic regimes ``near``/``mid``/``far``
(the rows' ``regime``), ``semantic`` (a semantic set with neither a configured nor a computed regime),
``covariate`` and ``adversarial``. The failure scheme of each shift type is a
setting (``ranking.schemes``; the schema's defaults are the paper's protocols, ``misclf`` within
ID/covariate/adversarial sets and ``correct_vs_ood`` for semantic sets).  A conformal metric
(``auroc@mc_search@0.05``: :func:`csfbench.evaluation.conformal_metric`) exists only in the rows of scheme
``conformal``, so a group of conformal metrics ranks those rows whatever the shift type's scheme.

Every analysis records the Friedman and Iman–Davenport statistics and p-values and whether the omnibus
test rejected equal mean ranks at ``alpha`` (JSON ``friedman``, ``iman_davenport``, ``omnibus``; summary
columns ``friedman_*``, ``iman_davenport_*``, ``omnibus_*``). ``ranking.omnibus_gate`` (default false,
the paper's published cliques) makes a cell whose omnibus test does not reject one clique and one layer of
all its CSF variants (:func:`csfbench.stats.rank_table`).

Settings: the config's ``ranking`` section as :func:`csfbench.workflow.settings.validate_config` completes it
from ``config/schema.yaml`` (every default lives there); :func:`csfbench.aggregate.cells.ranking_settings` only checks it.

**Incomplete cells.** Friedman's test needs complete blocks (every entity valued in every block; Demšar
2006, JMLR 7), and a CSF variant can be missing from some blocks (``Confidence`` exists only for the
DeVries/ConfidNet models, not the cross-entropy ones).  ``ranking.incomplete`` says what a cell leaves out
(:func:`leave_out`):

- ``drop_csfs`` (default): rank only the CSF variants present in every block of the cell and keep every
  block, so every dataset, paradigm and model stays in the ranking;
- ``drop_blocks``: keep every CSF variant and drop the blocks that lack one (whole models can leave
  the ranking, e.g. every cross-entropy block when ``Confidence`` is ranked).

Every result records ``incomplete`` (the mode), ``dropped_entities`` [{entity, n_blocks_missing,
missing_from: [block label, ...]}] (a block label is the block's ``blocks`` values joined by ``/``, e.g.
``o_near/dg/augrc``), ``dropped_blocks`` [{block: {column: value}, missing: [entity, ...]}] and ``left_out``
(one line saying what was dropped and why; null when nothing was), skipped cells included; a cell that
drops anything logs that line (INFO).  When the dropping leaves fewer than two CSF variants
(``drop_csfs``) or fewer than two blocks (``drop_blocks``) the cell is skipped with a reason naming what
was dropped and the other mode.  The summary row has ``n_dropped_blocks``, ``n_dropped_entities`` and
``dropped_entities`` (the dropped CSF variants, ``"; "``-joined).

**Clique stability** (``ranking.stability``; :mod:`csfbench.aggregate.stability`): a ranked cell whose rows carry
bootstrap replicates (column ``replicates``, joined from the metric files by the ranking stage) repeats the
ranking on each replicate and records ``stability`` {status, reason, n_replicates, n_tied, top_clique_share,
mean_layer, n_unlayered} in its JSON (status ``skipped`` with the reason where it cannot: no replicates kept, a
ranked metric without intervals, a cell not ranked); the CSV adds ``top_clique_share`` and ``mean_layer``.

Every declared analysis writes a JSON and a CSV: a cell with too little data (no rows, fewer than two

CSF variants or complete blocks, every block tied) is written with ``status: "skipped"`` and the
reason instead of failing the job.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import numpy as np
import pandas as pd

from csfbench.aggregate.cells import SHIFT_TYPE, Analysis, cell_regimes, is_conformal
from csfbench.aggregate.selection import selected_rows
from csfbench.aggregate.stability import block_replicates, clique_stability, not_computed
from csfbench.ensembles.scores import ENSEMBLE_CSFS
from csfbench.evaluation import CONFORMAL_SCHEME, ID_TEST, base_metric, ensemble_rows
from csfbench.metrics import higher_is_better
from csfbench.stats import StatsInputError, rank_table

log = logging.getLogger(__name__)

CSV_COLUMNS = ["entity", "mean_rank", "layer", "top_clique", "top_clique_share", "mean_layer"]


def variant_name(csf: str, projection: str) -> str:
    """Entity name of a CSF variant: the CSF name, then the projection unless it is ``none``."""
    return csf if projection == "none" else f"{csf} {projection}"


def _ranked_metrics(settings: dict) -> list[str]:
    """Every metric of the configured metric groups, sorted."""
    return sorted({m for group in settings["metric_groups"].values() for m in group})


def ranked_scheme(metrics: Iterable[str], shift_type: str, settings: dict) -> str:
    """The scheme a metric group is ranked on for a shift type: ``conformal`` for conformal metrics,
    else the configured scheme of the shift type."""
    return CONFORMAL_SCHEME if all(map(is_conformal, metrics)) else settings["schemes"][shift_type]


def _ranked_scheme(table: pd.DataFrame, settings: dict) -> pd.Series:
    """Rows whose scheme is the ranked scheme of their metric and shift type (vectorised: no per-row
    mapping): the ``conformal`` rows of conformal metrics, the configured scheme's rows of the others."""
    conformal = table["metric"].astype(str).str.contains("@", regex=False)
    mask = conformal & (table["scheme"] == CONFORMAL_SCHEME)
    # the classical rows with the ID test split in the ID role (not the pair analyses' other ID-role sets)
    classical = ~conformal & (table["id_set"].isna() | (table["id_set"] == ID_TEST))
    for shift_type, scheme in settings["schemes"].items():
        mask |= classical & (table["shift_type"] == shift_type) & (table["scheme"] == scheme)
    return mask


def entity_name(csf: str, projection: str, ensemble: bool) -> str:
    """Entity name of a CSF variant of a single model (:func:`variant_name`) or of a deep ensemble: the ensemble's
    own CSFs by their names (:data:`csfbench.ensembles.scores.ENSEMBLE_CSFS`), the member mean of another CSF as
    ``"{variant name} (member mean)"``."""
    name = variant_name(csf, projection)
    return name if not ensemble or csf in ENSEMBLE_CSFS else f"{name} (member mean)"


def ranked_rows(selected: pd.DataFrame, settings: dict) -> pd.DataFrame:
    """The selected test-split rows of the ranked schemes, with ``cell_regime`` and ``entity`` columns.

    A deep ensemble's rows are entities beside the single models' (:func:`entity_name`), except where ``run`` is a
    block column: an ensemble (run 0) has no row in the runs' blocks, so its rows are left out."""
    rows = selected[(selected["split"] == "test") & _ranked_scheme(selected, settings)]
    rows = rows[rows["metric"].isin(_ranked_metrics(settings))]
    ensemble = ensemble_rows(rows)
    if "run" in settings["blocks"] and ensemble.any():
        log.info("ranking: %d rows of deep ensembles left out (run is a block column)", int(ensemble.sum()))
        rows, ensemble = rows[~ensemble], ensemble[~ensemble]
    entity = [entity_name(c, p, e) for c, p, e in zip(rows["csf"].astype(str), rows["variant"].astype(str), ensemble)]
    return rows.assign(cell_regime=cell_regimes(rows), entity=entity)


def selected_ranked_rows(table: pd.DataFrame, settings: dict, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """:func:`ranked_rows` of the validation-selected rows of ``metrics`` (default: every group's metrics).

    The table is cut down first to the rows the result depends on: those metrics (selection is per
    metric; a conformal metric is selected by its base metric), and the validation rows plus the ranked scheme of each shift type (on the paper grid this
    keeps ~6 % of the rows, so selection does not merge the whole table).
    """
    metrics = _ranked_metrics(settings) if metrics is None else list(metrics)
    validation = sorted(set(metrics) | {base_metric(m) for m in metrics})  # a conformal metric's selection metric
    keep = ((table["split"] == "val") & table["metric"].isin(validation)) | (
        table["metric"].isin(metrics) & _ranked_scheme(table, settings))
    table = table[keep]
    return ranked_rows(selected_rows(table) if len(table) else table, settings)


@dataclass(frozen=True)
class LeftOut:
    """What a cell's ranking leaves out of its blocks × entities means (see the module docstring):
    ``means``, the rows kept; ``entities`` and ``blocks``, the JSON's ``dropped_entities`` and
    ``dropped_blocks``; ``reason``, the one-line ``left_out`` (None when nothing is dropped); ``skip``, the
    reason the cell cannot be ranked after the dropping (None when it can)."""

    means: pd.DataFrame
    entities: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    skip: str | None = None

    def fields(self, mode: str) -> dict[str, Any]:
        """The result's keys recording what was left out under ``ranking.incomplete`` = ``mode``."""
        return {"incomplete": mode, "dropped_entities": self.entities, "dropped_blocks": self.blocks,
                "left_out": self.reason}


def _presence(means: pd.DataFrame, blocks: list[str]) -> dict[tuple, set[str]]:
    """The entities with a value in each block, keyed by the block's ``blocks`` values, blocks sorted."""
    present = means.groupby(blocks, observed=True, sort=True)["entity"].agg(lambda names: set(names))
    return {key if isinstance(key, tuple) else (key,): names for key, names in present.items()}


def _missing_from(presence: dict[tuple, set[str]], entities: list[str]) -> dict[str, list[tuple]]:
    """Every entity missing from some block → those blocks' keys (in the order of ``entities`` and blocks)."""
    missing = {e: [key for key, present in presence.items() if e not in present] for e in entities}
    return {e: keys for e, keys in missing.items() if keys}


def _label(key: tuple) -> str:
    """A block's label: its ``blocks`` values joined by ``/`` (``o_near/dg/augrc``)."""
    return "/".join(map(str, key))


def _plain(value: Any) -> Any:
    """numpy scalars → plain Python values (JSON-ready block keys)."""
    return value.item() if isinstance(value, np.generic) else value


def _counts(missing: dict[str, list[tuple]]) -> str:
    """``Confidence (4 blocks), fDBD (1 block)``: each entity and the number of blocks it is missing from."""
    return ", ".join(f"{e} ({len(keys)} block{'s' if len(keys) != 1 else ''})" for e, keys in missing.items())


def _drop_csfs(means: pd.DataFrame, blocks: list[str]) -> LeftOut:
    """``drop_csfs``: the entities missing from some block are dropped, every block is kept."""
    presence = _presence(means, blocks)
    entities = sorted(set().union(*presence.values()))
    missing = _missing_from(presence, entities)
    if not missing:
        return LeftOut(means)
    kept = [e for e in entities if e not in missing]
    dropped = [{"entity": e, "n_blocks_missing": len(keys), "missing_from": [_label(k) for k in keys]}
               for e, keys in missing.items()]
    reason = (f"dropped {len(missing)} of {len(entities)} CSF variant(s) missing from some of the "
              f"{len(presence)} blocks: {_counts(missing)}; every block kept (ranking.incomplete: drop_csfs)")
    skip = None if len(kept) >= 2 else (
        f"ranking needs at least 2 CSF variants present in every block; {len(kept)} of {len(entities)} are "
        f"{kept} after dropping {_counts(missing)} missing from some of the {len(presence)} blocks of {blocks} "
        "(ranking.incomplete: drop_csfs; drop_blocks keeps them and drops the incomplete blocks instead)")
    return LeftOut(means[means["entity"].isin(kept)], dropped, [], reason, skip)


def _drop_blocks(means: pd.DataFrame, blocks: list[str]) -> LeftOut:
    """``drop_blocks``: the blocks lacking some entity are dropped, every entity is kept."""
    presence = _presence(means, blocks)
    entities = sorted(set().union(*presence.values()))
    incomplete = {key: [e for e in entities if e not in present]
                  for key, present in presence.items() if len(present) < len(entities)}
    if not incomplete:
        return LeftOut(means)
    dropped = [{"block": {b: _plain(v) for b, v in zip(blocks, key)}, "missing": names}
               for key, names in incomplete.items()]
    lacking = _counts(_missing_from(presence, entities))
    reason = (f"dropped {len(incomplete)} of {len(presence)} blocks lacking a CSF variant: {lacking}; every CSF "
              "variant kept (ranking.incomplete: drop_blocks)")
    n_kept = len(presence) - len(incomplete)
    skip = None if n_kept >= 2 else (
        f"ranking needs at least 2 complete blocks (every CSF variant present); {n_kept} of {len(presence)} "
        f"blocks of {blocks} remain after dropping those lacking {lacking} (ranking.incomplete: drop_blocks; "
        "drop_csfs keeps the blocks and drops those CSF variants instead)")
    keep = ~pd.MultiIndex.from_frame(means[blocks]).isin(list(incomplete))
    return LeftOut(means[keep], [], dropped, reason, skip)


LEAVE_OUT = {"drop_csfs": _drop_csfs, "drop_blocks": _drop_blocks}


def leave_out(means: pd.DataFrame, blocks: list[str], mode: str) -> LeftOut:
    """Make ``means`` (one ``value`` per block × ``entity``) a complete design under ``ranking.incomplete``
    = ``mode`` (``drop_csfs`` or ``drop_blocks``, see the module docstring)."""
    return LEAVE_OUT[mode](means, blocks)


def run_analysis(rows: pd.DataFrame | None, analysis: Analysis, settings: dict) -> dict[str, Any]:
    """Rank one cell (``rows``: its :func:`ranked_rows`, or None); a JSON-ready dict with ``status``."""
    metrics = list(settings["metric_groups"][analysis.group])
    mode = settings["incomplete"]
    header = {"analysis": asdict(analysis), "metrics": metrics, "blocks": list(settings["blocks"]),
              "scheme": ranked_scheme(metrics, SHIFT_TYPE[analysis.regime], settings),
              "stability": not_computed("the cell was not ranked")}
    if rows is None or rows.empty:
        return {**header, "status": "skipped", "reason": f"no selected rows for regime '{analysis.regime}' of "
                f"{analysis.backbone} ({'MCD' if analysis.mcd else 'non-MCD'}) on {analysis.source} with metrics {metrics}",
                **LeftOut(pd.DataFrame()).fields(mode)}
    blocks = list(settings["blocks"])
    means = rows.groupby(blocks + ["entity"], as_index=False, observed=True, sort=False)["value"].mean()
    left = leave_out(means, blocks, mode)
    if left.reason:
        log.info("%s: %s", analysis.name, left.reason)
    if left.skip:
        return {**header, "status": "skipped", "reason": left.skip, **left.fields(mode)}
    options = {"alpha": settings["alpha"], "p_adjust": settings["p_adjust"],
               "higher_is_better": higher_is_better(metrics[0]), "omnibus_gate": settings["omnibus_gate"]}
    try:
        result = rank_table(left.means, blocks, "entity", "value", **options)
    except StatsInputError as err:
        return {**header, "status": "skipped", "reason": str(err), **left.fields(mode)}
    return {**header, "status": "ok", "reason": None, **result, **left.fields(mode),
            "stability": _stability(rows, left.means, blocks, settings["stability"]["n_replicates"], options)}


def _stability(rows: pd.DataFrame, kept: pd.DataFrame, blocks: list[str], n_replicates: int,
               options: dict[str, Any]) -> dict[str, Any]:
    """The clique stability of a ranked cell (:mod:`csfbench.aggregate.stability`) on the replicates of its
    ``rows`` (those of the ranked block means ``kept``), with the cell's own ranking ``options``."""
    if not n_replicates:
        return not_computed("ranking.stability.n_replicates is 0")
    replicates, entities, reason = block_replicates(rows, blocks, kept, n_replicates)
    if reason:
        return not_computed(reason)
    return clique_stability(replicates, entities, **options)


def ranking_frame(result: dict[str, Any]) -> pd.DataFrame:
    """Per-entity table of a result: mean rank, greedy layer (1 = best; empty = none), top-clique flag, and the
    clique stability's top-clique share and mean layer (empty without one)."""
    if result["status"] != "ok":
        return pd.DataFrame(columns=CSV_COLUMNS)
    layer_of = {m: i for i, layer in enumerate(result["layers"], 1) for m in layer["members"]}
    stability = result.get("stability") or {}
    share, mean_layer = stability.get("top_clique_share", {}), stability.get("mean_layer", {})
    rows = [{"entity": e, "mean_rank": r, "layer": layer_of.get(e), "top_clique": layer_of.get(e) == 1,
             "top_clique_share": share.get(e), "mean_layer": mean_layer.get(e)}
            for e, r in result["mean_ranks"].items()]
    return pd.DataFrame(rows, columns=CSV_COLUMNS).astype({"layer": "Int64"})


def summary_row(result: dict[str, Any]) -> dict[str, Any]:
    """One line of the summary table for an analysis result."""
    a = result["analysis"]
    ok = result["status"] == "ok"
    return {"group": a["group"], "backbone": a["backbone"], "mcd": a["mcd"], "source": a["source"],
            "regime": a["regime"], "status": result["status"], "reason": result["reason"],
            "n_entities": len(result["mean_ranks"]) if ok else 0, "n_blocks": result["n_blocks"] if ok else 0,
            "n_dropped_blocks": len(result["dropped_blocks"]),
            "n_dropped_entities": len(result["dropped_entities"]),
            "dropped_entities": "; ".join(d["entity"] for d in result["dropped_entities"]),
            "friedman_chi2": result["friedman"]["statistic"] if ok else None,
            "friedman_p": result["friedman"]["pvalue"] if ok else None,
            "iman_davenport_f": result["iman_davenport"]["statistic"] if ok else None,
            "iman_davenport_p": result["iman_davenport"]["pvalue"] if ok else None,
            "omnibus_rejected": result["omnibus"]["rejected"] if ok else None,
            "omnibus_gate": result["omnibus"]["gate"] if ok else None,
            "posthoc_applied": result["omnibus"]["posthoc_applied"] if ok else None,
            "top_clique": "; ".join(result["layers"][0]["members"]) if ok else ""}


STABILITY_COLUMNS = ["group", "backbone", "mcd", "source", "regime"] + CSV_COLUMNS + ["n_replicates"]


def stability_table(results: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Every CSF variant of every cell with a clique stability (:data:`STABILITY_COLUMNS`): its
    :func:`ranking_frame` row beside its cell and the number of replicates ranked, best mean rank first."""
    frames = []
    for result in results:
        if result["status"] == "ok" and result["stability"]["status"] == "ok":
            a = result["analysis"]
            frames.append(ranking_frame(result).assign(**{k: a[k] for k in STABILITY_COLUMNS[:5]},
                                                       n_replicates=result["stability"]["n_replicates"]))
    return pd.concat(frames, ignore_index=True)[STABILITY_COLUMNS] if frames else pd.DataFrame(columns=STABILITY_COLUMNS)


def rank_results(table: pd.DataFrame, cells: Iterable[Analysis], settings: dict) -> list[dict[str, Any]]:
    """Select (validation-based) and rank every analysis of ``cells`` on the results ``table``."""
    return rank_cells(selected_ranked_rows(table, settings), cells, settings)


def rank_cells(rows: pd.DataFrame, cells: Iterable[Analysis], settings: dict) -> list[dict[str, Any]]:
    """Rank every analysis of ``cells`` on ``rows``, the :func:`selected_ranked_rows` of a results table."""
    by_cell: dict[tuple, pd.DataFrame] = {}
    keys = ["backbone", "mcd", "source", "cell_regime"]
    for key, part in rows.groupby(keys, observed=True, sort=False):
        by_cell[(str(key[0]), bool(key[1]), str(key[2]), str(key[3]))] = part
    results = []
    for cell in cells:
        part = by_cell.get((cell.backbone, cell.mcd, cell.source, cell.regime))
        if part is not None:
            part = part[part["metric"].isin(settings["metric_groups"][cell.group])]
        results.append(run_analysis(part, cell, settings))
    return results
