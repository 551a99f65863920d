"""The ensemble scoring job on real HDF5 feature and score files of two members: the member mean, a one-member
ensemble against the member's own values, its metric rows, and members on other samples or in another order."""
from __future__ import annotations

from dataclasses import replace

import h5py
import numpy as np
import pandas as pd
import pytest

from csfbench.csf.fit_settings import FitSettings
from csfbench.csf.store import read_scores
from csfbench.ensembles.scores import ENSEMBLE_CSFS, ENSEMBLE_SCORER
from csfbench.features.store import run_attrs
from csfbench.metrics import DEFAULT_METRICS
from csfbench.specs import EnsembleSpec
from csfbench.stages.csf import fit_csf, score_csf
from csfbench.stages.ensembles import score_ensemble

from tests.helpers.csf_synthetic import make_splits
from tests.unit.stages.test_csf_jobs import CSF_CFG, SETS, SPEC, write_feature_file

METHODS = ["MSR", "MLS", "Energy", "PE", "KNN"]
NAMES = ("val", "test", "ood")


def _member(run: int):
    return replace(SPEC, model=f"vgg13_devries_do1_rew0_run{run}", run=run)


def _write_member(root, spec, shift: float):
    """A member's feature files (the same samples, its logits and features moved by ``shift``), fit and scores of
    fit group ``none``."""
    splits, ctx = make_splits(passes=3)
    files = {}
    for name, split in splits.items():
        moved = replace(split, features=split.features + shift, logits=split.logits + shift * np.arange(5),
                        pass_logits=split.pass_logits - shift * np.arange(5))
        files[name] = write_feature_file(root / f"{spec.model}_{name}.h5", moved, ctx, model=spec.model)
    # the files carry the member's own identity (run_attrs of its spec)
    for path in files.values():
        with h5py.File(path, "a") as fh:
            fh.attrs.update(run_attrs(spec))
    fit = root / f"{spec.model}_fit.h5"
    # at T = 1, the ensemble's own CSFs' temperature (names with the suffix @T1)
    settings = FitSettings.from_config({**CSF_CFG, "methods": METHODS, "temperatures": ["one"]})
    fit_csf(spec, settings, "none", files["train"], files["val"], fit)
    scores, metrics = root / f"{spec.model}_scores.h5", root / f"{spec.model}_metrics.parquet"
    score_csf(spec, [SETS[n] for n in NAMES], fit, {n: files[n] for n in NAMES}, scores, metrics, DEFAULT_METRICS)
    return files, scores, metrics


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    root = tmp_path_factory.mktemp("members")
    return {run: (_member(run), *_write_member(root, _member(run), shift)) for run, shift in ((1, 0.0), (2, 0.4))}


def _score(root, members, runs, scorer):
    spec = EnsembleSpec("syn", "vgg13_devries_do1_rew0_ens" + "-".join(map(str, runs)), "vgg13", "devries", 1, 0.0,
                        tuple(members[r][0] for r in runs))
    out = root / f"{spec.model}_{scorer}"
    member_scores = {} if scorer == ENSEMBLE_SCORER else {members[r][0].model: members[r][2] for r in runs}
    score_ensemble(spec, [SETS[n] for n in NAMES], scorer,
                   {members[r][0].model: {n: members[r][1][n] for n in NAMES} for r in runs}, member_scores,
                   [] if scorer == ENSEMBLE_SCORER else [members[r][3] for r in runs],
                   f"{out}.h5", f"{out}.parquet", DEFAULT_METRICS)
    return f"{out}.h5", pd.read_parquet(f"{out}.parquet")


def test_member_mean_of_two_members(members, tmp_path):
    scores_file, rows = _score(tmp_path, members, (1, 2), "none")
    for name in NAMES:
        got, attrs = read_scores(scores_file, name)
        assert attrs["model"] == "vgg13_devries_do1_rew0_ens1-2" and set(got) == {"det", "mcd"}
        one, two = (read_scores(members[r][2], name)[0] for r in (1, 2))
        for mode in ("det", "mcd"):
            assert set(got[mode]["scores"]) == set(one[mode]["scores"])
            for key, value in got[mode]["scores"].items():
                np.testing.assert_allclose(value, (one[mode]["scores"][key] + two[mode]["scores"][key]) / 2,
                                           rtol=1e-12, err_msg=str(key))
    assert set(rows["members"]) == {"1-2"} and set(rows["run"]) == {0}
    assert {"MSR@T1", "KNN"} <= set(rows["csf"]) and set(rows["dataset"]) == set(NAMES)
    # member tuning protocols carried over (KNN is tuned, MSR is not)
    assert set(rows.loc[rows["csf"] == "MSR@T1", "tuning_protocol"]) == {"none"}
    assert set(rows.loc[rows["csf"] == "KNN", "tuning_protocol"]) - {"none"}


