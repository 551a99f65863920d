"""Job of ``rules/analyses.smk``: the analyses of Yang, Zhang & Russakovsky, "ImageNet-OOD: Deciphering Modern
Out-of-Distribution Detection Algorithms" (ICLR 2024) over a source's stored scores — which set plays the ID
role and which the OOD role, and what a CSF then separates.

For every model of the source (the scores file of fit group ``none``, CSF variants without projection) and
every pair (an ID-role set: the ID test split or a covariate set; an OOD-role set: a semantic or covariate
set), the job computes the conditional AUROCs A_co, A_io, A_ci and the new-class and failure AUROCs, checking
the identities that link them on every cell (:mod:`csfbench.analysis.decomposition`: the job fails naming the
cell if one is off by more than 1e-9).  From them: the pair grid (Table 1's shape: mean new-class AUROC over
the trained and pretrained models, with the change against a reference CSF), Friedman/Conover cliques with
blocks = (model, pair), the false rejection of correct ID-role samples at a threshold transferred from each
semantic set (Table 2), and the random-network check (§4.3) for the models of paradigm ``random``.  With the
source's encoder embeddings (the proximity stage's of the ID test split and the semantic sets, and those of the
covariate sets, :func:`embed_covariate_sets`), the distance-controlled AUROC (§4.2, Fig. 3 left): the samples
of each embedded shifted set binned by their distance to the nearest ID test sample, the AUROC of every bin
against the whole ID test split, and an OLS line through the bins with its standard errors.  Every analysis is
written as a table and a figure.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from csfbench.analysis import (FIT_COLUMNS, FRR_COLUMNS, RANK_GAP_COLUMNS, RANK_SUMMARY_COLUMNS, category_metrics,
                               decomposition_table, distance_controlled_auroc, frr_table, iconic_summary,
                               iconic_table, nearest_neighbour_distance, overlap_table, random_network_check,
                               rank_comparison, rank_gap_selection, score_densities, split_by_correctness)
from csfbench.analysis.iconic import INPUT_COLUMNS as CATEGORY_ROW_COLUMNS
from csfbench.atomic import atomic_path, write_json
from csfbench.csf.store import read_scores, scores_sets, set_groups
from csfbench.data.base import ImageSet
from csfbench.data.eval_sets import set_images
from csfbench.data.sources import shift_set
from csfbench.evaluation import COLUMNS, ID_TEST, SHIFT_SCHEMES, tuning_protocols
from csfbench.errors import FeatureFileError
from csfbench.workflow.ids import ModelId
from csfbench.proximity.stratification import read_embeddings, write_embeddings
from csfbench.report import analyses as report
from csfbench.report.figures import conover_matrix, plot_conover_heatmap, save_figure
from csfbench.stages.report_tables import write_report_table
from csfbench.specs import DatasetSpec, EvalSet
from csfbench.stats import StatsInputError, rank_table
from csfbench.workflow.sections import AnalysisPair, Analyses

log = logging.getLogger(__name__)
RANDOM = "random"  # the paradigm of the random-network check (csfbench.stages.train.UNTRAINED)
KEY = ["model", "paradigm", "csf", "id_set", "ood_set"]


#: the pair schemes of the metric rows and the decomposition column holding each one's AUROC (``shiftdetect``
#: builds the evaluation set of ``newclass``, all of the ID-role set against all of the OOD-role set, and asks a
#: different question of it: csfbench.metrics.schemes)
PAIR_AUROC = {"correct_vs_ood": "a_co", "incorrect_vs_ood": "a_io", "newclass": "newclass", "failure": "failure",
              "failure_pooled": "failure_pooled", "shiftdetect": "newclass"}
#: the scheme of the false-rejection rows (a statistic of the pair's correct_vs_ood set: csfbench.analysis.frr)
FRR_SCHEME = "frr_at_q"
PAIR_SCHEMES = (*PAIR_AUROC, FRR_SCHEME)


#: why a table of the trained models, or of their MSP / Max-Logit comparison, has no rows
NO_TRAINED_MODEL = "No model of this source is a trained network (every one is randomly initialised)."
NO_RANK_PAIR = ("No trained model of this source has both MSP (MSR) and Max-Logit (MLS) scores, a semantic set "
                "and (for the gallery) the images of its sets.")


def _concat(frames: list[pd.DataFrame], columns: list[str] | None = None) -> pd.DataFrame:
    """The non-empty ``frames`` one below the other; if there is none, an empty frame of ``columns``."""
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def pairs_of(sets: dict[str, dict], explicit: tuple[AnalysisPair, ...], covariate_x_semantic: bool
             ) -> list[tuple[str, str]]:
    """The (ID-role set, OOD-role set) pairs of one scores file: ``explicit`` pairs whose sets the file holds,
    then, with ``covariate_x_semantic``, the ID test split and every covariate set, each against every semantic
    set.  ``sets``: :func:`csfbench.csf.store.scores_sets`."""
    kind = {name: attrs["shift_type"] for name, attrs in sets.items()}
    pairs = [(p.id, p.ood) for p in explicit if p.id in kind and p.ood in kind]
    if covariate_x_semantic:
        id_roles = ["test"] + sorted(n for n, k in kind.items() if k == "covariate")
        pairs += [(i, o) for i in id_roles for o in sorted(n for n, k in kind.items() if k == "semantic")]
    return list(dict.fromkeys(pairs))


def pair_schemes(explicit: tuple[AnalysisPair, ...]) -> dict[tuple[str, str], tuple[str, ...]]:
    """{(ID-role set, OOD-role set): schemes} of the explicit pairs that name their own ``schemes``; every other
    pair takes ``default`` (``analyses.schemes``)."""
    return {(p.id, p.ood): p.schemes for p in explicit if p.schemes is not None}


def pair_metric_rows(source: str, cells: pd.DataFrame, frr: pd.DataFrame, sets: dict[str, dict],
                     settings: Analyses, protocols: dict) -> pd.DataFrame:
    """The metric rows (:data:`csfbench.evaluation.COLUMNS`) of one model's pairs, for the results table.

    Per (CSF, pair of ``cells``, the decomposition table) and scheme of the pair (:func:`pair_schemes`): metric
    ``auroc`` with the value of :data:`PAIR_AUROC`'s column (ID-role side positive), or for ``frr_at_q`` the false
    rejection of the pair in ``frr`` (metric ``frr_q{q}``, a fraction, lower is better; semantic OOD-role sets
    only).  ``dataset`` is the OOD-role set and ``id_set`` the ID-role set.  Where the ID test split plays the ID
    role, the schemes the CSF stage already writes for it (:data:`csfbench.evaluation.SHIFT_SCHEMES`) are left
    out, and so is an undefined (NaN) value.  ``sets``: :func:`csfbench.csf.store.scores_sets` of the model's
    scores file (shift type, regime and group keys of each set); ``protocols``:
    :func:`csfbench.evaluation.tuning_protocols` of its metric rows.
    """
    own = pair_schemes(settings.pairs)
    metric = f"frr_q{settings.frr_quantile:g}"
    rejection = {(r.csf, r.set, r.semantic_set): r.frr for r in frr.itertuples()} if len(frr) else {}
    rows = []
    for cell in cells.to_dict("records"):
        model = ModelId.parse(cell["model"])
        pair = (cell["id_set"], cell["ood_set"])
        ood = sets[cell["ood_set"]]
        base = {"source": source, "backbone": model.backbone, "paradigm": model.paradigm, "dropout": model.dropout,
                "reward": model.reward, "run": model.run, "mcd": False, "csf": cell["csf"], "variant": "none",
                "tuning_protocol": protocols.get((False, cell["csf"], "none")), "dataset": cell["ood_set"],
                "id_set": cell["id_set"], "shift_type": ood["shift_type"], "regime": ood["regime"],
                **set_groups(ood), "split": "test"}
        for scheme in own.get(pair, settings.schemes):
            if cell["id_set"] == ID_TEST and scheme in SHIFT_SCHEMES:
                continue
            value = cell[PAIR_AUROC[scheme]] if scheme in PAIR_AUROC else rejection.get((cell["csf"], *pair), np.nan)
            if not np.isnan(value):
                rows.append({**base, "scheme": scheme, "metric": "auroc" if scheme in PAIR_AUROC else metric,
                             "value": float(value)})
    return pd.DataFrame(rows, columns=COLUMNS)


@dataclass(frozen=True, eq=False)
class ModelScores:
    """One model's confidences as the analyses read them: the deterministic mode's CSF variants without
    projection, of every evaluation set of its scores file (:func:`read_model_scores`)."""

    path: Path
    model: str
    source: str
    sets: dict[str, dict]  # evaluation set → its attributes (csfbench.csf.store.scores_sets)
    confidences: dict[str, dict[str, np.ndarray]]  # evaluation set → {CSF: (N,) confidences}
    correct: dict[str, np.ndarray]  # evaluation set → (N,) bool, the classifier's prediction right

    @property
    def paradigm(self) -> str:
        """The model's training paradigm (``random`` for a randomly initialised network)."""
        return ModelId.parse(self.model).paradigm

    def names(self, shift_type: str) -> list[str]:
        """The evaluation sets of ``shift_type`` (``semantic``, ``covariate``, …) the file holds, sorted."""
        return sorted(name for name, attrs in self.sets.items() if attrs["shift_type"] == shift_type)

    def of(self, name: str, csfs: list[str] | tuple[str, ...] | None) -> dict[str, np.ndarray]:
        """{CSF: confidences} of evaluation set ``name``, restricted to ``csfs`` (None = every CSF); a
        FeatureFileError names the file and its sets when it does not score ``name``."""
        if name not in self.confidences:
            raise FeatureFileError(f"{self.path}: no scores of evaluation set {name!r} (has {sorted(self.sets)})")
        return {csf: conf for csf, conf in self.confidences[name].items() if csfs is None or csf in csfs}


