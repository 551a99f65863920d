"""`csfbench inspect FILE` checks that `pred` is the argmax of the logits and `correct` is `pred == label`, as the
extraction writes them; a file that disagrees is an error naming the file, the dataset, the count and the first row."""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.training import tiny_spec
from tests.hostile.test_result_files import _rows, run_cli, write_features


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return tiny_spec(tmp_path_factory.mktemp("blobs"))  # 4 classes, Deep Gamblers (5 outputs: abstention last)


def _other_class(rows, i):
    return int(np.argsort(rows["logits"][i, :4])[-2])  # the second-highest class logit


def test_a_pred_that_is_not_the_argmax_is_named(tmp_path, spec, capsys):
    rows = _rows()
    for i in (3, 7):
        rows["pred"][i] = _other_class(rows, i)
    rows["correct"] = rows["pred"] == rows["labels"]
    path = write_features(tmp_path / "test.h5", spec, rows)
    code, out, err = run_cli(capsys, "inspect", path)
    assert code == 2 and out == ""
    argmax = int(rows["logits"][3, :4].argmax())
    assert err == (f"csfbench: error: {path}: dataset 'pred': expected the argmax of the first 4 logits (ties: the "
                   "lowest class), or a maximal logit among the classes pred takes (logit_mask: restrict), found 2 "
                   f"row(s) that differ (first at row 3: pred {rows['pred'][3]}, argmax {argmax})\n")


def test_a_correct_flag_that_is_not_pred_equals_label_is_named(tmp_path, spec, capsys):
    rows = _rows()
    rows["labels"][:2] = -1  # unlabelled: never correct
    rows["pred"][:2] = rows["logits"][:2, :4].argmax(1)
    rows["correct"] = (rows["pred"] == rows["labels"]) & (rows["labels"] >= 0)
    rows["correct"][5] = not rows["correct"][5]
    rows["correct"][0] = True  # an unlabelled sample counted correct
    path = write_features(tmp_path / "test.h5", spec, rows)
    code, _, err = run_cli(capsys, "inspect", path)
    assert code == 2
    assert err == (f"csfbench: error: {path}: dataset 'correct': expected pred == label (false where the label is "
                   f"-1), found 2 row(s) that differ (first at row 0: correct True, pred {rows['pred'][0]}, "
                   "label -1)\n")


def test_the_abstention_logit_does_not_enter_the_argmax(tmp_path, spec, capsys):
    rows = _rows()
    rows["logits"][:, 4] = 100.0  # Deep Gamblers' abstention output, above every class logit
    path = write_features(tmp_path / "test.h5", spec, rows)
    code, out, _ = run_cli(capsys, "inspect", path)
    assert code == 0 and "accuracy = " in out


def test_ties_go_to_the_lowest_class_as_torch_argmax_writes_them(tmp_path, spec, capsys):
    import torch

    rows = _rows()
    rows["logits"][:, :4] = np.eye(4, dtype="f4")[np.arange(12) % 4]  # rows 0-3: classes 0-3, and so on
    rows["logits"][[4, 9], :4] = 0.0  # a dead unit's rows: every class logit equal
    rows["pred"] = torch.from_numpy(rows["logits"][:, :4]).argmax(1).numpy()
    assert rows["pred"][4] == rows["pred"][9] == 0
    rows["correct"] = rows["pred"] == rows["labels"]
    path = write_features(tmp_path / "test.h5", spec, rows)
    assert run_cli(capsys, "inspect", path)[0] == 0
    rows["pred"][9] = 2  # also a maximal logit, but not the one the extraction writes
    rows["correct"] = rows["pred"] == rows["labels"]
    path = write_features(tmp_path / "tied.h5", spec, rows)
    code, _, err = run_cli(capsys, "inspect", path)
    assert code == 2
    assert f"{path}: dataset 'pred': expected the argmax" in err and "(first at row 9: pred 2, argmax 0)" in err


def test_a_prediction_restricted_to_a_label_space_is_accepted_and_said(tmp_path, spec, capsys):
    rows = _rows()
    space = [1, 3]  # logit_mask: restrict over label_space [1, 3]
    rows["pred"] = np.array(space)[rows["logits"][:, space].argmax(1)]
    assert (rows["pred"] != rows["logits"][:, :4].argmax(1)).any()
    rows["correct"] = rows["pred"] == rows["labels"]
    path = write_features(tmp_path / "test.h5", spec, rows)
    code, out, _ = run_cli(capsys, "inspect", path)
    assert code == 0
    assert "  pred: the argmax over the 2 classes it takes, not over all 4 (a restricted label space: logit_mask " \
           "restrict)" in out


def test_a_tampered_row_of_a_restricted_prediction_is_named(tmp_path, spec, capsys):
    rows = _rows()
    space = np.array([1, 3])
    rows["pred"] = space[rows["logits"][:, space].argmax(1)]
    i = int(np.flatnonzero(rows["pred"] == 1)[0])
    rows["pred"][i] = 3  # below class 1's logit, which the same label space takes
    rows["correct"] = rows["pred"] == rows["labels"]
    path = write_features(tmp_path / "test.h5", spec, rows)
    code, _, err = run_cli(capsys, "inspect", path)
    assert code == 2 and f"{path}: dataset 'pred': expected the argmax of the first 4 logits" in err
