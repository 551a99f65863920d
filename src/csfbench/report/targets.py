"""File targets of the ranking and figure rules (``rules/ranking.smk``, ``rules/figures.smk``), from the config."""
from __future__ import annotations

from csfbench import config as cfg
from csfbench.aggregate.ranking import analyses, output_paths
from csfbench.report.figures import figure_settings, group_of, parse_variant

RANKING_DIR = "results/tables/rankings"
TABLES = ["results/tables/clique_layers.csv", "results/tables/table2_best.csv",
          "results/tables/table8_selected_dropout.csv", "results/tables/table10_selected_reward.csv"]


def ranking_files(config: dict, ext: str, **where) -> list[str]:
    """The ranking files (``json`` or ``csv``) of the analyses whose fields match ``where``."""
    cells = [c for c in analyses(config) if all(getattr(c, k) == v for k, v in where.items())]
    return output_paths(RANKING_DIR, cells)[ext]


def clique_map_inputs(config: dict, backbone: str) -> list[str]:
    """The non-MCD ranking results of one backbone in the top-clique map's metric group."""
    group = figure_settings(config.get("figures"))["clique_map_group"]
    files = ranking_files(config, "json", group=group, backbone=backbone, mcd=False)
    if not files:
        raise ValueError(f"figures.clique_map_group: '{group}' is not a ranking metric group")
    return files


def rc_model(config: dict, source: str) -> str:
    """The model whose risk–coverage curves are drawn: ``figures.rc_curves.models``, else the first model."""
    chosen = figure_settings(config.get("figures"))["rc_curves"]["models"].get(source)
    return chosen or str(cfg.model_ids(config, source)[0])


def rc_shift_types(config: dict, source: str) -> dict[str, str]:
    """The drawn sets of a source's chosen model and their shift types: the test set, then every shifted set."""
    model = rc_model(config, source)
    return {d: cfg.eval_set_spec(config, source, d, model)["shift_type"]
            for d in cfg.eval_datasets(config, source, model) if d not in ("train", "val")}


def rc_inputs(config: dict, source: str) -> list[str]:
    """The scores files the risk–coverage curves of a source read."""
    csfs = figure_settings(config.get("figures"))["rc_curves"]["csfs"]
    groups = sorted({group_of(parse_variant(name)[1]) for name in csfs})
    missing = sorted(set(groups) - set(config["csf"]["groups"]))
    if missing:
        raise ValueError(f"figures.rc_curves.csfs: the projection group(s) {missing} are not in csf.groups")
    model = rc_model(config, source)
    return [f"results/scores/{source}/{model}/{g}/{d}.h5" for g in groups for d in rc_shift_types(config, source)]


def figure_targets(config: dict) -> list[str]:
    """The final outputs of the figure rules (for rule all)."""
    return ([f"results/figures/top_cliques_{b}.png" for b in config["backbones"]]
            + [f"results/figures/rc_curves_{s}.png" for s in config["sources"]] + TABLES)
