"""Job functions of the NC and proximity rules on small synthetic HDF5 files."""
from __future__ import annotations

import json
import sys

import h5py
import numpy as np
import pandas as pd
import pytest

from csfbench.csf.engine import FittedCsf, FittedMode
from csfbench.csf.projection import ClassSubspaces, Pca, class_fit_data
from csfbench.csf.store import write_fit
from csfbench.errors import FeatureFileError
from csfbench.features.extract import feature_attrs
from csfbench.features.store import FeatureWriter
from csfbench.geometry.nc_records import RECORD_COLUMNS, model_nc_records, nc_table
from csfbench.geometry.neural_collapse import METRICS, REGIMES, nc_metrics
from csfbench.proximity.distances import ood_distances
from csfbench.proximity.stratification import read_embeddings, resolve_regimes
from csfbench.specs import DatasetSpec, ModelSpec
from csfbench.stages.geometry import write_model_nc, write_nc_table
from csfbench.stages.proximity import write_stratification

C, D = 4, 6


def _spec(model="vgg13_dg_do1_rew2.2_run1", run=1, paradigm="dg"):
    return ModelSpec(source="s", model=model, backbone="vgg13", paradigm=paradigm, dropout=1, reward=2.2, run=run,
                     seed=0, n_classes=C, image_size=32, normalize={}, arch={}, mcd_samples=0, optim={},
                     paradigm_params={}, dataset=DatasetSpec("s", "npy", "unused"), val_size=1)


def _etf(scale=3.0):
    """C centred simplex-ETF means in D dimensions (unit norm, cosines −1/(C−1))."""
    m = np.eye(C) - 1.0 / C
    m = np.hstack([m, np.zeros((C, D - C))])
    return scale * m / np.linalg.norm(m, axis=1, keepdims=True)


def _train_file(path, features, labels, weight, model="vgg13_dg_do1_rew2.2_run1", pred=None):
    """The train feature file of model ``model`` (head ``weight``, zero bias), written as the workflow writes it."""
    n, pred = len(labels), labels if pred is None else pred
    with FeatureWriter(path, n, len(weight), D, 0, False, feature_attrs(_spec(model), "train", "train", "none", D),
                       compression="none") as writer:
        writer.write_batch({"logits": np.zeros((n, len(weight)), np.float32), "features": features.astype(np.float32),
                            "labels": labels, "pred": pred, "correct": pred == labels,
                            "sample_id": np.array([f"s{i}" for i in range(n)], dtype=object)})
        writer.write_head(weight, np.zeros(len(weight)))
    return path


def _noisy(n_per_class=30, noise=0.2, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(C), n_per_class)
    features = _etf()[labels] + noise * rng.standard_normal((len(labels), D)) + 5.0  # offset: not centred
    features = features.astype(np.float32)  # as stored in feature files
    pred = labels.copy()
    pred[::7] = (pred[::7] + 1) % C  # some errors: the class-predicted projection differs from the true one
    return features, labels, pred


def test_nc_record_of_a_simplex_etf_is_ideal_with_a_deep_gamblers_abstention_row(tmp_path):
    labels = np.repeat(np.arange(C), 5)
    features = _etf()[labels] + 1e-6 * np.random.default_rng(0).standard_normal((len(labels), D))
    weight = np.vstack([_etf(0.5), 9.0 * np.ones(D)])  # the DG abstention row must be dropped
    path = _train_file(tmp_path / "train.h5", features, labels, weight)
    records = write_model_nc(_spec(), path, {}, tmp_path / "nc.csv", variance=0.99)
    assert list(records.columns) == RECORD_COLUMNS and len(records) == len(REGIMES) * len(METRICS)
    assert records["value"].abs().max() < 1e-4  # every metric ideal (0) in every regime
    assert pd.read_csv(tmp_path / "nc.csv").shape == records.shape