def read_model_scores(path: str | Path) -> ModelScores:
    """A scores file's :class:`ModelScores`: every analysis of :func:`write_analyses` works on these, so the
    file is read once, and only its deterministic mode.  Fit group ``none``'s files hold no projected variant;
    one in another file would be left out."""
    sets = scores_sets(path)
    if ID_TEST not in sets:
        raise FeatureFileError(f"{path}: no scores of the ID test split ('{ID_TEST}'); has {sorted(sets)}")
    data = {name: read_scores(path, name, modes=("det",)) for name in sets}
    for name, (scores, _) in data.items():
        if "det" not in scores:
            raise FeatureFileError(f"{path}: evaluation set {name!r} has no scores of the deterministic mode ('det')")
    attrs = data[ID_TEST][1]
    return ModelScores(Path(path), str(attrs["model"]), str(attrs["source"]), sets,
                       {name: {csf: conf for (csf, variant), conf in scores["det"]["scores"].items()
                               if variant == "none"} for name, (scores, _) in data.items()},
                       {name: scores["det"]["correct"] for name, (scores, _) in data.items()})


def model_cells(scores: ModelScores, settings: Analyses) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The decomposition rows of one model (identities checked) and its false-rejection rows; and the
    per-set scores of a random model's check (``{}`` otherwise)."""
    model, paradigm, sets, csfs = scores.model, scores.paradigm, scores.sets, settings.csfs
    cells = {}
    for id_set, ood_set in pairs_of(sets, settings.pairs, settings.covariate_x_semantic):
        id_scores, ood_scores = scores.of(id_set, csfs), scores.of(ood_set, csfs)
        for csf in sorted(id_scores):
            cells[(model, paradigm, csf, id_set, ood_set)] = (id_scores[csf], scores.correct[id_set], ood_scores[csf])
    table = decomposition_table(cells, KEY)
    labelled = {name: (scores.of(name, csfs), scores.correct[name]) for name in [ID_TEST] + scores.names("covariate")}
    frr = []  # a random network's correct samples are too few (often none) for a rejection rate
    for semantic in scores.names("semantic") if paradigm != RANDOM else []:
        part = frr_table(labelled, scores.of(semantic, csfs), settings.frr_quantile)
        frr.append(part.assign(model=model, paradigm=paradigm, semantic_set=semantic))
    random = {}
    if paradigm == RANDOM:
        random = {"id": scores.of(ID_TEST, csfs),
                  "shift": {n: scores.of(n, csfs) for n, a in sets.items() if a["shift_type"] != "id"}}
    return table, _concat(frr), random


