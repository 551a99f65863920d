"""The typed config sections of the stages (csfbench.workflow.sections): built from the validated config, they give
back its mapping and their JSON round-trips; a missing or unknown key is an error naming the section; and each
section's fields are the schema's keys, so that a key added to the schema fails here, not in a job."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import MISSING, fields

import pytest

from csfbench.errors import ConfigError
from csfbench.workflow import sections
from csfbench.workflow.sections import (AnalysisPair, Analyses, Conformal, ConformalFit, CorrectionBand, NetworkCsf,
                                        NetworkCsfFit, PredictionSets, Projnorm, SectionKeyError)
from csfbench.workflow.settings import load_config, schema

from tests.helpers.repo import REPO

#: the top-level sections and the config key each is built from
TOP = {Conformal: "conformal", Analyses: "analyses", Projnorm: "projnorm", NetworkCsf: "network_csf"}


@pytest.fixture(scope="module")
def config():
    config = load_config(REPO / "config" / "paper.yaml")
    config["analyses"]["pairs"] = [{"id": "test", "ood": "a"}, {"id": "b", "ood": "c", "schemes": ["newclass"]}]
    return config


def _section_classes():
    return [c for c in vars(sections).values()
            if isinstance(c, type) and issubclass(c, sections.Section) and c is not sections.Section]


def _schema_node(path: str) -> dict:
    node = {"properties": schema()["properties"]}
    for key in path.split("/"):
        node = node["items"] if key == "*" else node["properties"][key]
    return node


@pytest.mark.parametrize("cls", list(TOP), ids=lambda c: c.__name__)
def test_a_section_gives_back_the_validated_config_and_round_trips_through_json(config, cls):
    data = config[TOP[cls]]
    section = cls.from_dict(data)
    assert section.to_dict() == json.loads(json.dumps(data))
    assert cls.from_json(section.to_json()) == section
    assert cls.from_param(section.to_json()) == cls.from_param(data) == section
    assert section.to_json() == json.dumps(data, sort_keys=True)  # the rules' canonical JSON


def test_nested_parts_are_sections_and_arrays_are_tuples(config):
    conformal = Conformal.from_dict(config["conformal"])
    assert isinstance(conformal.prediction_sets, PredictionSets) and conformal.prediction_sets.raps.k_reg == 1
    assert isinstance(conformal.delta, tuple)
    assert conformal.calibration.n_cal == config["conformal"]["calibration"]["n_cal"]
    pairs = Analyses.from_dict(config["analyses"]).pairs
    assert pairs == (AnalysisPair("test", "a", None), AnalysisPair("b", "c", ("newclass",)))
    assert hash(conformal) == hash(Conformal.from_json(conformal.to_json()))


def test_the_parts_a_rule_cuts_from_a_section_are_sections_of_their_own(config):
    """conformal_metrics reads the section without figure and prediction_sets, fit_network_csf the network
    section without its batch size: each is the base class of the full section."""
    cut = {k: v for k, v in config["conformal"].items() if k not in ("figure", "prediction_sets")}
    assert ConformalFit.from_dict(cut).to_dict() == cut and issubclass(Conformal, ConformalFit)
    network = {k: v for k, v in config["network_csf"].items() if k != "batch_size"}
    assert NetworkCsfFit.from_dict(network).to_dict() == network and issubclass(NetworkCsf, NetworkCsfFit)
    with pytest.raises(SectionKeyError, match=r"'conformal': unknown key\(s\) \['figure', 'prediction_sets'\]"):
        ConformalFit.from_dict(config["conformal"])


def test_a_missing_or_unknown_key_names_the_section_and_its_keys(config):
    data = dict(config["projnorm"])
    del data["lr"]
    with pytest.raises(SectionKeyError, match=r"config section 'projnorm': missing key\(s\) \['lr'\]") as err:
        Projnorm.from_dict(data)
    assert isinstance(err.value, ConfigError) and err.value.found == {"missing": ["lr"], "unknown": []}
    with pytest.raises(SectionKeyError, match=r"'conformal/calibration': unknown key\(s\) \['size'\]"):
        Conformal.from_dict({**config["conformal"], "calibration": {**config["conformal"]["calibration"], "size": 1}})
    with pytest.raises(SectionKeyError, match=r"'analyses/pairs/\*': missing key\(s\) \['ood'\]"):
        Analyses.from_dict({**config["analyses"], "pairs": [{"id": "test"}]})
    with pytest.raises(ConfigError, match="'conformal/delta': expected a list"):
        Conformal.from_dict({**config["conformal"], "delta": 0.05})


def test_every_section_has_exactly_the_schema_keys():
    for cls in _section_classes():
        if cls is CorrectionBand:  # a rule param, not a config section
            continue
        keys = set(_schema_node(cls.PATH)["properties"])
        if cls is ConformalFit:
            keys -= {"figure", "prediction_sets"}
        if cls is NetworkCsfFit:
            keys -= {"batch_size"}
        assert {f.name for f in fields(cls)} == keys, cls.__name__
        assert all(f.default is MISSING and f.default_factory is MISSING for f in fields(cls)), cls.__name__


def test_a_band_key_round_trips_with_delta_as_a_number():
    band = CorrectionBand.from_param({"method": "dkwm", "n": 200, "delta": 0.05, "n_mc": 10000, "seed": 0})
    assert CorrectionBand.from_json(band.to_json()) == band and band.delta == 0.05
    with pytest.raises(SectionKeyError, match=r"missing key\(s\) \['seed'\]"):
        CorrectionBand.from_json('{"method": "dkwm", "n": 200, "delta": 0.05, "n_mc": 10000}')


def test_the_sections_import_only_the_standard_library():
    code = ("import sys; import csfbench.workflow.sections; "
            "print(sorted(m for m in ('numpy', 'pandas', 'yaml', 'jsonschema', 'h5py') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