def test_nc_record_reads_the_csf_projections_from_the_fit_files(tmp_path):
    features, labels, pred = _noisy()
    weight = np.vstack([_etf(0.5) * [[1.0], [1.0], [1.0], [2.0]], np.ones(D)])
    path = _train_file(tmp_path / "train.h5", features, labels, weight, pred=pred)
    v = 0.9
    correct = pred == labels
    pca = Pca.fit(features[correct])
    pcas = [Pca.fit(features[rows]) for rows in class_fit_data(features, labels, correct, C)]
    subspaces = ClassSubspaces.from_pcas(pcas, v)
    states = {"global": {"group": "global", "variance": v, "mean": pca.mean, "basis": pca.basis(v)},
              "class": {"group": "class", "variance": v, "subspaces": subspaces,
                        "mean_targets": subspaces.means}}
    fits = {}
    for group, state in states.items():
        fits[group] = tmp_path / f"{group}.h5"
        mode = FittedMode(state, {}, {("MSR", group): FittedCsf({}, None)}, 1.0)
        write_fit(fits[group], {"det": mode}, (weight, np.zeros(len(weight))), {})
    from_fits = model_nc_records(_spec(), path, fits).set_index(["regime", "metric"])["value"]
    refitted = model_nc_records(_spec(), path, {}, variance=v).set_index(["regime", "metric"])["value"]
    np.testing.assert_allclose(from_fits.to_numpy(), refitted.to_numpy(), rtol=1e-9, atol=1e-12)
    # the unfiltered regime is nc_metrics itself; norms 1, 1, 1, 2 give EqNorm (weights) = 0.5 / 1.25 = 0.4
    direct = nc_metrics(features, labels, weight[:C])
    for name in METRICS:
        assert from_fits["none", name] == pytest.approx(direct[name], rel=1e-12)
    assert from_fits["global", "EqNorm (weights)"] == pytest.approx(0.4)
    # the projected regimes differ from the unfiltered one (the projection really was applied)
    assert from_fits["class_pred", "Var Collapse"] != pytest.approx(from_fits["none", "Var Collapse"])


def test_nc_record_errors_name_the_file_and_the_missing_setting(tmp_path):
    features, labels, pred = _noisy()
    weight = np.vstack([_etf(), np.ones(D)])  # with the DG abstention row
    path = _train_file(tmp_path / "train.h5", features, labels, weight, pred=pred)
    with pytest.raises(ValueError, match="geometry/nc/variance"):
        model_nc_records(_spec(), path, {})
    with pytest.raises(FeatureFileError, match=r"train\.h5: attribute 'model': expected 'other'"):
        model_nc_records(_spec(model="other"), path, {}, variance=0.9)
    bad = _train_file(tmp_path / "bad.h5", features, np.where(labels == 3, 0, labels), weight, pred=pred)
    with pytest.raises(ValueError, match=r"bad\.h5: class\(es\) 3 of C = 4 have no training sample"):
        model_nc_records(_spec(), bad, {}, variance=0.9)


def test_nc_table_averages_runs_and_paradigms_per_backbone_dropout_and_regime(tmp_path):
    paths = []
    for i, (run, paradigm, value) in enumerate(((1, "dg", 1.0), (2, "dg", 2.0), (1, "devries", 6.0))):
        spec = _spec(model=f"m{i}", run=run, paradigm=paradigm)
        rows = [{**{k: getattr(spec, k) for k in RECORD_COLUMNS[:7]}, "regime": r, "metric": m,
                 "value": value * (1 + REGIMES.index(r))} for r in REGIMES for m in METRICS]
        paths.append(tmp_path / f"m{i}.csv")
        pd.DataFrame(rows).to_csv(paths[-1], index=False)
    table = write_nc_table(paths, tmp_path / "nc.csv", tmp_path / "nc.tex", "s")
    assert table["regime"].tolist() == list(REGIMES) and set(table["n_models"]) == {3}
    assert table[list(METRICS)].to_numpy() == pytest.approx(np.outer([3.0, 6.0, 9.0], np.ones(len(METRICS))))
    tex = (tmp_path / "nc.tex").read_text()
    assert "\\begin{tabular}" in tex and "6.0000" in tex and "class\\_pred" in tex
    assert pd.read_csv(tmp_path / "nc.csv").shape == table.shape
    with pytest.raises(ValueError, match=r"source\(s\) \['s'\] given for the table of 'x'"):
        write_nc_table(paths, tmp_path / "x.csv", tmp_path / "x.tex", "x")
    assert nc_table(pd.concat(map(pd.read_csv, paths)))["n_models"].tolist() == [3, 3, 3]


# ----------------------------------------------------------------------------- proximity

def test_precedence_static_overrides_and_computed_overrides():
    computed = pd.Series({"a": "near", "b": "far", "c": "mid"})
    static = {"a": "far", "b": None, "c": "mid"}
    out = resolve_regimes("s", computed, static, "static").set_index("dataset")
    assert out["regime"].to_dict() == {"a": "far", "b": "far", "c": "mid"}
    assert out["decided_by"].to_dict() == {"a": "static", "b": "computed", "c": "static"}
    out = resolve_regimes("s", computed, static, "computed").set_index("dataset")
    assert out["regime"].to_dict() == {"a": "near", "b": "far", "c": "mid"}
    with pytest.raises(ValueError, match="proximity/precedence"):
        resolve_regimes("s", computed, static, "both")
    with pytest.raises(ValueError, match="sources/s/ood/a/regime"):
        resolve_regimes("s", computed, {**static, "a": "semantic"}, "static")
    with pytest.raises(ValueError, match="semantic OOD sets are"):
        resolve_regimes("s", computed, {"a": None}, "static")


