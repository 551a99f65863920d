import h5py
import numpy as np
import pytest

from csfbench.errors import FeatureFileError
from csfbench.features.store import REQUIRED_ATTRS, FeatureWriter, read_features, validate_feature_file


def _attrs(**over):
    attrs = {k: "x" for k in REQUIRED_ATTRS}
    attrs.update(model="vgg13_dg_do1_rew2.2_run1", paradigm="dg", n_classes=3, feature_dim=4, mcd_samples=2)
    attrs.update(over)
    return attrs


def _batch(rng, n, with_mcd=True):
    rows = {"logits": rng.normal(size=(n, 4)).astype("f4"), "features": rng.normal(size=(n, 4)).astype("f4"),
            "labels": rng.integers(0, 3, n), "sample_id": np.array([f"img/{i}.png" for i in range(n)], object),
            "confidence": rng.random(n).astype("f4")}
    rows["pred"] = rows["logits"][:, :3].argmax(1)
    rows["correct"] = rows["pred"] == rows["labels"]
    if with_mcd:
        rows["mcd/logits"] = rng.normal(size=(n, 2, 4)).astype("f4")
        rows["mcd/confidence"] = rng.random((n, 2)).astype("f4")
        rows["mcd/features_mean"] = rng.normal(size=(n, 4)).astype("f4")
    return rows


def _write(path, batches, n=None, feature_dtype="float32", **attrs):
    n = sum(len(b["labels"]) for b in batches) if n is None else n
    with FeatureWriter(path, n, n_outputs=4, feature_dim=4, mcd_samples=2, has_confidence=True,
                       attrs=_attrs(**attrs), feature_dtype=feature_dtype) as writer:
        for b in batches:
            writer.write_batch(b)
        writer.write_head(np.ones((4, 4)), np.zeros(4))


def test_round_trip_and_contract(tmp_path):
    rng = np.random.default_rng(0)
    batches = [_batch(rng, 5), _batch(rng, 3)]
    path = tmp_path / "f.h5"
    _write(path, batches)
    attrs = validate_feature_file(path, expect={"model": "vgg13_dg_do1_rew2.2_run1"})
    data, _ = read_features(path)
    for key in batches[0]:
        expected = np.concatenate([b[key] for b in batches])
        np.testing.assert_array_equal(data[key], expected.astype(str) if key == "sample_id" else expected)
    assert data["head/weight"].shape == (4, 4) and attrs["n_classes"] == 3
    with h5py.File(path) as fh:
        assert fh["features"].compression == "gzip" and fh["features"].chunks[1] == 4
    assert [p.name for p in tmp_path.iterdir()] == ["f.h5"]


def test_float16_features_are_stored_half_size_and_read_as_float32(tmp_path):
    rng = np.random.default_rng(0)
    batches = [_batch(rng, 5), _batch(rng, 3)]
    path = tmp_path / "f.h5"
    _write(path, batches, feature_dtype="float16")
    validate_feature_file(path)
    with h5py.File(path) as fh:  # the features in float16; the logits and confidences stay float32
        assert fh["features"].dtype == np.float16 and fh["mcd/features_mean"].dtype == np.float16
        assert fh["logits"].dtype == np.float32 and fh["mcd/confidence"].dtype == np.float32
    data, _ = read_features(path)
    for key in ("features", "mcd/features_mean"):
        expected = np.concatenate([b[key] for b in batches])
        assert data[key].dtype == np.float32
        # the float16 rounding of each value: a relative error of at most 2^-11
        np.testing.assert_array_equal(data[key], expected.astype(np.float16).astype(np.float32))
        np.testing.assert_allclose(data[key], expected, rtol=2.0 ** -11, atol=0)
    np.testing.assert_array_equal(data["logits"], np.concatenate([b["logits"] for b in batches]))
    big = _batch(rng, 2)
    big["features"][1, 2] = 70000.0
    with pytest.raises(ValueError, match=r"features rows 0-1 exceed float16's range .* largest 70000"):
        _write(tmp_path / "g.h5", [big], feature_dtype="float16")
    assert not (tmp_path / "g.h5").exists()
    with pytest.raises(ValueError, match="feature dtype 'float64'"):
        _write(tmp_path / "h.h5", [big], feature_dtype="float64")


def test_exception_leaves_no_file(tmp_path):
    path = tmp_path / "f.h5"
    with pytest.raises(RuntimeError):
        with FeatureWriter(path, 4, 4, 4, 2, True, _attrs()) as writer:
            writer.write_batch(_batch(np.random.default_rng(0), 2))
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_incomplete_write_is_an_error_and_leaves_no_file(tmp_path):
    with pytest.raises(ValueError, match="only 2 of 5 rows"):
        _write(tmp_path / "f.h5", [_batch(np.random.default_rng(0), 2)], n=5)
    assert list(tmp_path.iterdir()) == []


def test_wrong_model_is_rejected(tmp_path):
    _write(tmp_path / "f.h5", [_batch(np.random.default_rng(0), 3)])
    with pytest.raises(FeatureFileError, match="attribute 'model': expected 'vit_ce_do0_rew0_run1'"):
        validate_feature_file(tmp_path / "f.h5", expect={"model": "vit_ce_do0_rew0_run1"})


def test_nan_is_rejected_with_the_dataset_named(tmp_path):
    batch = _batch(np.random.default_rng(0), 3)
    batch["features"][1, 2] = np.nan
    _write(tmp_path / "f.h5", [batch])
    with pytest.raises(FeatureFileError, match="'features': expected finite values, found 1 NaN/Inf"):
        validate_feature_file(tmp_path / "f.h5")
    # a reader of the logits alone checks only those (an ensemble's members: csfbench.ensembles.members)
    assert validate_feature_file(tmp_path / "f.h5", finite=("logits",))["n_classes"]


def test_wrong_shape_is_rejected(tmp_path):
    _write(tmp_path / "f.h5", [_batch(np.random.default_rng(0), 3)], feature_dim=8)
    with pytest.raises(FeatureFileError, match="'features': expected shape"):
        validate_feature_file(tmp_path / "f.h5")


def test_missing_file(tmp_path):
    with pytest.raises(FeatureFileError, match="not found"):
        validate_feature_file(tmp_path / "none.h5")