def test_one_member_ensemble_equals_the_member(members, tmp_path):
    scores_file, rows = _score(tmp_path, members, (2,), "none")
    own_file, native = _score(tmp_path, members, (2,), ENSEMBLE_SCORER)
    member_rows = pd.read_parquet(members[2][3])
    for name in NAMES:
        mine, _ = read_scores(members[2][2], name)
        got = read_scores(scores_file, name)[0]
        own = read_scores(own_file, name)[0]
        for mode in ("det", "mcd"):
            np.testing.assert_array_equal(got[mode]["correct"], mine[mode]["correct"])
            for key, value in mine[mode]["scores"].items():
                np.testing.assert_array_equal(got[mode]["scores"][key], value)
            ens = own[mode]["scores"]
            np.testing.assert_allclose(ens[("Ensemble MSR", "none")], mine[mode]["scores"][("MSR@T1", "none")], rtol=1e-12)
            np.testing.assert_allclose(ens[("Mean Max-Logit", "none")], mine[mode]["scores"][("MLS@T1", "none")],
                                       rtol=1e-12)
            np.testing.assert_allclose(ens[("Ensemble Energy", "none")], mine[mode]["scores"][("Energy@T1", "none")],
                                       rtol=1e-5)
            np.testing.assert_allclose(ens[("Predictive Entropy", "none")], mine[mode]["scores"][("PE@T1", "none")],
                                       atol=1e-6)
            np.testing.assert_array_equal(ens[("Mutual Information", "none")], 0.0)
            np.testing.assert_array_equal(ens[("Variation Ratio", "none")], 0.0)
    # the one-member ensemble's metric rows are the member's, but for the model columns
    key = ["mcd", "csf", "variant", "dataset", "scheme", "metric"]
    merged = rows.merge(member_rows, on=key, suffixes=("", "_member"))
    assert len(merged) == len(member_rows)
    np.testing.assert_allclose(merged["value"], merged["value_member"], rtol=1e-12, equal_nan=True)
    assert set(native["csf"]) == set(ENSEMBLE_CSFS)


def test_members_on_other_samples_or_order_are_refused(members, tmp_path):
    spec2, files2, _, _ = members[2]
    shuffled = tmp_path / "shuffled_test.h5"
    shuffled.write_bytes(files2["test"].read_bytes())
    with h5py.File(shuffled, "a") as fh:
        ids = fh["sample_id"][()]
        fh["sample_id"][...] = ids[::-1]
    spec = EnsembleSpec("syn", "vgg13_devries_do1_rew0_ens1-2", "vgg13", "devries", 1, 0.0, (members[1][0], spec2))
    features = {members[1][0].model: {n: members[1][1][n] for n in NAMES},
                spec2.model: {**{n: files2[n] for n in NAMES}, "test": shuffled}}
    with pytest.raises(ValueError, match=rf"{shuffled}: evaluation set 'test' is not in the order of .*row 0 has "
                                         "sample_id"):
        score_ensemble(spec, [SETS[n] for n in NAMES], ENSEMBLE_SCORER, features, {}, [], tmp_path / "s.h5",
                       tmp_path / "m.parquet", DEFAULT_METRICS)
    splits, ctx = make_splits(passes=3)
    fewer = write_feature_file(tmp_path / "fewer_test.h5", replace(splits["test"], features=splits["test"].features[:-5],
                               logits=splits["test"].logits[:-5], labels=splits["test"].labels[:-5],
                               pred=splits["test"].pred[:-5], confidence=splits["test"].confidence[:-5],
                               pass_logits=splits["test"].pass_logits[:-5]), ctx, model=spec2.model)
    with h5py.File(fewer, "a") as fh:
        fh.attrs.update(run_attrs(spec2))
    features[spec2.model]["test"] = fewer
    with pytest.raises(ValueError, match=rf"{fewer}: 395 samples of evaluation set 'test', but .* has 400"):
        score_ensemble(spec, [SETS[n] for n in NAMES], ENSEMBLE_SCORER, features, {}, [], tmp_path / "s.h5",
                       tmp_path / "m.parquet", DEFAULT_METRICS)
    features[spec2.model]["test"] = files2["val"]  # another set's file: refused by its dataset attribute
    with pytest.raises(Exception, match=r"attribute 'dataset': expected 'test', found 'val'"):
        score_ensemble(spec, [SETS[n] for n in NAMES], ENSEMBLE_SCORER, features, {}, [], tmp_path / "s.h5",
                       tmp_path / "m.parquet", DEFAULT_METRICS)
    assert not (tmp_path / "s.h5").exists() and not (tmp_path / "m.parquet").exists()
