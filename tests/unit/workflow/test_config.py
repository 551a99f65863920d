import copy

import pytest

from csfbench.errors import ConfigError
from csfbench.workflow.grid import Grid
from csfbench.workflow.ids import MODEL_PATTERN, ModelId
from csfbench.workflow.settings import load_config, schema_default, validate_config
from tests.helpers.demo_config import edited


@pytest.fixture(scope="module")
def demo(repo):
    return load_config(repo / "config/config.yaml")


@pytest.fixture(scope="module")
def paper(repo):
    return load_config(repo / "config/paper.yaml")


def test_paper_grid_counts(paper):
    # per source: ConfidNet 2×5 + DeVries 2×5 + DG 2×|rewards|×5 + ViT 2×5
    expected = {"cifar10": 30 + 40, "supercifar100": 30 + 70, "cifar100": 30 + 70, "tinyimagenet": 30 + 40}
    assert {s: len(Grid(paper).model_ids(s)) for s in paper["sources"]} == expected
    assert len(list(Grid(paper).iter_models())) == 340
    assert all(len(src["ood"]) == 8 for src in paper["sources"].values())


def test_paper_table1_regimes(paper):
    regimes = {s: {d: v["regime"] for d, v in src["ood"].items()} for s, src in paper["sources"].items()}
    assert [d for d, r in regimes["cifar10"].items() if r == "near"] == ["cifar100", "tinyimagenet"]
    assert [d for d, r in regimes["tinyimagenet"].items() if r == "far"] == ["svhn"]
    assert sorted(d for d, r in regimes["cifar100"].items() if r == "far") == ["places365", "textures"]


def test_paper_hyperparameters(paper):
    vit10 = Grid(paper).model_spec("cifar10", "vit_ce_do0_rew0_run1")
    assert vit10.optim["lr"] == 3e-4 and Grid(paper).model_spec("cifar10", "vit_ce_do1_rew0_run1").optim["lr"] == 1e-2
    sc = Grid(paper).model_spec("supercifar100", "vit_ce_do1_rew0_run2")
    assert sc.optim["lr"] == 1e-3 and sc.optim["batch_size"] == 512 and sc.n_classes == 19
    assert sc.image_size == 384 and sc.mcd_samples == 0
    dg = Grid(paper).model_spec("tinyimagenet", "vgg13_dg_do1_rew12_run3")
    assert dg.image_size == 64 and dg.mcd_samples == 50 and dg.paradigm_params["pretrain_epochs"] == 100
    assert dg.optim["lr"] == 0.1 and dg.optim["weight_decay"] == 5e-4


def test_seeds_differ_per_model_and_are_stable(demo):
    seeds = [Grid(demo).model_spec(s, m).seed for s, m in Grid(demo).iter_models()]
    assert len(set(seeds)) == len(seeds)
    assert seeds == [Grid(demo).model_spec(s, m).seed for s, m in Grid(demo).iter_models()]


def test_eval_sets(demo):
    assert Grid(demo).eval_set_spec("demo10", "test").shift_type == "id"
    near = Grid(demo).eval_set_spec("demo10", "near")
    assert near.shift_type == "semantic" and near.regime == "near" and near.dataset.format == "npy"


@pytest.mark.parametrize("text", ["vgg13_dg_do1_rew2.2_run3", "vit_ce_do0_rew0_run1", "vgg13_devries_do0_rew0_run5"])
def test_model_id_round_trip(text):
    import re

    assert str(ModelId.parse(text)) == text
    assert re.fullmatch(MODEL_PATTERN, text)


def test_model_id_rejects_garbage():
    with pytest.raises(ValueError, match="does not match"):
        ModelId.parse("vgg13-dg-run1")


