"""The ``ensembles`` section: each entry declares deep ensembles over runs of the configurations of one backbone,
resolved here into :class:`csfbench.workflow.ids.EnsembleId` per source (the grid's ensembles) and checked against
the grid's models (the settings' check): an ensemble only combines runs the grid already trains and scores, so
adding one never retrains or re-extracts a member."""
from __future__ import annotations

from csfbench.errors import ConfigError, did_you_mean
from csfbench.workflow.configurations import rewards, serves
from csfbench.workflow.ids import EnsembleId


def entry_ensembles(config: dict, index: int, source: str) -> list[EnsembleId]:
    """The ensembles that entry ``index`` of ``ensembles`` declares for ``source``: one per configuration
    (paradigm × dropout × reward) of its backbone that it selects, over its ``runs`` (null: every run of the
    backbone), in grid order; none where the entry's ``sources`` or the backbone's leave the source out."""
    entry = config["ensembles"][index]
    bcfg = config["backbones"][entry["backbone"]]
    if not serves(bcfg, source) or (entry["sources"] is not None and source not in entry["sources"]):
        return []
    runs = tuple(sorted(int(r) for r in (entry["runs"] if entry["runs"] is not None else bcfg["runs"])))
    return [EnsembleId(entry["backbone"], paradigm, int(dropout), reward, runs)
            for paradigm in (entry["paradigms"] or bcfg["paradigms"])
            for dropout in (entry["dropout"] if entry["dropout"] is not None else bcfg.get("dropout", [0]))
            for reward in rewards(config, source, paradigm)]


def source_ensembles(config: dict, source: str) -> tuple[EnsembleId, ...]:
    """Every ensemble of ``source``, in the order of the entries."""
    return tuple(e for index in range(len(config["ensembles"])) for e in entry_ensembles(config, index, source))


def check_ensembles(config: dict, origin: str) -> None:
    """Each entry names a backbone of the config, and paradigms, dropout settings, runs and sources that it has;
    ``pretrained`` classifiers (every run is the same weights file) cannot be ensembled; an ensemble has at least
    two members; two entries may not declare the same ensemble.  ConfigError naming the entry's key."""
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(config["ensembles"]):
        key = f"ensembles/{index}"
        backbones = config["backbones"]
        if entry["backbone"] not in backbones:
            raise ConfigError(f"{key}/backbone", f"a backbone of {sorted(backbones)}"
                              f"{did_you_mean(entry['backbone'], backbones)}", entry["backbone"], origin)
        bcfg = backbones[entry["backbone"]]
        for name, have in (("paradigms", bcfg["paradigms"]), ("dropout", bcfg.get("dropout", [0])),
                           ("runs", bcfg["runs"]), ("sources", bcfg.get("sources") or list(config["sources"]))):
            unknown = [v for v in entry[name] or [] if v not in have]
            if unknown:
                raise ConfigError(f"{key}/{name}", f"{name} of backbone {entry['backbone']!r}: some of {have}",
                                  unknown, origin)
        if "pretrained" in (entry["paradigms"] or bcfg["paradigms"]):
            raise ConfigError(f"{key}/paradigms", "paradigms other than 'pretrained' (its runs are the same weights "
                              "file: an ensemble of them is one model)", entry["paradigms"] or bcfg["paradigms"],
                              origin)
        runs = entry["runs"] if entry["runs"] is not None else bcfg["runs"]
        if len(runs) < 2:
            raise ConfigError(f"{key}/runs", f"at least two runs (backbone {entry['backbone']!r} has runs "
                              f"{bcfg['runs']})", runs, origin)
        for source in config["sources"]:
            for ensemble in entry_ensembles(config, index, source):
                first = seen.setdefault((source, str(ensemble)), index)
                if first != index:
                    raise ConfigError(key, f"ensembles other than those of ensembles/{first}", str(ensemble), origin)


__all__ = ["check_ensembles", "entry_ensembles", "rewards", "source_ensembles"]