def _embeddings_file(path, with_text=False):
    rng = np.random.default_rng(0)
    centres = np.eye(8)[:2] * 4
    labels = np.repeat([0, 1], 60)
    sets = {"train": centres[labels] + rng.standard_normal((120, 8)),
            "test": centres[np.repeat([0, 1], 20)] + rng.standard_normal((40, 8))}
    for name, shift in (("a", 0.5), ("b", 0.6), ("c", 3.0), ("d", 8.0), ("e", 8.5)):
        sets[name] = centres[np.repeat([0, 1], 20)] + shift * np.eye(8)[5] + rng.standard_normal((40, 8))
    with h5py.File(path, "w") as fh:
        fh.attrs.update(source="s", encoder="synthetic", sets=json.dumps(list(sets)),
                        text_alignment="computed" if with_text else "skipped: no text tower")
        for name, emb in sets.items():
            fh[f"embeddings/{name}"] = emb.astype(np.float32)
        fh["labels"] = labels
        if with_text:
            fh["text"] = np.eye(8)[:2].astype(np.float32)
    return sets, labels


def test_stratification_writes_distances_clusters_and_resolved_regimes(tmp_path):
    sets, labels = _embeddings_file(tmp_path / "emb.h5")
    static = {"a": None, "b": "far", "c": None, "d": None, "e": None}
    out = {k: tmp_path / f"{k}" for k in ("csv", "tex", "regimes")}
    regimes = write_stratification("s", tmp_path / "emb.h5", static, "static", 0, 5, 30,
                                   out["csv"], out["tex"], out["regimes"])
    table = pd.read_csv(out["csv"]).set_index("dataset")
    assert table.index.tolist() == ["test", "a", "b", "c", "d", "e"]
    # distances against an independent call on the same arrays
    expect = ood_distances(sets["d"].astype(np.float32), sets["train"].astype(np.float32), labels, seed=0,
                           n_subsets=5, subset_size=30)
    for name, value in expect.items():
        assert table.loc["d", name] == pytest.approx(value, rel=1e-5)  # CSV keeps 6 significant digits
    tex = out["tex"].read_text()
    assert table["text_alignment"].isna().all() and " - &" in tex
    assert "skipped: no text tower" in tex and "computed\\_regime" in tex
    computed = table["computed_regime"].drop("test").to_dict()
    assert computed == {"a": "near", "b": "near", "c": "mid", "d": "far", "e": "far"}
    assert table.loc["test", "regime"] == "test"
    assert dict(zip(regimes["dataset"], regimes["regime"])) == {"a": "near", "b": "far", "c": "mid", "d": "far",
                                                                "e": "far"}
    assert pd.read_csv(out["regimes"])["decided_by"].tolist() == ["computed", "static", "computed", "computed",
                                                                   "computed"]


def test_stratification_with_text_embeddings_fills_the_label_text_column(tmp_path):
    _embeddings_file(tmp_path / "emb.h5", with_text=True)
    assert read_embeddings(tmp_path / "emb.h5")[2].shape == (2, 8)
    write_stratification("s", tmp_path / "emb.h5", dict.fromkeys("abcde"), "computed", 0, 5, 30,
                         tmp_path / "t.csv", tmp_path / "t.tex", tmp_path / "r.csv")
    table = pd.read_csv(tmp_path / "t.csv")
    assert table["text_alignment"].notna().all() and (table["text_alignment"] <= 2).all()
    with pytest.raises(ValueError, match="embeddings of source 's', expected 'x'"):
        write_stratification("x", tmp_path / "emb.h5", {}, "static", 0, 5, 30,
                             tmp_path / "t.csv", tmp_path / "t.tex", tmp_path / "r.csv")


def _npy_dataset(root, name, n, labels=True, seed=0):
    rng = np.random.default_rng(seed)
    for split in ("train", "test"):
        folder = root / name / split
        folder.mkdir(parents=True)
        np.save(folder / "images.npy", rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8))
        np.save(folder / "labels.npy", (np.arange(n) % 3) if labels else np.full(n, -1))
    return DatasetSpec(name, "npy", str(root / name), "test", {})