@pytest.mark.parametrize("path, value, fragments", [
    (("sources", "demo10", "n_classes"), "ten", ["sources/demo10/n_classes", "type integer", "'ten'"]),
    (("sources", "demo10", "n_classes"), 1, ["sources/demo10/n_classes", "minimum 2", "1"]),
    (("backbones", "vgg13", "paradigms"), ["dg", "gamblers"], ["backbones/vgg13/paradigms/1", "'confidnet'", "'gamblers'"]),
    (("features", "batch_size"), KeyError, ["features", "batch_size"]),
    (("datasets", "near", "format"), "jpeg-dir", ["datasets/near/format", "'image_folder'", "'jpeg-dir'"]),
    (("seed",), -1, ["seed", "minimum 0", "-1"]),
    (("sources", "demo10", "colour"), "red", ["sources/demo10", "colour"]),
    (("sources", "demo10", "dataset"), "cifar10", ["sources/demo10/dataset", "cifar10"]),
    (("csf", "fixed"), {"KPCA": {"gamma": 0.5}}, ["csf/fixed/KPCA", "'KPCA RecError'", "KPCA"]),
    (("csf", "search_space"), {"nnguide": {"k": [10, 20]}}, ["csf/search_space/nnguide", "'NNGuide'"]),
    (("csf", "tuning", "budgets"), {"KPCA RecErr": {"init_points": 1, "n_iter": 0}},
     ["csf/tuning/budgets/KPCA RecErr", "'projection'"]),
    (("csf", "tuning", "budgets"), {"GEN": {"init_points": 0, "n_iter": 3}},
     ["csf/tuning/budgets/GEN/init_points", "minimum 1"]),
    (("csf", "methods"), ["MSR", "Knn"], ["csf/methods/Knn", "'KNN'", "'Knn'"]),
    (("proximity", "precedence"), "both", ["proximity/precedence", "'both'"]),
    (("proximity", "encoder", "kind"), "clip", ["proximity/encoder", "clip"]),
    (("geometry", "nc", "normalizer"), "papyan2", ["geometry/nc/normalizer", "papyan2"]),
])
def test_invalid_config_names_key_expected_found(demo, path, value, fragments):
    with pytest.raises(ConfigError) as err:
        validate_config(edited(demo, path, value))
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, message


def test_unknown_ood_dataset_is_named(demo):
    config = copy.deepcopy(demo)
    config["sources"]["demo10"]["ood"]["svhn"] = {"shift_type": "semantic", "regime": "mid"}
    with pytest.raises(ConfigError, match="sources/demo10/ood/svhn"):
        validate_config(config)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="existing YAML file"):
        load_config(tmp_path / "nope.yaml")


def test_fit_params_carry_the_resolved_budgets_of_the_group_only(demo):
    """A fit's Snakemake params hold the budgets of its own tuned quantities, with the defaults
    written out: spelling out a default changes nothing, another group's budget reruns nothing."""
    config = copy.deepcopy(demo)
    config["csf"]["tuning"].pop("budgets", None)
    validate_config(config)  # fills in the schema's default budgets
    schema_budgets = schema_default("csf/tuning/budgets")
    (default,) = schema_budgets.values()
    init_points, n_iter = default["init_points"], default["n_iter"]
    defaults = {name: {"init_points": b["init_points"], "n_iter": b["n_iter"]} for name, b in schema_budgets.items()}
    assert Grid(config).csf_fit_config("global")["tuning"]["budgets"] == defaults
    assert Grid(config).csf_fit_config("none")["tuning"]["budgets"] == {}  # KPCA has no `none` variant
    spelled = copy.deepcopy(config)
    spelled["csf"]["tuning"]["budgets"] = copy.deepcopy(defaults)
    validate_config(spelled)
    assert Grid(spelled).csf_fit_config("class") == Grid(config).csf_fit_config("class")
    spelled["csf"]["tuning"]["budgets"]["KPCA RecError"] = {"init_points": init_points, "n_iter": n_iter + 1}
    validate_config(spelled)
    assert Grid(spelled).csf_fit_config("none") == Grid(config).csf_fit_config("none")
    assert Grid(spelled).csf_fit_config("class") != Grid(config).csf_fit_config("class")


