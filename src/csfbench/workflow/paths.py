"""Every file the workflow writes under ``results/``: one function per kind of file.

A function called without arguments returns the Snakemake pattern (with ``{wildcards}``); called with
values it returns the concrete path.  Rules (through ``rules/common.smk``), jobs, the manifest and
the report all take their paths from here, so the layout is written in exactly one place.  The
layout itself is described in docs/design.md.
"""
from __future__ import annotations

import os

RESULTS = "results"

# wildcard names: a source (ID training set), a model id, an evaluation set, a catalogue dataset,
# a scorer (a CSF fit group none / global / class, or csfbench.csf.projection.NETWORK_SCORER), a backbone
_S, _M, _D, _N, _G, _B = "{source}", "{model}", "{dataset}", "{name}", "{fit_group}", "{backbone}"


# ---- data
def dataset_index(name: str = _N) -> str:
    return f"{RESULTS}/data/index/{name}.json"


def corruption_set_folder(source: str = _S, dataset: str = _D) -> str:
    """Folder of a generated corruption set (npy layout: ``{folder}/test/images.npy``)."""
    return f"{RESULTS}/data/shifts/{source}/{dataset}"


def adversarial_set_folder(source: str = _S, model: str = _M, dataset: str = _D) -> str:
    """Folder of a model's generated adversarial set (npy layout)."""
    return f"{RESULTS}/data/adversarial/{source}/{model}/{dataset}"


def npy_file(folder: str, array: str) -> str:
    """``images`` or ``labels`` of a generated set's test split."""
    return f"{folder}/test/{array}.npy"


# ---- models
def checkpoint(source: str = _S, model: str = _M) -> str:
    return f"{RESULTS}/models/{source}/{model}/checkpoint.pt"


def training_history(source: str = _S, model: str = _M) -> str:
    return f"{RESULTS}/models/{source}/{model}/history.csv"


def pretrain_history() -> str:
    return f"{RESULTS}/models/pretrain/history.csv"


def weights_record() -> str:
    """The sha256 of every pretrained weights file the models loaded (csfbench.provenance.weights_provenance)."""
    return f"{RESULTS}/models/weights.json"


# ---- features, CSF fits, scores, metrics
def features(source: str = _S, model: str = _M, dataset: str = _D) -> str:
    return f"{RESULTS}/features/{source}/{model}/{dataset}.h5"


def csf_fit(source: str = _S, model: str = _M, fit_group: str = _G) -> str:
    return f"{RESULTS}/csf/{source}/{model}/{fit_group}/fit.h5"


def scores(source: str = _S, model: str = _M, fit_group: str = _G) -> str:
    """Per-sample confidences of every evaluation set of one (model, fit group)."""
    return f"{RESULTS}/scores/{source}/{model}/{fit_group}.h5"


def metrics(source: str = _S, model: str = _M, fit_group: str = _G) -> str:
    """Metric rows of every evaluation set of one (model, fit group)."""
    return f"{RESULTS}/metrics/{source}/{model}/{fit_group}.parquet"


# ---- CSFs that need the network (rules/network_csf.smk): their scores and metric rows take the fit-group


def network_fit(source: str = _S, model: str = _M) -> str:
    """Fitted state of a model's network-pass CSFs (GRAM bounds, ODIN's tuned T and ε)."""
    return f"{RESULTS}/network_csf/{source}/{model}/fit.h5"


# ---- conformal evaluation (rules/conformal.smk)
def conformal_band(n="{n}", delta="{delta}", method="{method}", n_mc="{n_mc}", seed="{seed}") -> str:
    """A correction band b_1..b_n (``.npy``), one file per key (n, δ, method, Monte-Carlo size, seed)."""
    return f"{RESULTS}/conformal/bands/{method}_n{n}_delta{delta}_mc{n_mc}_seed{seed}.npy"


def conformal_metrics(source: str = _S, model: str = _M) -> str:
    """Metric rows of scheme ``conformal`` of every CSF variant of a model (all fit groups)."""
    return f"{RESULTS}/metrics/{source}/{model}/conformal.parquet"


def prediction_sets(source: str = _S, model: str = _M) -> str:
    """Mean set size and coverage of a model's conformal prediction sets per score, method and α."""
    return f"{RESULTS}/conformal/{source}/{model}/prediction_sets.parquet"


# ---- pair analyses (rules/analyses.smk)
def analysis_table(name: str, source: str = _S) -> str:
    """A table of a source's pair analyses (``decomposition``, ``pair_grid``, ``frr``, ``random_check``,
    ``distance``, ``distance_overlap``, ``categories_long``; CSV)."""
    return f"{RESULTS}/tables/analyses/{name}_{source}.csv"


def pair_metrics(source: str = _S) -> str:
    """The metric rows of a source's pairs (the pair analyses' schemes per ID-role / OOD-role set; parquet)."""
    return f"{RESULTS}/metrics/{source}/pairs.parquet"


