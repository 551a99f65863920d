"""The jobs of every rule, on the experiment grid (:class:`csfbench.workflow.grid.Grid`): which files each
stage writes and what each of its jobs reads (inputs, specs and params as JSON).

Methods are named like the rule files' wildcards (``source``, ``model``, ``dataset``, ``fit_group``,
``name``), so that ``rules/common.smk`` hands them a job's wildcards unchanged.  One section per rule file.
"""
from __future__ import annotations

import functools
import json
from dataclasses import asdict
from pathlib import Path

from csfbench.aggregate.cells import Analysis, analyses, output_paths
from csfbench.csf.projection import NETWORK_SCORER, group_of, parse_variant
from csfbench.data import demo as demo_generator
from csfbench.ensembles.scores import ENSEMBLE_SCORER
from csfbench.features.identity import extraction_identity, identity_json, shares_features
from csfbench.provenance import weights_key
from csfbench.shifts import names as shift_names
from csfbench.specs import SPLITS, EvalSet
from csfbench.workflow import paths
from csfbench.workflow.grid import Grid, canonical_json, generated_set_folder
from csfbench.workflow.ids import EnsembleId

#: the tables the figure rules write (CSV; the LaTeX twins are written beside them)
TABLES = ("clique_layers.csv", "table2_best.csv", "table8_selected_dropout.csv", "table10_selected_reward.csv")
#: the files of the ``conover_heatmap`` rule (figure as PNG and PDF, p-value matrix as CSV)
HEATMAP_FILES = {"png": paths.figure("conover_heatmap.png"), "pdf": paths.figure("conover_heatmap.pdf"),
                 "csv": paths.table("conover_heatmap.csv")}

def same_file(a: str, b: str) -> bool:
    """Whether two paths (relative to the working directory, or absolute) name the same file."""
    return Path(a).resolve() == Path(b).resolve()


