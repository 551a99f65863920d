"""Sources without a labelled train split and meaningless analysis pairs: each is now a ConfigError before the DAG.

Probes (the behaviour before the fix):

- an image folder (one unlabelled split) as a source's dataset: ``csfbench validate`` said valid; the run failed
  after ~1.5 min with ``ValueError: CSF fit: the train split has unlabelled samples``, naming no key or dataset.
  The other datasets without a labelled train split (an image list with one list, class folders, a corruption
  set, an ICONIC-444 OOD list) were accepted as well;
- ``analyses.pairs`` with a semantic set in the ID role: valid; the job wrote 99 meaningless rows
  (``incorrect_vs_ood`` = ``newclass`` = ``shiftdetect``);
- ``analyses.pairs`` naming an OOD set that no source evaluates: valid; the pair was dropped with no row and no
  log line.
"""
from __future__ import annotations

import copy

import pytest

from csfbench.errors import ConfigError
from csfbench.workflow.settings import load_yaml, validate_config
from tests.helpers.repo import REPO

MICRO = load_yaml(REPO / "tests/config/micro.yaml")


def _edited(edit) -> dict:
    config = copy.deepcopy(MICRO)
    edit(config)
    return config


def refused(edit) -> ConfigError:
    """The ConfigError of the micro config changed by ``edit`` (a function of the config)."""
    with pytest.raises(ConfigError) as err:
        validate_config(_edited(edit), "probe")
    return err.value


def accepted(edit) -> dict:
    return validate_config(_edited(edit), "probe")


# ---- a source's dataset needs a labelled train split and a test split -----------------------------------------

def source_dataset(entry: dict):
    """An edit that makes ``entry`` (a catalogue entry) the dataset of the micro config's source."""
    def edit(config):
        config["datasets"]["mine"] = entry
        config["sources"]["demo10"]["dataset"] = "mine"
    return edit


@pytest.mark.parametrize("entry, why", [
    ({"format": "image_folder", "path": "photos"}, "one unlabelled split"),
    ({"format": "wnid_folders", "path": "ninco"}, "one unlabelled split"),
    ({"format": "wnid_folders", "path": "imagenet-r", "options": {"wnids": "wnids.txt"}}, "one split"),
    ({"format": "imglist", "path": "openood", "options": {"imglist": "test_tin.txt"}}, "one split"),
    ({"format": "imglist", "path": "openood", "options": {"imglist": {"test": "test_cifar10.txt"}}},
     "no train split"),
    ({"format": "cifar_c", "path": "CIFAR-10-C", "options": {"corruption": "fog", "severity": 3}},
     "no train split"),
    ({"format": "imagenet_c", "path": "imagenet-c", "options": {"corruption": "fog", "severity": 3}},
     "no train split"),
    ({"format": "iconic444", "path": "iconic", "options": {"task": "wheat", "ood": "far"}},
     "no train split"),
])
def test_a_source_without_a_labelled_train_split_is_refused(entry, why):
    err = refused(source_dataset(entry))
    assert err.key_path == "sources/demo10/dataset"
    message = str(err)
    assert "labelled train split" in message and why in message and entry["format"] in message
    for offered in ("cifar10", "npy", "imagenet", "imglist: {train: list, test: list}"):  # what does provide one
        assert offered in message
    assert "'mine'" in message


@pytest.mark.parametrize("entry", [
    {"format": "cifar10", "path": "cifar-10-batches-py"},
    {"format": "imagenet", "path": "ILSVRC"},
    {"format": "iconic444", "path": "iconic", "options": {"task": "wheat"}},
    {"format": "imglist", "path": "openood",
     "options": {"imglist": {"train": "train_cifar10.txt", "test": "test_cifar10.txt"}}},
])
def test_a_source_with_a_labelled_train_split_is_accepted(entry):
    accepted(source_dataset(entry))