def test_embedding_with_a_timm_weights_file_matches_the_timm_model(tmp_path):
    import torch
    from safetensors.torch import save_file

    from csfbench.models.vit import timm  # imported after the CPU-torch torchvision fix
    from csfbench.stages.proximity import embed_source_sets

    arch = {"timm_name": "vit_tiny_patch16_224", "patch_size": 8, "depth": 1}
    torch.manual_seed(0)
    vit = timm.create_model(arch["timm_name"], pretrained=False, num_classes=5, img_size=32, patch_size=8, depth=1)
    save_file({k: v.contiguous() for k, v in vit.state_dict().items()}, str(tmp_path / "vit.safetensors"))
    norm = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}
    encoder = {"kind": "timm", "file": str(tmp_path / "vit.safetensors"), "num_classes": 5, "arch": arch,
               "image_size": 32, "normalize": norm}
    source = _npy_dataset(tmp_path, "src", 12)
    ood = {"far": _npy_dataset(tmp_path, "far", 7, labels=False, seed=1)}
    embed_source_sets("s", source, 4, ood, encoder, 5, tmp_path / "emb.h5")
    sets, labels, text, attrs = read_embeddings(tmp_path / "emb.h5")
    assert list(sets) == ["train", "test", "far"] and text is None
    assert [len(v) for v in sets.values()] == [12, 8, 7] and labels.tolist() == (np.arange(12) % 3).tolist()
    assert attrs["text_alignment"].startswith("skipped")
    images = np.load(tmp_path / "far/test/images.npy")
    x = (torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.25
    with torch.no_grad():
        expect = vit.forward_head(vit.forward_features(x.float()), pre_logits=True).numpy()
    np.testing.assert_allclose(sets["far"], expect, rtol=1e-4, atol=1e-5)


def test_open_clip_encoder_without_the_package_gives_the_install_hint(monkeypatch, tmp_path):
    from csfbench.proximity.encoders import build_encoder

    monkeypatch.setitem(sys.modules, "open_clip", None)  # import open_clip now raises ImportError
    with pytest.raises(ImportError, match=r"pip install -c constraints.txt 'csfbench\[proximity\]'"):
        build_encoder({"kind": "open_clip", "model": "ViT-B-32", "weights": str(tmp_path / "w.bin")}, "cpu")
    with pytest.raises(ValueError, match="proximity/encoder/kind must be one of"):
        build_encoder({"kind": "clip"}, "cpu")


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A randomly initialised open_clip model of a tiny registered architecture, saved as a local weights file."""
    pytest.importorskip("open_clip", reason="open-clip-torch is a test dependency (pip install -e '.[test]')")
    import torch

    from csfbench.proximity.encoders import _import_open_clip

    open_clip = _import_open_clip()
    folder = tmp_path_factory.mktemp("clip")
    config = {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8,
                                              "head_width": 16},
              "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}
    (folder / "csfbench-tiny-clip.json").write_text(json.dumps(config))
    open_clip.add_model_config(folder / "csfbench-tiny-clip.json")
    torch.manual_seed(0)
    model = open_clip.create_model("csfbench-tiny-clip")
    torch.save(model.state_dict(), folder / "tiny.bin")
    return open_clip, {"kind": "open_clip", "model": "csfbench-tiny-clip", "weights": str(folder / "tiny.bin")}


def test_open_clip_encoder_embeds_images_and_prompt_ensembles_like_open_clip(tiny_clip, tmp_path):
    import torch
    from PIL import Image

    from csfbench.proximity.encoders import TEMPLATES, build_encoder
    from csfbench.stages.proximity import embed_source_sets

    open_clip, encoder_cfg = tiny_clip
    cfg = {**encoder_cfg, "class_names": {"s": ["sea_lion", "oak", "car"]}}
    source = _npy_dataset(tmp_path, "src", 12)
    embed_source_sets("s", source, 4, {"far": _npy_dataset(tmp_path, "far", 5, labels=False, seed=1)}, cfg, 4,
                      tmp_path / "emb.h5")
    sets, _, text, attrs = read_embeddings(tmp_path / "emb.h5")
    assert attrs["text_alignment"] == "computed" and text.shape == (3, 16)
    model, _, preprocess = open_clip.create_model_and_transforms("csfbench-tiny-clip", pretrained=cfg["weights"])
    model.eval()
    tokenizer = open_clip.get_tokenizer("csfbench-tiny-clip")
    images = np.load(tmp_path / "far/test/images.npy")
    with torch.no_grad():
        expect = model.encode_image(torch.stack([preprocess(Image.fromarray(im)) for im in images])).numpy()
        lion = model.encode_text(tokenizer([t.format("sea lion") for t in TEMPLATES])).mean(0)
    np.testing.assert_allclose(sets["far"], expect, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(text[0], (lion / lion.norm()).numpy(), rtol=1e-4, atol=1e-6)
    write_stratification("s", tmp_path / "emb.h5", {"far": "far"}, "static", 0, 2, 4,
                         tmp_path / "t.csv", tmp_path / "t.tex", tmp_path / "r.csv")
    assert pd.read_csv(tmp_path / "t.csv")["text_alignment"].notna().all()
    with pytest.raises(FileNotFoundError, match="proximity/encoder/weights"):
        build_encoder({**encoder_cfg, "weights": str(tmp_path / "missing.bin")}, "cpu")