class Jobs(Grid):
    """The rules' jobs of one validated config (see the module docstring)."""

    # -----------------------------------------------------------------------------------------
    # jobs of the data, training and feature rules
    # -----------------------------------------------------------------------------------------

    def demo_files(self) -> list[str]:
        """The files the demo generator writes (none when the demo stage is off)."""
        if not self.enabled("demo"):
            return []
        root = self.config["data_root"]
        return [f"{root}/{name}/{split}/{array}.npy"
                for name, split in demo_generator.demo_splits(self.config["demo"]["spec"])
                for array in ("images", "labels")]

    def dataset_index_inputs(self, name: str) -> list[str]:
        """The generated files behind a dataset, when the demo generator produces it."""
        root = f"{self.config['data_root']}/{self.config['datasets'][name]['path']}/"
        return [f for f in self.demo_files() if f.startswith(root)]

    def pretrained_vit_file(self) -> str | None:
        """The ViT weights the demo's pretraining writes (None when the pretrain stage is off)."""
        return self.config["backbones"]["vit"]["pretrained"]["file"] if self.enabled("pretrain") else None

    def _workflow_weights(self, file: str | None) -> dict[str, str]:
        """{"weights": file} when ``file`` is the ViT weights the workflow's pretraining writes (a DAG input);
        a user's file is checked by the job when it starts (so that a dry run works without it)."""
        produced = self.pretrained_vit_file()
        return {"weights": file} if file and produced and same_file(file, produced) else {}

    def train_inputs(self, source: str, model: str) -> dict:
        """The index of the source's dataset, for an Outlier Exposure model also that of its outlier set
        (``outliers``), and the weights files the model starts from."""
        spec = self.model_spec(source, model)
        inputs = {"index": paths.dataset_index(spec.dataset.name)}
        if spec.outliers is not None:
            inputs["outliers"] = paths.dataset_index(spec.outliers.name)
        if spec.backbone == "vit" and self.enabled("pretrain"):
            inputs["pretrained"] = spec.pretrained["file"]
        return {**inputs, **self._workflow_weights(spec.weights and spec.weights["file"])}

    def eval_set_images(self, source: str, model: str | None, dataset: str) -> dict[str, str]:
        """What the images of an evaluation set are read through: its dataset index or its generated images."""
        generated = generated_set_folder(source, dataset, model)
        if generated is not None:  # a corruption or adversarial set written by the shift study's rules
            return {"images": paths.npy_file(generated, "images")}
        if dataset in SPLITS:
            return {"index": paths.dataset_index(self.source_dataset(source))}
        return {"index": paths.dataset_index(dataset)}

    def dataset_spec_json(self, name: str) -> str:
        return self.dataset_spec(name).to_json()

    def extract_inputs(self, source: str, model: str, dataset: str) -> dict:
        return {"checkpoint": paths.checkpoint(source, model), **self.eval_set_images(source, model, dataset)}

    def eval_set_json(self, source: str, dataset: str, model: str) -> str:
        # the model matters only for its own adversarial sets: other sets share one cache entry
        return self._eval_set_json(source, dataset, model if shift_names.parse_adversarial_set(dataset) else None)

    @functools.cache
    def _eval_set_json(self, source: str, dataset: str, model: str | None) -> str:
        return self.eval_set_spec(source, dataset, model).to_json()

    @functools.cache
    def model_spec_json(self, source: str, model: str) -> str:
        return self.model_spec(source, model).to_json()

    # feature files shared between studies: rule extract_pretrained_features (csfbench.features.identity)

    @functools.cache
    def shared_feature_models(self) -> tuple[str, ...]:
        """The model ids whose feature files are shared between studies (:func:`shares_features`), sorted: the
        ``model`` wildcard of rule ``extract_pretrained_features`` (none: the rule is not defined)."""
        return tuple(sorted({str(m) for s, m in self.iter_models() if shares_features(self.model_spec(s, m))}))

    def shared_extract_inputs(self, source: str, model: str, dataset: str) -> dict:
        """The images of the evaluation set (as :meth:`extract_inputs`) and, instead of the checkpoint (whose
        provenance names the study's source, model and seed), the weights file: Snakemake hashes its bytes into the
        cache key.  A file the workflow writes is always an input; a user's file once it exists, so that a dry
        run works without it (the job then fails naming it)."""
        file = self.model_spec(source, model).weights["file"]
        weights = self._workflow_weights(file) or ({"weights": file} if Path(file).is_file() else {})
        return {**weights, **self.eval_set_images(source, model, dataset)}

    def extraction_json(self, source: str, model: str, dataset: str) -> str:
        """The extraction identity of a shared feature file as canonical JSON (the cached rule's param; see
        :func:`csfbench.features.identity.extraction_identity`)."""
        features = self.config["features"]
        return identity_json(extraction_identity(self.model_spec(source, model),
                                                 self.eval_set_spec(source, dataset, model),
                                                 features["feature_dtype"], features["compression"]))

    def feature_files(self) -> list[str]:
        return [paths.features(source, str(model), dataset) for source, model in self.iter_models()
                for dataset in self.eval_datasets(source, model)]

    # -----------------------------------------------------------------------------------------
    # CSF scoring: one job per (model, fit group) over every scored evaluation set
    # -----------------------------------------------------------------------------------------

    @property
    def fit_groups(self) -> list[str]:
        return list(self.config["csf"]["groups"])

    @functools.cache
    def csf_fit_json(self, fit_group: str, source: str) -> str:
        """:meth:`csf_fit_config` as canonical JSON (one per group and source, not per job)."""
        return canonical_json(self.csf_fit_config(fit_group, source))

    def csf_ood_validation(self, source: str, model: str) -> list[str]:
        """The features of the source's OOD validation set, which the grid tuning protocol reads (else none)."""
        name = self.ood_validation_set(source)
        return [paths.features(source, model, name)] if name else []

    @functools.cache
    def scored_sets(self, source: str, model: str) -> tuple[EvalSet, ...]:
        return tuple(self.eval_set_spec(source, d, model) for d in self.scored_datasets(source, model))

    def score_inputs(self, source: str, model: str, fit_group: str) -> dict:
        return {"fit": paths.csf_fit(source, model, fit_group),
                "features": [paths.features(source, model, s.name) for s in self.scored_sets(source, model)]}

    @functools.cache
    def score_eval_sets_json(self, source: str, model: str) -> str:
        return canonical_json([s.to_dict() for s in self.scored_sets(source, model)])

    def metric_files(self) -> list[str]:
        """The metric rows of every CSF job (stored-output, network-pass, ensemble, ProjNorm) the results table
        merges."""
        return [paths.metrics(source, str(model), fit_group) for source, model in self.iter_models()
                for fit_group in self.fit_groups] + self.network_metric_files() + self.ensemble_metric_files() \
            + self.projnorm_metric_files()

    # -----------------------------------------------------------------------------------------
    # CSFs that need the network: their scores and metric rows in the scorer slot NETWORK_SCORER
    # -----------------------------------------------------------------------------------------

    @property
    def network_methods(self) -> list[str]:
        return list(self.config["network_csf"]["methods"])

    def network_fit_json(self) -> str:
        """What a network-pass fit reads (the batch size is its own param: a change of it reruns nothing)."""
        return canonical_json({k: v for k, v in self.config["network_csf"].items() if k != "batch_size"})

    def network_metric_files(self) -> list[str]:
        if not self.network_methods:
            return []
        return [paths.metrics(source, str(model), NETWORK_SCORER) for source, model in self.iter_models()]

    def network_fit_inputs(self, source: str, model: str) -> dict:
        return {"checkpoint": paths.checkpoint(source, model), "index": self.source_index(source)}

    def network_score_inputs(self, source: str, model: str) -> dict:
        """The checkpoint, the fit, the images of every scored set (as extract_features reads them) and their
        feature files (whose correctness the metric rows use), in the order of :meth:`score_eval_sets_json`."""
        sets = self.scored_sets(source, model)
        images = {path for s in sets for path in self.eval_set_images(source, model, s.name).values()}
        return {"checkpoint": paths.checkpoint(source, model), "fit": paths.network_fit(source, model),
                "images": sorted(images), "features": [paths.features(source, model, s.name) for s in sets]}

    # -----------------------------------------------------------------------------------------
    # deep ensembles: one job per (ensemble, scorer slot) from the members' feature and score files
    # -----------------------------------------------------------------------------------------

    @property
    def ensemble_scorers(self) -> list[str]:
        """The scorer slots of an ensemble: its own CSFs (:data:`csfbench.ensembles.scores.ENSEMBLE_SCORER`), then
        the member mean of each fit group's CSFs and of the network-pass CSFs."""
        return [ENSEMBLE_SCORER] + self.fit_groups + ([NETWORK_SCORER] if self.network_methods else [])

    def ensembles(self, source: str) -> list[str]:
        """The ensemble ids of ``source`` as strings (the ``ensemble`` wildcard)."""
        return [str(e) for e in self.ensemble_ids(source)]

    def ensemble_inputs(self, source: str, ensemble: str, scorer: str) -> dict:
        """The members' feature files of every set the ensemble is scored on (member by member, sets in
        :meth:`ensemble_eval_sets_json` order) and, for a slot of the members' CSFs, their scores and metric files."""
        members = [str(m) for m in EnsembleId.parse(ensemble).members]
        sets = self.ensemble_datasets(source, ensemble)
        inputs = {"features": [paths.features(source, m, d) for m in members for d in sets]}
        if scorer != ENSEMBLE_SCORER:
            inputs.update(scores=[paths.scores(source, m, scorer) for m in members],
                          metrics=[paths.metrics(source, m, scorer) for m in members])
        return inputs

    @functools.cache
    def ensemble_spec_json(self, source: str, ensemble: str) -> str:
        return self.ensemble_spec(source, ensemble).to_json()

    @functools.cache
    def ensemble_eval_sets_json(self, source: str, ensemble: str) -> str:
        members = EnsembleId.parse(ensemble).members
        return canonical_json([self.eval_set_spec(source, d, members[0]).to_dict()
                               for d in self.ensemble_datasets(source, ensemble)])

    def ensemble_metric_files(self) -> list[str]:
        return [paths.metrics(source, str(ensemble), scorer) for source, ensemble in self.iter_ensembles()
                for scorer in self.ensemble_scorers]

    # -----------------------------------------------------------------------------------------
    # ProjNorm
    # -----------------------------------------------------------------------------------------

    def projnorm_partner(self, source: str, model: str) -> dict:
        """Checkpoint of the AgreeScore partner model (empty when projnorm.agree_run_offset is 0)."""
        partner = self.agree_partner(model)
        return {"partner": paths.checkpoint(source, partner)} if partner else {}

    def projnorm_shift_inputs(self, source: str, model: str, dataset: str) -> dict:
        return {**self.extract_inputs(source, model, dataset), **self.projnorm_partner(source, model),
                "reference": paths.projnorm_reference(source, model)}

    def projnorm_partner_spec(self, source: str, model: str) -> str:
        partner = self.agree_partner(model)
        return self.model_spec_json(source, partner) if partner else "null"

    @functools.cache
    def projnorm_study(self, source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """[(model, [evaluation set])] of a source's study, in grid order."""
        return tuple((str(model), tuple(self.projnorm_sets(source, model)))
                     for s, model in self.study_models() if s == source)

    def projnorm_eval_inputs(self, source: str) -> dict:
        study = self.projnorm_study(source)
        return {"val": [paths.features(source, m, "val") for m, _ in study],
                "features": [paths.features(source, m, d) for m, sets in study for d in sets],
                "projnorm": [paths.projnorm_result(source, m, d) for m, sets in study for d in sets]}

    def projnorm_study_json(self, source: str) -> str:
        """The study's model specs and evaluation sets, in the order of :meth:`projnorm_eval_inputs`."""
        return canonical_json([{"spec": self.model_spec(source, m).to_dict(),
                                "eval_sets": [self.eval_set_spec(source, d, m).to_dict() for d in sets]}
                               for m, sets in self.projnorm_study(source)])

    def projnorm_sources(self) -> list[str]:
        return sorted({source for source, _ in self.study_models()}) if self.enabled("projnorm") else []

    def projnorm_outputs(self) -> list[str]:
        return [out for source in self.projnorm_sources()
                for out in (paths.projnorm_table(source, "correlations.csv"),
                            paths.projnorm_table(source, "stress.csv"), paths.projnorm_scatter(source))]

    def projnorm_metric_files(self) -> list[str]:
        return [paths.projnorm_table(source, "rows.parquet") for source in self.projnorm_sources()]

    # -----------------------------------------------------------------------------------------
    # neural collapse
    # -----------------------------------------------------------------------------------------

    def nc_fit_groups(self) -> list[str]:
        """The CSF fit groups whose projections the NC regimes reuse (a group not fitted is refitted with
        ``geometry.nc.variance``)."""
        return [g for g in ("global", "class") if g in self.fit_groups]

    def nc_fits(self, source: str, model: str) -> list[str]:
        return [paths.csf_fit(source, model, g) for g in self.nc_fit_groups()]

    def nc_record_files(self, source: str) -> list[str]:
        return [paths.nc_records(source, m) for m in self.models(source)]

    def nc_table_files(self) -> dict[str, str]:
        """{source: its NC table (CSV)}; empty without a ``geometry`` section."""
        if not self.enabled("geometry"):
            return {}
        return {source: paths.nc_table(source, "csv") for source in self.sources}

    def nc_tables(self) -> list[str]:
        return [paths.nc_table(source, ext) for source in self.nc_table_files() for ext in ("csv", "tex")]

    # -----------------------------------------------------------------------------------------
    # near/mid/far stratification and the covariate embeddings
    # -----------------------------------------------------------------------------------------

    def proximity_sources(self) -> list[str]:
        return [s for s in self.sources if self.semantic_sets(s)] if self.enabled("proximity") else []

    def proximity_outputs(self) -> list[str]:
        return [paths.proximity_table(source, ext) for source in self.proximity_sources() for ext in ("csv", "tex")]

    def proximity_regime_files(self) -> list[str]:
        return [paths.proximity_regimes(source) for source in self.proximity_sources()]

    def encoder_weights_input(self) -> dict[str, str]:
        """{"weights": file} when the proximity encoder's weights are the ones the workflow produces (the demo's
        pretrained ViT: a DAG input); user-provided weights are checked when the job starts."""
        return self._workflow_weights(self.config["proximity"]["encoder"].get("file"))

    def proximity_embed_inputs(self, source: str) -> dict:
        names = [self.source_dataset(source), *self.semantic_sets(source)]
        return {"index": [paths.dataset_index(name) for name in names], **self.encoder_weights_input()}

    def proximity_embed_params(self, source: str) -> str:
        return canonical_json({"source_dataset": self.dataset_spec(self.source_dataset(source)).to_dict(),
                               "val_size": self.config["sources"][source]["val_size"],
                               "ood": {n: self.dataset_spec(n).to_dict() for n in self.semantic_sets(source)}})

    def static_regimes(self, source: str) -> str:
        ood = self.config["sources"][source]["ood"]
        return json.dumps({n: ood[n].get("regime") for n in self.semantic_sets(source)})

    def covariate_embed_inputs(self, source: str) -> dict:
        """What the covariate sets' images are read through (generated images or dataset indexes), the weights."""
        sets = [next(iter(self.eval_set_images(source, None, name).values())) for name in self.covariate_sets(source)]
        return {"sets": sets, **self.encoder_weights_input()}

    def covariate_embed_sets(self, source: str) -> str:
        return canonical_json({n: self.eval_set_spec(source, n).dataset.to_dict() for n in self.covariate_sets(source)})

    # -----------------------------------------------------------------------------------------
    # conformal evaluation
    # -----------------------------------------------------------------------------------------

    @property
    def _conformal(self) -> dict:
        return self.config["conformal"]

    def conformal_fit_json(self) -> str:
        """What the conformal metric rows read (the figure's and the prediction sets' settings left out)."""
        return canonical_json({k: v for k, v in self._conformal.items() if k not in ("figure", "prediction_sets")})

    def _band_file(self, method: str, n: int, delta: float) -> str:
        c = self._conformal
        return paths.conformal_band(n, delta, method, c["n_mc"], c["seed"])

    def conformal_metric_bands(self) -> list[tuple[str, float, str]]:
        """(method, δ, band file) of the metric rows: every method × δ at the calibration size ``n_cal``."""
        c = self._conformal
        return [(m, d, self._band_file(m, c["calibration"]["n_cal"], d)) for m in c["methods"] for d in c["delta"]]

    def conformal_metric_bands_json(self) -> str:
        return json.dumps(self.conformal_metric_bands())

    def conformal_report_bands_json(self) -> str:
        return json.dumps(self.conformal_report_bands())

    def conformal_report_band_files(self) -> list[str]:
        return sorted({path for _, _, path in self.conformal_report_bands()})

    def conformal_report_bands(self) -> list[tuple[str, int, str]]:
        """(method, n, band file) the report reads, all at the first δ: the figure's ROC band (first method,
        n_cal; the same file as the metric rows') and the band-width panel's (every method × figure.band_sizes)."""
        c = self._conformal
        sizes = [c["calibration"]["n_cal"]] + list(c["figure"]["band_sizes"])
        return [(m, n, self._band_file(m, n, c["delta"][0])) for m in c["methods"] for n in sizes]

    def conformal_band_json(self, n: str, delta: str, method: str, n_mc: str, seed: str) -> str:
        """The settings of the band a ``conformal_band`` job writes (method, n, δ, Monte-Carlo size, seed), looked
        up by its file among the bands the conformal jobs read, so that δ is the config's number and is never
        parsed back from the file name."""
        wanted = paths.conformal_band(n, delta, method, n_mc, seed)
        c = self._conformal
        bands = [(m, c["calibration"]["n_cal"], d, path) for m, d, path in self.conformal_metric_bands()]
        bands += [(m, size, c["delta"][0], path) for m, size, path in self.conformal_report_bands()]
        for m, size, d, path in bands:
            if path == wanted:
                return canonical_json({"method": m, "n": int(size), "delta": float(d), "n_mc": int(c["n_mc"]),
                                       "seed": int(c["seed"])})
        raise ValueError(f"{wanted}: not a band file of the config's conformal section")

    def conformal_groups(self) -> list[str]:
        return self.fit_groups + ([NETWORK_SCORER] if self.network_methods else [])

    def conformal_inputs(self, source: str, model: str) -> dict:
        groups = self.conformal_groups()
        return {"scores": [paths.scores(source, model, g) for g in groups],
                "metrics": [paths.metrics(source, model, g) for g in groups],
                "bands": [path for _, _, path in self.conformal_metric_bands()]}

    def prediction_set_inputs(self, source: str, model: str) -> dict:
        """The feature files of the train and test splits; for the GRAM score also the checkpoint, the GRAM fit
        and the images of the test split (the network runs on them)."""
        inputs = {"train": paths.features(source, model, "train"), "test": paths.features(source, model, "test")}
        if "gram" in self._conformal["prediction_sets"]["scores"]:
            inputs.update(checkpoint=paths.checkpoint(source, model), network_fit=paths.network_fit(source, model),
                          index=paths.dataset_index(self.source_dataset(source)))
        return inputs

    def prediction_set_files(self, source: str) -> list[str]:
        return [paths.prediction_sets(source, m) for m in self.models(source)]

    def conformal_metric_files(self) -> list[str]:
        if not self.enabled("conformal"):
            return []
        return [paths.conformal_metrics(source, str(model)) for source, model in self.iter_models()]

    def conformal_outputs(self) -> list[str]:
        if not self.enabled("conformal"):
            return []
        return ([paths.prediction_sets(source, str(model)) for source, model in self.iter_models()]
                + [paths.figure(f"conformal_{source}.png") for source in self.sources]
                + [paths.table(f"conformal_{name}_{source}.csv") for source in self.sources
                   for name in ("table1", "table2")])

    def conformal_figure_scores(self, source: str) -> str:
        """The scores file of the conformal ROC figure: the source's first model, the fit group of
        ``conformal.figure.csf`` (fit group ``network`` for a network-pass CSF)."""
        return paths.scores(source, self.models(source)[0], self._scores_group(self._conformal["figure"]["csf"]))

    def _scores_group(self, csf: str) -> str:
        """The fit-group slot of the scores file that holds CSF variant ``csf``."""
        return NETWORK_SCORER if csf in self.network_methods else group_of(parse_variant(csf)[1])

    # -----------------------------------------------------------------------------------------
    # pair analyses
    # -----------------------------------------------------------------------------------------

    def gallery_sets_json(self, source: str) -> str:
        """The evaluation sets of a source's rank-gap gallery (the ID test split and its semantic sets)."""
        names = ["test"] + self.semantic_sets(source)
        return canonical_json({"source": self.dataset_spec(self.source_dataset(source)).to_dict(),
                               "val_size": self.config["sources"][source]["val_size"],
                               "sets": [self.eval_set_spec(source, n).to_dict() for n in names]})

    def analysis_inputs(self, source: str) -> dict:
        """The scores and metric rows (fit group none) of a source's models, the indexes of the gallery's datasets
        and, where the proximity stage runs, its embeddings and those of the source's covariate sets."""
        names = [self.source_dataset(source)] + self.semantic_sets(source)
        models = self.models(source)
        inputs = {"scores": [paths.scores(source, m, "none") for m in models],
                  "metrics": [paths.metrics(source, m, "none") for m in models],
                  "indexes": [paths.dataset_index(n) for n in names]}
        if source in self.proximity_sources():
            inputs["embeddings"] = paths.proximity_embeddings(source)
            if self.covariate_sets(source):
                inputs["covariate_embeddings"] = paths.covariate_embeddings(source)
        return inputs

    def analysis_sources(self) -> list[str]:
        if not self.enabled("analyses") or "none" not in self.fit_groups:
            return []
        return self.sources

    def pair_metric_files(self) -> list[str]:
        return [paths.pair_metrics(source) for source in self.analysis_sources()]

    def category_inputs(self) -> list[str]:
        return [paths.analysis_table("categories_long", source) for source in self.analysis_sources()]

    def analysis_outputs(self) -> list[str]:
        sources = self.analysis_sources()
        return [paths.figure(f"pairs_{source}.png") for source in sources] + (
            [paths.category_table("averaged")] if sources else [])

    # -----------------------------------------------------------------------------------------
    # rankings, figures and tables
    # -----------------------------------------------------------------------------------------

    @functools.cache
    def analyses(self) -> tuple[Analysis, ...]:
        return tuple(analyses(self.config))

    def ranking_cells(self) -> list[dict]:
        return [asdict(a) for a in self.analyses()]

    def ranking_files(self, ext: str, **where) -> list[str]:
        """The ranking files (``json`` or ``csv``) of the analyses whose fields match ``where``."""
        cells = [c for c in self.analyses() if all(getattr(c, k) == v for k, v in where.items())]
        return output_paths(paths.rankings_dir(), cells)[ext]

    def audit_inputs(self) -> dict:
        """The files the audit reads besides the results table and the ranking JSONs: every CSF and network-pass
        fit, the feature files of every scored set (their accuracy) and the prediction-set tables."""
        models = list(self.iter_models())
        return {"fits": [paths.csf_fit(s, str(m), g) for s, m in models for g in self.fit_groups],
                "network_fits": [paths.network_fit(s, str(m)) for s, m in models] if self.network_methods else [],
                "features": [paths.features(s, str(m), d) for s, m in models for d in self.scored_datasets(s, m)],
                "prediction_sets": [f for s in self.sources for f in self.prediction_set_files(s)]
                if self.enabled("conformal") else []}

    def source_classes(self) -> dict[str, int]:
        """{source: number of classes}."""
        return {s: int(self.config["sources"][s]["n_classes"]) for s in self.sources}

    def mcd_passes(self) -> dict[str, int]:
        """{backbone: MC-dropout passes} of the backbones whose models run MC dropout (their MCD ranking cells)."""
        return {b: c["mcd_samples"] for b, c in self.config["backbones"].items()
                if 1 in c["dropout"] and c.get("mcd_samples", 0) > 0}

    @property
    def backbones(self) -> list[str]:
        return list(self.config["backbones"])

    def clique_map_inputs(self, backbone: str) -> list[str]:
        """The non-MCD ranking results of one backbone in the top-clique map's metric group."""
        return self.ranking_files("json", group=self.config["figures"]["clique_map_group"], backbone=backbone,
                                  mcd=False)

    def rc_model(self, source: str) -> str:
        """The model whose risk–coverage curves are drawn: ``figures.rc_curves.models``, else the first model."""
        return self.config["figures"]["rc_curves"]["models"].get(source) or self.models(source)[0]

    def rc_shift_types(self, source: str) -> dict[str, str]:
        """The drawn sets of a source's chosen model and their shift types: the test set, then every shifted set."""
        model = self.rc_model(source)
        return {d: self.eval_set_spec(source, d, model).shift_type
                for d in self.eval_datasets(source, model) if d not in ("train", "val")}

    def rc_csfs(self) -> list[str]:
        return list(self.config["figures"]["rc_curves"]["csfs"])

    def rc_inputs(self, source: str) -> list[str]:
        """The scores files the risk–coverage curves of a source read (one per fit-group slot needed)."""
        groups = sorted({self._scores_group(name) for name in self.rc_csfs()})
        return [paths.scores(source, self.rc_model(source), g) for g in groups]

    def rc_title(self, source: str) -> str:
        return f"{source}: {self.rc_model(source)}"

    def figure_targets(self) -> list[str]:
        """The final outputs of the figure rules (for rule all), the Conover heatmap included."""
        return ([paths.figure(f"top_cliques_{b}.png") for b in self.backbones]
                + [paths.figure(f"rc_curves_{s}.png") for s in self.sources]
                + [paths.table(name) for name in TABLES]
                + list(HEATMAP_FILES.values()))

    def heatmap_analysis(self) -> Analysis:
        """The ranking analysis whose Conover p-values the heatmap draws: ``figures.heatmap`` with a null
        ``group`` replaced by ``figures.clique_map_group`` and a null ``backbone`` / ``source`` by the
        config's first one.  The schema's default is the first column of the top-clique map: the clique
        map's group, first backbone, non-MCD, first source, ID ``test`` regime (misclassification); the
        paper's Figure 2 (App. C.1) is that cell for group ``augrc``."""
        figures = self.config["figures"]
        chosen = figures["heatmap"]
        return Analysis(chosen["group"] or figures["clique_map_group"], chosen["backbone"] or self.backbones[0],
                        bool(chosen["mcd"]), chosen["source"] or self.sources[0], chosen["regime"])

    def heatmap_input(self) -> str:
        """The ranking JSON file of :meth:`heatmap_analysis` (an output of the ``rank_csfs`` rule)."""
        return output_paths(paths.rankings_dir(), [self.heatmap_analysis()])["json"][0]

    def weights_loaders(self) -> list[str]:
        """The checkpoints of the models that load a pretrained weights file of the config
        (:func:`csfbench.provenance.weights_key`): rule ``weights_provenance`` records the files' sha256 once
        these are built."""
        return [paths.checkpoint(source, str(mid)) for source, mid in self.iter_models()
                if weights_key(self.config, mid.backbone, mid.paradigm)]

    def all_targets(self) -> dict[str, list[str]]:
        """The inputs of rule ``all``: every final output of the config's stages."""
        return {"features": self.feature_files(), "metrics": self.metric_files(),
                "results": [paths.results_table()], "projnorm": self.projnorm_outputs(),
                "rankings": [paths.ranking_summary()], "figures": self.figure_targets(),
                "nc_tables": self.nc_tables(), "proximity_tables": self.proximity_outputs(),
                "conformal": self.conformal_outputs(), "analyses": self.analysis_outputs(),
                "weights": [paths.weights_record()] if self.weights_loaders() else [],
                "audit": [paths.audit_table()], "reproduction": [paths.reproduction_table()]}

    # -----------------------------------------------------------------------------------------
    # resources
    # -----------------------------------------------------------------------------------------

    def resource(self, rule: str, key: str):
        """A resource setting of a rule (config ``resources``, keyed by rule name; defaults in the schema)."""
        return self.config["resources"][rule][key]