def category_table(view: str) -> str:
    """ICONIC-444's per-category table over every source (``view``: ``averaged`` or ``pooled``; CSV)."""
    return f"{RESULTS}/tables/analyses/categories_{view}.csv"


def pair_rankings(source: str = _S) -> str:
    """The CSFs' cliques over (model, pair) blocks of a source (JSON)."""
    return f"{RESULTS}/tables/analyses/pair_rankings_{source}.json"


# ---- geometry, proximity
def nc_records(source: str = _S, model: str = _M) -> str:
    return f"{RESULTS}/geometry/{source}/{model}/nc.csv"


def nc_table(source: str = _S, ext: str = "{ext}") -> str:
    return f"{RESULTS}/tables/nc_{source}.{ext}"


def proximity_embeddings(source: str = _S) -> str:
    return f"{RESULTS}/proximity/{source}/embeddings.h5"


def covariate_embeddings(source: str = _S) -> str:
    """The encoder embeddings of a source's covariate sets (rule covariate_embed), beside the proximity stage's."""
    return f"{RESULTS}/proximity/{source}/covariate_embeddings.h5"


def proximity_regimes(source: str = _S) -> str:
    return f"{RESULTS}/proximity/{source}/regimes.csv"


def proximity_table(source: str = _S, ext: str = "{ext}") -> str:
    return f"{RESULTS}/tables/proximity_{source}.{ext}"


# ---- ProjNorm
def projnorm_reference(source: str = _S, model: str = _M) -> str:
    return f"{RESULTS}/projnorm/{source}/{model}/reference.safetensors"


def projnorm_result(source: str = _S, model: str = _M, dataset: str = _D) -> str:
    return f"{RESULTS}/projnorm/{source}/{model}/{dataset}.json"


def projnorm_table(source: str = _S, name: str = _N) -> str:
    """``{name}`` ∈ per_set.csv, correlations.csv, stress.csv, stress_mse.csv, rows.parquet."""
    return f"{RESULTS}/tables/projnorm/{source}_{name}"


def projnorm_scatter(source: str = _S) -> str:
    return f"{RESULTS}/figures/projnorm/{source}_scatter.png"


# ---- aggregation, rankings, report
def results_table() -> str:
    return f"{RESULTS}/results.parquet"


def selected_configurations() -> str:
    return f"{RESULTS}/tables/selected_configurations.csv"


def rankings_dir() -> str:
    return f"{RESULTS}/tables/rankings"


def ranking_summary() -> str:
    return f"{rankings_dir()}/summary.csv"


def clique_stability() -> str:
    """The clique stability table: every CSF variant's top-clique share and mean layer over bootstrap replicates."""
    return f"{rankings_dir()}/clique_stability.csv"


def ensemble_ranking() -> str:
    """Every deep ensemble ranked beside its members (csfbench.aggregate.ensemble_ranking; CSV)."""
    return f"{rankings_dir()}/ensembles.csv"


def ranked_sets() -> str:
    """The ranking coverage table: every evaluation set × the cells of its source and regime, ranked or why not."""
    return f"{rankings_dir()}/ranked_sets.csv"


def reproduction_table() -> str:
    """The reproduction certificate (csfbench.reproduction): every published target, obtained value and verdict."""
    return f"{RESULTS}/tables/reproduction.csv"


def audit_table() -> str:
    """The self-audit of the run (csfbench.audit): one row per finding with its cause and remedy (CSV)."""
    return f"{RESULTS}/tables/audit.csv"


def table_view(table_csv: str | os.PathLike) -> str:
    """The report's view of a table (csfbench.report.tables.write_table): an HTML page beside the table's CSV
    ``table_csv`` (a path or a pattern), of the same name with ``.html`` for its extension."""
    return os.path.splitext(os.fspath(table_csv))[0] + ".html"


def table(name: str) -> str:
    """A table of the report (``name`` with its extension)."""
    return f"{RESULTS}/tables/{name}"


def figure(name: str) -> str:
    """A figure of the report (``name`` with its extension)."""
    return f"{RESULTS}/figures/{name}"


def report() -> str:
    return f"{RESULTS}/report.html"


# ---- per-job logs and benchmarks: results/{logs,benchmarks}/{stage}/{job}.{log,tsv}
def log(stage: str, job: str) -> str:
    return f"{RESULTS}/logs/{stage}/{job}.log"


def benchmark(stage: str, job: str) -> str:
    return f"{RESULTS}/benchmarks/{stage}/{job}.tsv"


#: result files the manifest hashes, as glob patterns relative to the results folder
MANIFEST_PATTERNS = (
    "models/**/checkpoint.pt", "models/**/history.csv", "pretrained/*.safetensors", "features/**/*.h5",
    "csf/**/fit.h5", "scores/**/*.h5", "metrics/**/*.parquet", "results.parquet", "tables/**/*",
    "data/shifts/**/*.npy", "data/adversarial/**/*.npy", "geometry/**/*.csv", "proximity/**/*",
    "projnorm/**/*", "network_csf/**/*.h5", "conformal/**/*",
)
