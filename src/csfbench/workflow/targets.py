"""File targets of the ranking and figure rules (``rules/ranking.smk``, ``rules/figures.smk``) from the
validated config."""
from __future__ import annotations

from csfbench.workflow import grid, paths
from csfbench.aggregate.ranking import REGIMES, Analysis, analyses, output_paths
from csfbench.report.figures import figure_settings, group_of, parse_variant

#: the tables the figure rules write (CSV; the LaTeX twins are written beside them)
TABLES = ("clique_layers.csv", "table2_best.csv", "table8_selected_dropout.csv", "table10_selected_reward.csv")
#: the files of the ``conover_heatmap`` rule (figure as PNG and PDF, p-value matrix as CSV)
HEATMAP_FILES = {"png": paths.figure("conover_heatmap.png"), "pdf": paths.figure("conover_heatmap.pdf"),
                 "csv": paths.table("conover_heatmap.csv")}


def ranking_files(config: dict, ext: str, **where) -> list[str]:
    """The ranking files (``json`` or ``csv``) of the analyses whose fields match ``where``."""
    cells = [c for c in analyses(config) if all(getattr(c, k) == v for k, v in where.items())]
    return output_paths(paths.rankings_dir(), cells)[ext]


def clique_map_inputs(config: dict, backbone: str) -> list[str]:
    """The non-MCD ranking results of one backbone in the top-clique map's metric group."""
    group = config["figures"]["clique_map_group"]
    files = ranking_files(config, "json", group=group, backbone=backbone, mcd=False)
    if not files:
        raise ValueError(f"figures.clique_map_group: '{group}' is not a ranking metric group")
    return files


def rc_model(config: dict, source: str) -> str:
    """The model whose risk–coverage curves are drawn: ``figures.rc_curves.models``, else the first model."""
    chosen = config["figures"]["rc_curves"]["models"].get(source)
    return chosen or str(grid.model_ids(config, source)[0])


def rc_shift_types(config: dict, source: str) -> dict[str, str]:
    """The drawn sets of a source's chosen model and their shift types: the test set, then every shifted set."""
    model = rc_model(config, source)
    return {d: grid.eval_set_spec(config, source, d, model).shift_type
            for d in grid.eval_datasets(config, source, model) if d not in ("train", "val")}


def rc_inputs(config: dict, source: str) -> list[str]:
    """The scores files the risk–coverage curves of a source read (one per fit group needed; a CSF of
    ``network_csf.methods`` reads the scores file of fit group ``network``)."""
    csfs = config["figures"]["rc_curves"]["csfs"]
    network = [name for name in csfs if name in config["network_csf"]["methods"]]
    groups = sorted({group_of(parse_variant(name)[1]) for name in csfs if name not in network})
    missing = sorted(set(groups) - set(config["csf"]["groups"]))
    if missing:
        raise ValueError(f"figures.rc_curves.csfs: the fit group(s) {missing} are not in csf.groups")
    groups += [paths.NETWORK_GROUP] if network else []
    return [paths.scores(source, rc_model(config, source), g) for g in groups]


def conformal_figure_scores(config: dict, source: str) -> str:
    """The scores file of the conformal ROC figure: the source's first model, the fit group of
    ``conformal.figure.csf`` (fit group ``network`` for a network-pass CSF)."""
    csf = config["conformal"]["figure"]["csf"]
    group = paths.NETWORK_GROUP if csf in config["network_csf"]["methods"] else group_of(parse_variant(csf)[1])
    if group != paths.NETWORK_GROUP and group not in config["csf"]["groups"]:
        raise ValueError(f"conformal.figure.csf: {csf!r} needs the fit group {group!r}, which is not in csf.groups")
    return paths.scores(source, str(grid.model_ids(config, source)[0]), group)


def figure_targets(config: dict) -> list[str]:
    """The final outputs of the figure rules (for rule all), the Conover heatmap included."""
    return ([paths.figure(f"top_cliques_{b}.png") for b in config["backbones"]]
            + [paths.figure(f"rc_curves_{s}.png") for s in config["sources"]]
            + [paths.table(name) for name in TABLES]
            + heatmap_targets())


def heatmap_analysis(config: dict) -> Analysis:
    """The ranking analysis whose Conover p-values the heatmap draws: ``figures.heatmap`` with a null
    ``group`` replaced by ``figures.clique_map_group`` and a null ``backbone`` / ``source`` by the
    config's first one. The schema's default is the first column of the top-clique map: the clique map's
    group (``rc``), first backbone, non-MCD, first source, ID ``test`` regime (misclassification); the
    paper's Figure 2 (App. C.1) is that cell for group ``augrc``. A cell the config does not rank is an
    error naming the setting."""
    settings = figure_settings(config["figures"])
    chosen = settings["heatmap"]
    cell = Analysis(chosen["group"] or settings["clique_map_group"],
                    chosen["backbone"] or next(iter(config["backbones"])), bool(chosen["mcd"]),
                    chosen["source"] or next(iter(config["sources"])), chosen["regime"])
    if cell not in analyses(config):
        raise ValueError(
            f"figures.heatmap: the config ranks no analysis {cell.name} (metric groups "
            f"{sorted(config['ranking']['metric_groups'])}, backbones {list(config['backbones'])}, sources "
            f"{list(config['sources'])}, regimes {list(REGIMES)}; mcd only for a backbone with dropout models "
            "and mcd_samples > 0)")
    return cell


def heatmap_input(config: dict) -> str:
    """The ranking JSON file of :func:`heatmap_analysis` (an output of the ``rank_csfs`` rule)."""
    return output_paths(paths.rankings_dir(), [heatmap_analysis(config)])["json"][0]


def heatmap_targets() -> list[str]:
    """The files of the ``conover_heatmap`` rule (figure as PNG and PDF, p-value matrix as CSV)."""
    return [HEATMAP_FILES["png"], HEATMAP_FILES["pdf"], HEATMAP_FILES["csv"]]