def embed_covariate_sets(source: str, sets: dict[str, DatasetSpec], encoder_cfg: dict, batch_size: int,
                         out_h5: str | Path) -> None:
    """Job: embed a source's covariate sets (``sets``: name → dataset spec) with the proximity stage's encoder
    (``proximity.encoder``), for the distance-controlled AUROC.  The file holds ``embeddings/{name}`` (N × E
    float32, the sets' sample order) and the attributes ``source``, ``encoder`` and ``sets`` (JSON list)."""
    # imported here, not at the top: torch would cost the stage's other jobs, which need no network, ~2 s of
    # start-up
    from csfbench.proximity.encoders import build_encoder, embed_timed
    from csfbench.training.loop import resolve_device

    encoder = build_encoder(encoder_cfg, resolve_device())
    embeddings = {name: embed_timed(encoder, shift_set(spec, "covariate"), batch_size, f"{source}/{name}")
                  for name, spec in sets.items()}
    write_embeddings(out_h5, source, encoder.description, embeddings)
    log.info("%s: embedded %s with %s", source, list(sets), encoder.description)


def query_embeddings(files: list[str | Path]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(the ID test split's embeddings, {query set: embeddings}) of embeddings files of one encoder
    (:func:`csfbench.proximity.stratification.read_embeddings`): the proximity stage's (its ``test`` and semantic
    sets; ``train`` is not read) and optionally :func:`embed_covariate_sets`'.  Raises ValueError when the files
    name different encoders or none holds ``test``."""
    reference, queries, encoders = None, {}, {}
    for path in files:
        sets, _, _, attrs = read_embeddings(path, skip=("train",))
        encoders[str(path)] = str(attrs["encoder"])
        for name, embeddings in sets.items():
            if name == "test":
                reference = embeddings
            else:
                queries[name] = embeddings
    if len(set(encoders.values())) > 1:
        raise ValueError(f"embeddings of different encoders {encoders}: re-run the embedding jobs")
    if reference is None:
        raise ValueError(f"none of {[str(f) for f in files]} holds embeddings of the ID test split ('test')")
    return reference, queries


def query_distances(files: list[str | Path]) -> dict[str, np.ndarray]:
    """{query set: (N,) distance of each sample to its nearest neighbour in the ID test split} in the encoder's
    space, from the embeddings files of :func:`query_embeddings`."""
    reference, embeddings = query_embeddings(files)
    return {name: nearest_neighbour_distance(emb, reference) for name, emb in embeddings.items()}


def model_distance(scores: ModelScores, distances: dict[str, np.ndarray], settings: Analyses
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(bins, fits) of one model's distance-controlled AUROC: the samples of each embedded shifted set that the
    model scores (semantic and covariate sets; ``distances``: :func:`query_distances`) binned by their
    nearest-neighbour distance to the ID test split (:func:`csfbench.analysis.distance_controlled_auroc`; at
    most ``distance_bins`` equal-count bins).  Raises ValueError when a set's embeddings and scores differ in
    length."""
    sets = {}
    for name in [q for q in distances if q in scores.sets]:
        n = len(scores.correct[name])
        if n != len(distances[name]):
            raise ValueError(f"{len(distances[name])} embeddings of set {name!r}, but {scores.path} scores {n} "
                             f"samples: re-run the embedding jobs")
        sets[name] = (distances[name], scores.of(name, settings.csfs))
    n_bins = min([settings.distance_bins, *(len(distances[name]) for name in sets)])
    bins, fits = distance_controlled_auroc(scores.of(ID_TEST, settings.csfs), sets, n_bins)
    return bins.assign(model=scores.model), fits.assign(model=scores.model)


def distance_overlaps(fits: pd.DataFrame) -> pd.DataFrame:
    """The ±2·SE overlap of the intercepts of every two query sets per (model, CSF) of :func:`model_distance`'s
    fits (columns ``cell`` = "model CSF" and those of :func:`csfbench.analysis.overlap_table`)."""
    return overlap_table(fits.assign(cell=fits["model"] + " " + fits["csf"]), within="cell")


def category_rows(scores: ModelScores, csfs: tuple[str, ...] | None) -> pd.DataFrame:
    """ICONIC-444's per-run rows of one model (Krumpl, Avenhaus & Possegger, arXiv 2601.10802, Tables 4 and 10):
    per CSF and OOD category (a semantic set's regime, or ``covariate``) the AUROC and FPR@95/99 in both
    positive-class conventions of the ID test split against each of the category's sets and, for a category
    of several sets, against their union (:func:`csfbench.analysis.category_metrics`).  Columns: method,
    task (the source), arch (backbone and paradigm), run, category, subset, metric, value."""
    mid = ModelId.parse(scores.model)
    categories: dict[str, list[str]] = {}
    for name, set_attrs in sorted(scores.sets.items()):
        if set_attrs["shift_type"] in ("semantic", "covariate"):
            category = str(set_attrs["regime"]) if set_attrs["shift_type"] == "semantic" else "covariate"
            categories.setdefault(category, []).append(name)
    shifted = {name: scores.of(name, csfs) for names in categories.values() for name in names}
    rows = []
    for csf, id_conf in scores.of(ID_TEST, csfs).items():
        for category, names in categories.items():
            part = category_metrics(id_conf, {name: shifted[name][csf] for name in names})
            rows.append(part.assign(method=csf, task=scores.source, arch=f"{mid.backbone} {mid.paradigm}",
                                    run=mid.run, category=category))
    return _concat(rows, list(CATEGORY_ROW_COLUMNS))


def write_category_tables(long_files: list[str | Path], outputs: dict) -> None:
    """Job: ICONIC-444's category tables over every source (task), architecture and run from the per-source
    rows of :func:`category_rows`, one per reading of the categories with several sets (``averaged``,
    ``pooled``): mean and ddof-1 deviation per category, and "Average" = the unweighted mean of the category
    means with the ddof-1 deviation of those means.  Values are fractions; randomly initialised models left out.
    Without any category row (no source has a semantic or covariate set) the tables are empty and the figure
    says so."""
    rows = _concat([pd.read_csv(path) for path in long_files], list(CATEGORY_ROW_COLUMNS))
    rows = rows[~rows["arch"].str.endswith(f" {RANDOM}")]
    for view in ("averaged", "pooled"):
        table = iconic_table(rows, aggregation=view)
        table.columns = [" ".join(map(str, c)) for c in table.columns]
        write_report_table(table, outputs[view], "Per OOD category: mean and deviation over sources, architectures and "
                     f"runs ({view} sub-datasets)", empty_reason="No source has a semantic or covariate set.")
    save_figure(report.plot_categories(iconic_summary(rows)), outputs["png"], outputs["pdf"])


#: the two CSFs of ImageNet-OOD's rank comparison (Fig. 5): MSP and Max-Logit
RANK_PAIR = ("MSR", "MLS")
#: the columns of the tables that may hold no rows: the distance fits (:func:`model_distance`), the rank
#: views (:func:`rank_views`) and the rank-gap gallery (:func:`gallery`)
DISTANCE_COLUMNS = [*FIT_COLUMNS, "model"]
RANKS_COLUMNS = [*RANK_SUMMARY_COLUMNS, "model", "ood_set"]
GALLERY_COLUMNS = [*RANK_GAP_COLUMNS, "model"]


def rank_views(scores: ModelScores) -> pd.DataFrame:
    """One model's rank comparison of MSP (MSR) and Max-Logit (MLS) per semantic set (Fig. 5: mean and median
    percentile rank of correct ID, incorrect ID and OOD samples in the pooled ID test ∪ set); no rows where the
    model lacks either CSF or a semantic set."""
    if len(scores.of(ID_TEST, RANK_PAIR)) < len(RANK_PAIR):
        return pd.DataFrame(columns=RANKS_COLUMNS)

    def pair(name):  # MSR and MLS, in this order
        return {csf: scores.confidences[name][csf] for csf in RANK_PAIR}

    views = [rank_comparison(pair(ID_TEST), scores.correct[ID_TEST], pair(name)).summary
             .assign(model=scores.model, ood_set=name) for name in scores.names("semantic")]
    return _concat(views, RANKS_COLUMNS)


def density_curves(scores: ModelScores, reference: str) -> tuple[pd.DataFrame, str]:
    """The score densities of the ``reference`` CSF on one model's ID test split, split by correctness, and on
    its first semantic set (Figs. 6–9), with what they show; an empty frame where the model lacks the CSF or a
    semantic set (the report draws those of the first model that is not randomly initialised)."""
    id_scores, names = scores.of(ID_TEST, [reference]), scores.names("semantic")
    if not id_scores or not names:
        return pd.DataFrame(), "no model"
    groups = {**split_by_correctness(id_scores[reference], scores.correct[ID_TEST], "ID test"),
              names[0]: scores.of(names[0], [reference])[reference]}
    return score_densities(groups).kde, f"{scores.model}: {reference} on the ID test split and {names[0]}"


def gallery_images(source_dataset: DatasetSpec, val_size: int, sets: list[EvalSet]) -> dict[str, ImageSet]:
    """The images of the gallery's sets, in the order of the feature and scores files: the ID test split of the
    source's dataset and the semantic sets."""
    return {s.name: set_images(source_dataset, val_size, s) for s in sets}


def gallery(scores: ModelScores, images: dict[str, ImageSet], k: int) -> tuple[pd.DataFrame, list]:
    """ImageNet-OOD's Figs. 12–13 for one model (the report's: the first that is not randomly initialised): per
    set of ``images`` (the ID test split and the semantic sets, in the scores files' sample order), the ``k``
    samples that MSP (MSR) ranks highest above Max-Logit (MLS) in the pooled sets.  Returns the rows of
    :func:`csfbench.analysis.rank_gap_selection` (with the model) and their thumbnails (uint8 H×W×3); no rows
    without images or without both CSFs."""
    per_set = {name: scores.of(name, RANK_PAIR) for name in images}
    if not images or any(set(RANK_PAIR) - set(v) for v in per_set.values()):
        return pd.DataFrame(columns=GALLERY_COLUMNS), []
    labels = np.concatenate([[name] * len(per_set[name]["MSR"]) for name in images])
    ids = np.concatenate([np.asarray(images[name].sample_ids).astype(str) for name in images])
    rows = rank_gap_selection(np.concatenate([per_set[n]["MSR"] for n in images]),
                              np.concatenate([per_set[n]["MLS"] for n in images]), labels, ids, k=k)
    offsets = dict(zip(images, np.cumsum([0] + [len(images[n]) for n in images])))
    thumbnails = [images[name].image(int(index - offsets[name])) for name, index in zip(rows["set"], rows["index"])]
    return rows.assign(model=scores.model), thumbnails


def pair_rankings(table: pd.DataFrame, alpha: float, source: str) -> dict:
    """Friedman → Conover → cliques of the CSFs on the new-class AUROC, blocks = (model, pair), over the
    models that are not randomly initialised (higher AUROC = better).  ``analysis`` names the cell as the
    workflow's rankings do (:class:`csfbench.aggregate.ranking.Analysis`): fit group ``none``, every backbone
    (``all``), the deterministic mode, the source and the blocks (``pairs``)."""
    rows = table[table["paradigm"] != RANDOM].dropna(subset=["newclass"])
    analysis = {"group": "none", "backbone": "all", "mcd": False, "source": source, "regime": "pairs"}
    try:
        return {"status": "ok", "analysis": analysis,
                **rank_table(rows, ["model", "id_set", "ood_set"], "csf", "newclass", alpha=alpha,
                             higher_is_better=True)}
    except StatsInputError as err:
        return {"status": "skipped", "analysis": analysis, "reason": str(err)}


def write_analyses(source: str, scores_files: list[str | Path], metrics_files: list[str | Path], settings: Analyses,
                   alpha: float, outputs: dict, embeddings_files: list[str | Path] | None = None,
                   images: dict[str, ImageSet] | None = None) -> None:
    """Job: every analysis of one source into its tables (CSV, LaTeX and report view: :func:`~csfbench.stages.report_tables.write_report_table`), the
    pair rankings (JSON) and a figure per analysis, and the pairs' metric rows (:func:`pair_metric_rows`, parquet
    ``pair_metrics``) for the results table.  ``metrics_files``: the metric rows of the scores files, in their
    order (the tuning protocols are copied).  ``outputs``: decomposition, pair_grid, conditional, frr, random_check, distance,
    distance_overlap, ranks, gallery, categories, rankings_table (CSV paths), rankings (JSON) and the figures'
    PNG/PDF pairs png/pdf (pair grid and random check), decomposition_*, conditional_*, frr_*, rankings_*,
    distance_*, scores_*, gallery_*; ``embeddings_files``: the source's encoder embeddings, the proximity
    stage's and, where the source has covariate sets, :func:`embed_covariate_sets`' (None or empty: no distance
    analysis, its tables hold their columns but no rows and its figure says why); ``images``: the ID test
    split's and the semantic sets' images, in the scores' order, for the rank-gap gallery (None or empty: no
    gallery, its table holds its columns only)."""
    distances = query_distances(embeddings_files) if embeddings_files else None
    decomposition, frr, random_rows, metric_rows, bins, fits, ranks, categories = ([] for _ in range(8))
    curves, title, picked, thumbnails = pd.DataFrame(), "no model", None, []
    for path, metrics_file in zip(scores_files, metrics_files, strict=True):
        scores = read_model_scores(path)  # one model in memory at a time, its file read once
        table, rejected, random = model_cells(scores, settings)
        decomposition.append(table)
        frr.append(rejected)
        metric_rows.append(pair_metric_rows(source, table, rejected, scores.sets, settings,
                                            tuning_protocols([metrics_file])))
        categories.append(category_rows(scores, settings.csfs))
        log.info("%s: %d cells, identities hold", path, len(table))
        if random:
            random_rows.append(random_network_check(random["id"], random["shift"]).assign(model=scores.model))
            continue
        if distances is not None:
            model_bins, model_fits = model_distance(scores, distances, settings)
            bins.append(model_bins)
            fits.append(model_fits)
        ranks.append(rank_views(scores))
        if curves.empty:
            curves, title = density_curves(scores, settings.reference_csf)
        if picked is None:  # the gallery of the first model that is not randomly initialised
            picked, thumbnails = gallery(scores, images or {}, settings.gallery_k)
    cells = pd.concat(decomposition, ignore_index=True)
    with atomic_path(outputs["pair_metrics"]) as tmp:
        pd.concat(metric_rows, ignore_index=True).to_parquet(tmp, index=False)
    reference = settings.reference_csf
    grid = report.pair_grid(cells[cells["paradigm"] != RANDOM], reference)
    random_check = pd.concat(random_rows, ignore_index=True) if random_rows else report.empty_random_check()
    trained = cells[cells["paradigm"] != RANDOM]
    write_report_table(cells.set_index(KEY), outputs["decomposition"], f"{source}: conditional AUROCs A_co, A_io, A_ci "
                 "and the new-class / failure AUROCs per model, CSF and pair")
    save_figure(report.plot_decomposition(trained, source), outputs["decomposition_png"], outputs["decomposition_pdf"])
    conditional = report.conditional_table(trained, reference)
    write_report_table(conditional, outputs["conditional"], f"{source}: conditional AUROCs and the change of the new-class "
                 f"AUROC against {reference}, split by ID outcome", empty_reason=NO_TRAINED_MODEL)
    save_figure(report.plot_conditional(conditional, source, reference), outputs["conditional_png"],
                outputs["conditional_pdf"])
    write_report_table(grid, outputs["pair_grid"], f"{source}: new-class AUROC per CSF and (ID-role / OOD-role) pair, mean "
                 f"over models, and its change against {reference}", empty_reason=NO_TRAINED_MODEL)
    frr_all = _concat(frr, [*FRR_COLUMNS, "model", "paradigm", "semantic_set"])
    write_report_table(frr_all, outputs["frr"], f"{source}: false rejection of correct samples at the threshold transferred "
                 "from a semantic set", empty_reason="No trained model of this source has a semantic set.")
    save_figure(report.plot_frr(frr_all, source), outputs["frr_png"], outputs["frr_pdf"])
    write_report_table(random_check, outputs["random_check"], f"{source}: |AUROC - 0.5| of randomly initialised networks "
                 "per CSF and shifted set", empty_reason="No model of this source is a randomly initialised network.")
    rankings = pair_rankings(cells, alpha, source)
    write_json(rankings, outputs["rankings"], indent=1)
    write_report_table(report.pair_ranking_table(rankings), outputs["rankings_table"], f"{source}: CSFs ranked on the "
                 "new-class AUROC over (model, pair) blocks: mean rank, layer, cliques",
                 empty_reason=f"The ranking was skipped: {rankings.get('reason')}")
    save_figure(plot_conover_heatmap(conover_matrix(rankings), rankings), outputs["rankings_png"],
                outputs["rankings_pdf"])
    save_figure(report.plot_analyses(grid, random_check, source, reference), outputs["png"],
                outputs["pdf"])
    bins, fits = _concat(bins), _concat(fits, DISTANCE_COLUMNS)
    write_report_table(fits, outputs["distance"], f"{source}: AUROC against the distance to the ID test split, OLS per "
                 "model, CSF and shifted set", empty_reason="No shifted set that a trained model of this source "
                 "scores has encoder embeddings (the proximity stage's).")
    with atomic_path(outputs["distance_overlap"]) as tmp:
        distance_overlaps(fits).to_csv(tmp, index=False)
    save_figure(report.plot_distance(bins, fits, source, reference), outputs["distance_png"],
                outputs["distance_pdf"])
    ranks = _concat(ranks, RANKS_COLUMNS)
    write_report_table(ranks, outputs["ranks"], f"{source}: percentile ranks of MSP (MSR) and Max-Logit (MLS) by sample "
                 "group", empty_reason=NO_RANK_PAIR)
    save_figure(report.plot_score_views(ranks, curves, title), outputs["scores_png"], outputs["scores_pdf"])
    picked = pd.DataFrame(columns=GALLERY_COLUMNS) if picked is None else picked
    write_report_table(picked, outputs["gallery"], f"{source}: rank-gap gallery, the samples that MSP (MSR) ranks highest "
                 "above Max-Logit (MLS) per set", empty_reason=NO_RANK_PAIR)
    save_figure(report.plot_gallery(picked, thumbnails, source), outputs["gallery_png"], outputs["gallery_pdf"])
    categories = _concat(categories)
    with atomic_path(outputs["categories"]) as tmp:
        categories.to_csv(tmp, index=False)