def test_csf_methods_select_what_a_fit_computes_and_a_fit_reruns_only_for_its_own_methods(demo):
    """``csf.methods`` null = every registry CSF; a list restricts each fit group to the listed CSFs it has,
    so adding a `none`-only detector changes the `none` fit's params and leaves the `global` fit's alone."""
    assert demo["csf"]["methods"] is None and Grid(demo).csf_fit_config("none")["methods"] is None
    config = copy.deepcopy(demo)
    config["csf"]["methods"] = ["MSR", "ViM"]
    config["figures"]["rc_curves"]["csfs"] = ["MSR"]  # a drawn CSF must be one the fit computes
    validate_config(config)
    assert Grid(config).csf_fit_config("none")["methods"] == ["MSR", "ViM"]
    assert Grid(config).csf_fit_config("global")["methods"] == ["MSR"]  # ViM has only the unprojected variant
    more = copy.deepcopy(config)
    more["csf"]["methods"] = ["MSR", "ViM", "KNN"]
    assert Grid(more).csf_fit_config("global") == Grid(config).csf_fit_config("global")
    assert Grid(more).csf_fit_config("none")["methods"] == ["KNN", "MSR", "ViM"]


def test_ensembles_of_the_shipped_configs(demo, paper):
    """The demo's ensemble of its ViT's two runs; paper.yaml's one per configuration of both backbones (its five
    runs), their ids, members and sets (adversarial sets, each member's own, left out)."""
    grid = Grid(demo)
    assert [str(e) for _, e in grid.iter_ensembles()] == ["vit_ce_do0_rew0_ens1-2"]
    spec = grid.ensemble_spec("demo10", "vit_ce_do0_rew0_ens1-2")
    assert [m.model for m in spec.members] == ["vit_ce_do0_rew0_run1", "vit_ce_do0_rew0_run2"]
    assert spec.run == 0 and spec.member_runs == "1-2" and spec.modes == ("det",)
    assert grid.ensemble_datasets("demo10", "vit_ce_do0_rew0_ens1-2") == grid.scored_datasets("demo10",
                                                                                             spec.members[0].model)
    paper_grid = Grid(paper)
    ensembles = [(s, str(e)) for s, e in paper_grid.iter_ensembles()]
    assert len(ensembles) == 340 // 5 and ("cifar10", "vgg13_dg_do1_rew2.2_ens1-2-3-4-5") in ensembles
    assert ("supercifar100", "vit_ce_do1_rew0_ens1-2-3-4-5") in ensembles
    assert all(m.source == s for s, e in ensembles for m in paper_grid.ensemble_spec(s, e).members)


@pytest.mark.parametrize("entry, key, message", [
    ({"backbone": "vgg"}, "ensembles/0/backbone", "a backbone of ['vgg13', 'vit', 'vittiny'] (did you mean 'vgg13'?)"),
    ({"backbone": "vit", "runs": [1, 3]}, "ensembles/0/runs", "runs of backbone 'vit': some of [1, 2]"),
    ({"backbone": "vit", "runs": [2]}, "ensembles/0/runs", "at least two runs"),
    ({"backbone": "vgg13", "paradigms": ["ce"]}, "ensembles/0/paradigms", "paradigms of backbone 'vgg13'"),
    ({"backbone": "vgg13", "dropout": [0]}, "ensembles/0/dropout", "dropout of backbone 'vgg13'"),
    ({"backbone": "vittiny", "runs": [1]}, "ensembles/0/paradigms", "other than 'pretrained'"),
    ({"backbone": "vit", "sources": ["pretrain20"]}, "ensembles/0/sources", "sources of backbone 'vit'"),
])
def test_an_invalid_ensemble_is_a_config_error_naming_its_key(demo, entry, key, message):
    config = edited(demo, ("ensembles",), [entry])
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key_path == key and message in str(info.value)


def test_two_entries_declaring_one_ensemble_are_refused(demo):
    config = edited(demo, ("ensembles",), [{"backbone": "vit"}, {"backbone": "vit", "runs": [2, 1]}])
    with pytest.raises(ConfigError, match=r"'ensembles/1'.*ensembles other than those of ensembles/0.*"
                                          r"vit_ce_do0_rew0_ens1-2"):
        validate_config(config)