def test_an_unlabelled_set_is_still_an_evaluation_set():
    def edit(config):
        config["datasets"]["lsun"] = {"format": "image_folder", "path": "lsun"}
        config["sources"]["demo10"]["ood"]["lsun"] = {"shift_type": "semantic", "regime": "far"}
    accepted(edit)


# ---- analyses.pairs: the ID role is the ID test split or a covariate set; the OOD role a set the source evaluates

def pairs(*pairs_: tuple[str, str], more=None):
    """An edit that sets ``analyses.pairs`` to ``pairs_`` ((ID role, OOD role)), after ``more`` (another edit)."""
    def edit(config):
        if more is not None:
            more(config)
        config["analyses"]["pairs"] = [{"id": i, "ood": o} for i, o in pairs_]
    return edit


def test_a_semantic_set_in_the_id_role_is_refused():
    err = refused(pairs(("test", "near"), ("near", "noise")))
    assert err.key_path == "analyses/pairs/1/id"
    message = str(err)
    assert "'test'" in message and "covariate set of source 'demo10'" in message
    assert "corrupt-contrast-1" in message  # the covariate sets it evaluates
    assert "'near'" in message and "semantic" in message


def test_an_ood_set_no_source_evaluates_is_refused():
    err = refused(pairs(("test", "digits")))  # in the catalogue, not among demo10's evaluation sets
    assert err.key_path == "analyses/pairs/0/ood"
    message = str(err)
    assert "sources/<name>/ood" in message and "source 'demo10': ['near', 'noise', 'corrupt-contrast-1'" in message
    assert "'digits'" in message and "no source evaluates it" in message


def test_an_id_set_that_no_source_of_the_ood_set_evaluates_is_refused():
    def covariate_photos(config):
        config["sources"]["demo10"]["ood"]["photos"] = {"shift_type": "covariate"}
    accepted(pairs(("photos", "near"), more=covariate_photos))
    err = refused(pairs(("digits", "near"), more=covariate_photos))
    assert err.key_path == "analyses/pairs/0/id"
    assert "'photos'" in str(err) and "'digits'" in str(err)


def test_a_set_against_itself_and_an_adversarial_ood_set_are_refused():
    err = refused(pairs(("corrupt-contrast-1", "corrupt-contrast-1")))
    assert err.key_path == "analyses/pairs/0/ood" and "other than the ID-role set" in str(err)

    def adversarial(config):
        config["sources"]["demo10"]["ood"]["photos"] = {"shift_type": "adversarial"}
    err = refused(pairs(("test", "photos"), more=adversarial))
    assert err.key_path == "analyses/pairs/0/ood" and "adversarial" in str(err)


def test_pairs_of_covariate_and_semantic_sets_are_accepted():
    config = accepted(pairs(("test", "near"), ("corrupt-contrast-1", "noise"), ("test", "corrupt-contrast-5"),
                            ("corrupt-contrast-1", "corrupt-contrast-5")))
    assert len(config["analyses"]["pairs"]) == 4


def test_a_pair_needs_one_source_that_evaluates_it_and_a_meaningful_role_in_every_one():
    def second_source(config):
        config["sources"]["other"] = {**copy.deepcopy(config["sources"]["demo10"]),
                                      "ood": {"digits": {"shift_type": "semantic"},
                                              "near": {"shift_type": "covariate"}}}
    accepted(pairs(("test", "digits"), more=second_source))  # 'other' evaluates digits; demo10 does not
    accepted(pairs(("near", "digits"), more=second_source))  # only 'other' holds both: near is covariate there
    err = refused(pairs(("near", "noise"), more=second_source))  # only demo10 holds both: near is semantic there
    assert err.key_path == "analyses/pairs/0/id" and "source 'demo10'" in str(err)

    def both_hold_it(config):
        second_source(config)
        config["sources"]["other"]["ood"]["noise"] = {"shift_type": "semantic"}
    err = refused(pairs(("near", "noise"), more=both_hold_it))  # meaningful in 'other', not in demo10
    assert err.key_path == "analyses/pairs/0/id" and "source 'demo10'" in str(err)
