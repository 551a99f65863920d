"""``csfbench init``: a data folder in the official layouts becomes a starter config that validates."""
from __future__ import annotations

import re

import pytest
import yaml

from csfbench.cli import main
from csfbench.data.formats import FORMATS
from csfbench.cli.init_config import NAME_RULE, dataset_name, scan
from csfbench.workflow.settings import load_config, load_yaml, schema, validate_config

from tests.helpers import format_fixtures as ff
from tests.helpers.repo import REPO


def _init(capsys, *args) -> tuple[int, str, str]:
    code = main(["init", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def data_root(tmp_path):
    """CIFAR-10, SVHN, an image folder (named with an underscore), an OpenOOD imglist tree, and things that
    are no dataset: a stray file, an empty folder, an SVHN-looking folder whose .mat is not MATLAB."""
    root = tmp_path / "data"
    root.mkdir()
    ff.write_cifar10(root, n_per_file=20)
    ff.write_svhn(root, n=20)
    ff.write_image_folder(root / "my_photos")
    ff.write_openood(root)
    (root / "notes.txt").write_text("not a dataset")
    (root / "empty").mkdir()
    (root / "broken_svhn").mkdir()
    (root / "broken_svhn" / "test_32x32.mat").write_bytes(b"not a MATLAB file")
    return root


@pytest.fixture
def written(data_root, tmp_path, capsys):
    output = tmp_path / "my.yaml"
    code, out, err = _init(capsys, data_root, "--output", output, "--results", tmp_path / "run")
    assert code == 0, err
    return output, out


def _line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(name + " "))


def test_the_written_config_validates_and_points_at_the_data(written, data_root):
    output, out = written
    config = load_config(output)
    assert config["data_root"] == str(data_root.resolve())
    assert f"wrote {output}: valid (2 sources, 2 models" in out
    formats = {name: entry["format"] for name, entry in config["datasets"].items()}
    assert formats == {"cifar10": "cifar10", "svhn": "svhn", "my-photos": "image_folder", "tin": "imglist",
                       "imagenetood": "imglist"}
    assert config["datasets"]["tin"]["path"] == "data"
    assert config["datasets"]["tin"]["options"] == {"imglist": "benchmark_imglist/cifar10/test_tin.txt",
                                                    "images": "images_classic"}
    # OpenOOD's ImageNet-OOD-style list is relative to a deeper folder, found from its first path
    assert config["datasets"]["imagenetood"]["options"]["images"] == "images_classic/tin/test"


def test_sources_and_shift_types(written):
    config = load_config(written[0])
    assert set(config["sources"]) == {"cifar10", "svhn"}
    shifts = {src: {name: entry["shift_type"] for name, entry in cfg["ood"].items()}
              for src, cfg in config["sources"].items()}
    # unlabelled sets and the other source (another label space) are semantic shifts; the OpenOOD lists of
    # the cifar10 benchmark belong to the cifar10 source only
    assert shifts["cifar10"] == {"svhn": "semantic", "my-photos": "semantic", "tin": "semantic",
                                 "imagenetood": "semantic"}
    assert shifts["svhn"] == {"cifar10": "semantic", "my-photos": "semantic"}
    cifar = config["sources"]["cifar10"]
    assert (cifar["n_classes"], cifar["val_size"], cifar["image_size"]) == (10, 4, {"vgg13": 32})
    assert config["sources"]["svhn"]["n_classes"] == 10


def test_the_report_names_formats_and_what_could_not_be_classified(written):
    _, out = written
    assert re.search(r"cifar10\s+cifar10\s+cifar-10-batches-py: train 100, test 20, 10 classes -> source", out)
    assert re.search(r"svhn\s+svhn\s+svhn: train 20, test 20", out)
    assert re.search(r"my-photos\s+image_folder\s+my_photos: 6 images, unlabelled -> semantic shift of cifar10, svhn",
                     _line(out, "my-photos"))
    assert "benchmark_imglist/cifar10/test_tin.txt): 3 images, unlabelled" in _line(out, "tin")
    # the labelled ID list is found but has no use: one split, no source
    assert "found but not used (1):" in out
    assert re.search(r"test_cifar10\.txt\) \[imglist\]: OpenOOD's test list of source 'cifar10''s own images: "
                     r"not used \(the source is read from its own files\)", out)
    unclassified = out.split("could not classify (3):\n", 1)[1].split("\nwrote ", 1)[0].splitlines()
    reasons = dict(line.strip().split(": ", 1) for line in unclassified)
    assert set(reasons) == {"broken_svhn", "empty", "notes.txt"}
    # the reader decides: a folder with SVHN's file names but no MATLAB file is refused with the reader's problem
    assert reasons["broken_svhn"].startswith("looks like format 'svhn' but its reader refused it: cannot read MATLAB")
    assert "no image files and no file of a known layout" in reasons["empty"]
    assert reasons["notes.txt"].startswith("a file directly in the data folder")


def test_the_config_is_minimal_small_and_commented(written, tmp_path):
    output, _ = written
    text = output.read_text()
    raw = yaml.safe_load(text)
    assert set(raw) == set(schema()["required"])  # every optional section left to its defaults
    assert raw["backbones"] == {"vgg13": {"paradigms": ["devries"], "dropout": [0], "runs": [1],
                                          "arch": {"width": 0.25}}}  # mcd_samples: 0 by default
    assert raw["training"]["vgg13"]["devries"]["epochs"] <= 10
    comments = [line.lstrip(" #").strip() for line in text.splitlines() if line.lstrip().startswith("#")]
    described = " ".join(" ".join(comments).split())
    assert schema()["properties"]["seed"]["description"] in described
    for section in ("geometry", "proximity", "shifts", "projnorm", "network_csf", "ranking", "figures", "resources"):
        assert re.search(rf"^  # {section} \(", text, flags=re.M), section
    assert "# conformal (runs when written, unless enabled: false)" in text
    assert f"--directory {tmp_path / 'run'} --configfile {output}" in text


@pytest.mark.parametrize("folder, name", [
    ("my_photos", "my-photos"), ("LSUN_resize", "lsun-resize"), ("Places 365 (val)", "places-365-val"),
    ("__hidden", "hidden"), ("test", "test-set"), ("val", "val-set"), ("dtd.v1", "dtd.v1"), ("Ünïcode", "n-code"),
    ("!!!", "dataset"), ("ph\x1boto", "ph-oto"), ("line\nbreak", "line-break"), ("\x00\x07", "dataset"),
    ("a" * 250, "a" * 64), ("x" * 63 + "_tail", "x" * 63),  # cut to the schema's maxLength, no trailing '-'
])
def test_dataset_names_follow_the_naming_rule(folder, name):
    assert dataset_name(folder) == name
    assert NAME_RULE.fullmatch(name) and re.fullmatch(schema()["definitions"]["name"]["pattern"], name)
    assert len(name) <= schema()["definitions"]["name"]["maxLength"]


def test_folder_names_become_valid_unique_names(tmp_path):
    root = tmp_path / "data"
    ff.write_cifar10(root, n_per_file=20)
    for folder in ("Test", "My_Photos", "my photos"):
        ff.write_image_folder(root / folder)
    found = scan(root)
    names = sorted(f.name for f in found.found)
    assert names == ["cifar10", "my-photos", "my-photos-2", "test-set"]


def test_folders_grouping_datasets_are_read_one_level_deeper(tmp_path):
    root = tmp_path / "data"
    ff.write_cifar10(root / "id", n_per_file=20)
    ff.write_image_folder(root / "ood" / "isun")
    ff.write_image_folder(root / "ood" / "lsun")
    ff.write_svhn(root / "ood", n=10)  # the SVHN folder makes ood/ a group of datasets
    found = {f.name: (f.format, f.path) for f in scan(root).found}
    assert found == {"cifar10": ("cifar10", "id/cifar-10-batches-py"), "svhn": ("svhn", "ood/svhn"),
                     "isun": ("image_folder", "ood/isun"), "lsun": ("image_folder", "ood/lsun")}


def test_every_layout_is_recognised(tmp_path, capsys):
    root = tmp_path / "data"
    ff.write_cifar10(root, n_per_file=20)
    ff.write_cifar100(root)
    ff.write_tinyimagenet(root, n_val=15)
    ff.write_cifar_c(root)
    ff.write_npy(root)
    ff.write_imagenet(root / "imagenet", n_train=2)
    ff.write_imagenet_c(root / "imagenet")
    ff.write_wnid_folders(root / "renditions")
    ff.write_iconic444(root)
    ff.write_idx(root)
    output = tmp_path / "all.yaml"
    code, out, err = _init(capsys, root, "-o", output)
    assert code == 0, err
    config = load_config(output)
    formats = {entry["format"] for entry in config["datasets"].values()}
    assert formats == {"cifar10", "cifar100", "tinyimagenet", "cifar_c", "npy", "imagenet", "imagenet_c",
                       "wnid_folders", "iconic444", "idx"}
    sources = config["sources"]
    assert set(sources) == {"cifar10", "cifar100", "tinyimagenet", "imagenet", "iconic444-almond", "mnist"}
    assert sources["tinyimagenet"]["image_size"] == {"vgg13": 64}
    assert sources["iconic444-almond"]["val_size"] == 7  # the lines of almond/val.txt: the official split
    # corruptions are covariate shifts of their own source only
    assert sources["cifar10"]["ood"]["cifar10c-gaussian-noise-3"]["shift_type"] == "covariate"
    assert not any(name.startswith("cifar10c") for name in sources["cifar100"]["ood"])
    assert {name: e["shift_type"] for name, e in sources["imagenet"]["ood"].items() if e["shift_type"] == "covariate"} \
        == {"imagenetc-fog-3": "covariate", "imagenetc-gaussian-noise-5": "covariate", "imagenet-r": "covariate"}
    # labels of ImageNet-C (4 of the 5 classes) and ImageNet-R follow the source's class list
    imagenet_c = config["datasets"]["imagenetc-fog-3"]
    assert imagenet_c["options"] == {"corruption": "fog", "severity": 3,
                                     "wnids": "../ILSVRC2012/LOC_synset_mapping.txt"}
    # ICONIC-444: the near and shared OOD lists of a task are its semantic shifts; ood_val is only catalogued
    iconic = sources["iconic444-almond"]["ood"]
    assert {"iconic444-almond-near", "iconic444-almond-far", "iconic444-almond-extreme-textures"} <= set(iconic)
    assert "iconic444-almond-ood-val" in config["datasets"] and "iconic444-almond-ood-val" not in iconic
    assert "csfbench.data" not in out and "Traceback" not in err


def test_idx_folders_become_sources_and_evaluation_sets(tmp_path, capsys):
    """MNIST-named IDX files (gzipped, raw, in torchvision's {dataset}/raw/), EMNIST's files of two splits in one
    folder and a folder holding only the test files."""
    root = tmp_path / "data"
    ff.write_idx(root, "mnist", gz=True)
    ff.write_idx(root, "Fashion-MNIST", gz=False)
    ff.write_idx(root / "KMNIST", "raw", gz=True)
    ff.write_idx(root, "gzip", emnist="letters", per_class=1)
    ff.write_idx(root, "gzip", emnist="digits", gz=False)
    (root / "gzip" / "emnist-capitals-train-images-idx3-ubyte").write_bytes(b"")  # no EMNIST split
    only_test = ff.write_idx(root, "mnist_test")
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        (only_test.root / name).unlink()
    output = tmp_path / "idx.yaml"
    code, out, err = _init(capsys, root, "-o", output)
    assert code == 0, err
    text = output.read_text()
    config = validate_config(yaml.safe_load(text), "idx.yaml")
    assert {name: (e["format"], e["path"], e["options"]) for name, e in config["datasets"].items()} == {
        "mnist": ("idx", "mnist", {}), "fashion-mnist": ("idx", "Fashion-MNIST", {}),
        "kmnist": ("idx", "KMNIST/raw", {}), "emnist-digits": ("idx", "gzip", {"emnist": "digits"}),
        "emnist-letters": ("idx", "gzip", {"emnist": "letters"}), "mnist-test": ("idx", "mnist_test", {})}
    sources = config["sources"]
    assert {name: (s["n_classes"], s["val_size"], s["image_size"]["vgg13"]) for name, s in sources.items()} == {
        "mnist": (10, 2, 32), "fashion-mnist": (10, 2, 32), "kmnist": (10, 2, 32), "emnist-digits": (10, 2, 32),
        "emnist-letters": (26, 5, 32)}
    # grayscale read as three equal channels: one mean and std for all three
    assert len(set(sources["fashion-mnist"]["normalize"]["mean"])) == 1
    # another source's dataset is a semantic shift; EMNIST's splits share a folder (the same images) and are not
    assert set(sources["mnist"]["ood"]) == {"fashion-mnist", "kmnist", "emnist-digits", "emnist-letters", "mnist-test"}
    assert "emnist-digits" not in sources["emnist-letters"]["ood"]
    assert "emnist-letters" not in sources["emnist-digits"]["ood"]
    assert {e["shift_type"] for s in sources.values() for e in s["ood"].values()} == {"semantic"}
    assert re.search(r"mnist-test\s+idx\s+mnist_test: test 10 -> semantic shift of", out)
    assert "not a source: split 'train' unreadable (file not found (nor train-images-idx3-ubyte.gz))" in out
    assert re.search(r"emnist-letters\s+idx\s+gzip \(EMNIST letters\): train 26, test 26, 26 classes -> source", out)
    assert "  gzip/emnist-capitals-*: looks like format 'idx' but its reader refused it: option emnist must be an " \
           "EMNIST split" in out


def test_a_config_of_format_idx_validates_and_the_schema_lists_every_format():
    config = load_yaml(REPO / "config" / "config.yaml")
    config["datasets"]["digits"] = {"format": "idx", "path": "mnist"}
    config["datasets"]["letters"] = {"format": "idx", "path": "emnist/gzip", "options": {"emnist": "letters"}}
    config["sources"][next(iter(config["sources"]))]["ood"]["letters"] = {"shift_type": "semantic"}
    validated = validate_config(config, "test")
    assert validated["datasets"]["digits"] == {"format": "idx", "path": "mnist", "split": "test", "options": {}}
    enum = schema()["properties"]["datasets"]["additionalProperties"]["properties"]["format"]["enum"]
    assert sorted(enum) == sorted(FORMATS)


def test_labelled_class_folders_with_free_names_are_reported_not_guessed(tmp_path):
    from PIL import Image

    root = tmp_path / "data"
    for split in ("train", "test"):
        for cls in ("cat", "dog"):
            (root / "pets" / split / cls).mkdir(parents=True)
            Image.new("RGB", (12, 10)).save(root / "pets" / split / cls / "0.png")
    ff.write_cifar10(root, n_per_file=20)
    found = scan(root)
    assert [f.name for f in found.found] == ["cifar10"]  # not an unlabelled image folder
    (skipped,) = found.skipped
    assert skipped.path == "pets" and "not WordNet ids" in skipped.reason and "npy layout" in skipped.reason


def _openood_tree(folder):
    """An OpenOOD data/ tree with benchmark `bench`: train (12) and test (10) lists of 3 classes, an OOD test list,
    an OOD validation list, OpenOOD-style covariate list `test_bench_c.txt` and the ID val list."""
    from PIL import Image

    root, images = folder / "data", folder / "data" / "images_classic"
    lists = root / "benchmark_imglist" / "bench"
    lists.mkdir(parents=True)
    content = {"train_bench": [(f"bench/train/{i}.png", i % 3) for i in range(12)],
               "test_bench": [(f"bench/test/{i}.png", i % 3) for i in range(10)],
               "val_bench": [(f"bench/val/{i}.png", i % 3) for i in range(3)],
               "test_bench_c": [(f"bench_c/{i}.png", i % 3) for i in range(4)],
               "test_far": [(f"far/{i}.png", -1) for i in range(5)],
               "val_near": [(f"near/{i}.png", -1) for i in range(2)]}
    for stem, lines in content.items():
        for relative, _ in lines:
            (images / relative).parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (8, 8), (len(relative) * 9 % 255, 30, 60)).save(images / relative)
        (lists / f"{stem}.txt").write_text("".join(f"{p} {label}\n" for p, label in lines))
    return root


def test_an_openood_benchmark_alone_is_a_source_with_its_shifts(tmp_path, capsys):
    _openood_tree(tmp_path)
    code, out, err = _init(capsys, tmp_path / "data", "-o", tmp_path / "o.yaml")
    assert code == 0, err
    config = load_config(tmp_path / "o.yaml")
    assert config["datasets"]["bench"]["options"] == {
        "imglist": {"train": "benchmark_imglist/bench/train_bench.txt", "test": "benchmark_imglist/bench/test_bench.txt"},
        "images": "images_classic"}
    assert (config["sources"]["bench"]["n_classes"], config["sources"]["bench"]["val_size"]) == (3, 2)
    assert {name: e["shift_type"] for name, e in config["sources"]["bench"]["ood"].items()} == \
        {"far": "semantic", "bench-c": "covariate"}
    assert "near" in config["datasets"]  # OpenOOD's OOD validation list: catalogued, not evaluated
    assert "OpenOOD's val list of source 'bench''s own images: not used (csfbench's validation split" in out


def test_an_openood_benchmark_defers_to_the_datasets_own_files(tmp_path):
    import numpy as np

    root = tmp_path / "mine"
    _openood_tree(root)
    written = ff.write_npy(root)  # a source named like the benchmark, from its own files
    written.root.rename(root / "bench")
    for split in ("train", "test"):
        np.save(root / "bench" / split / "labels.npy", np.arange(5) % 2)
    found = scan(root)
    assert [(f.name, f.format) for f in found.sources] == [("bench", "npy")]
    assert any("OpenOOD's train and test lists of benchmark bench: not used" in f.note for f in found.unused)
    assert found.found[[f.name for f in found.found].index("far")].shift_of == {"bench": "semantic"}


def test_the_data_folder_may_be_one_dataset(tmp_path, capsys):
    written = ff.write_svhn(tmp_path, n=20)
    code, _, err = _init(capsys, written.root, "-o", tmp_path / "one.yaml")
    assert code == 0, err
    config = load_config(tmp_path / "one.yaml")
    assert {name: (e["format"], e["path"]) for name, e in config["datasets"].items()} == {"svhn": ("svhn", ".")}
    assert config["sources"]["svhn"]["ood"] == {}


def test_no_source_is_an_error_that_still_reports(tmp_path, capsys):
    ff.write_image_folder(tmp_path / "data" / "photos")
    output = tmp_path / "my.yaml"
    code, out, err = _init(capsys, tmp_path / "data", "-o", output)
    assert code == 2 and not output.exists()
    assert "photos [image_folder]: no source to evaluate it against" in err
    assert "no source found" in err and "official train and test splits" in err


def test_an_existing_config_is_kept_unless_forced(data_root, tmp_path, capsys):
    output = tmp_path / "my.yaml"
    output.write_text("mine\n")
    code, _, err = _init(capsys, data_root, "-o", output)
    assert code == 2 and "exists" in err and output.read_text() == "mine\n"
    code, _, err = _init(capsys, data_root, "-o", output, "--force")
    assert code == 0, err
    load_config(output)


def test_a_missing_data_folder_is_an_error(tmp_path, capsys):
    code, _, err = _init(capsys, tmp_path / "nowhere", "-o", tmp_path / "x.yaml")
    assert code == 2 and "no such data folder" in err


def test_the_own_data_page_covers_every_format_and_the_naming_rule():
    page = (REPO / "docs/own-data.md").read_text()
    for key in FORMATS:
        assert f"`{key}`" in page, key
    assert schema()["definitions"]["name"]["pattern"] in page
    for key in ("--directory", "--configfile", "--report", "split", "resources", "csfbench init"):
        assert key in page


def test_the_own_data_page_shows_the_real_output_of_init(data_root, tmp_path, capsys, monkeypatch):
    """docs/own-data.md's example is this fixture's output, run in /tmp/init-example on its folder `mine`."""
    data_root.rename(tmp_path / "mine")
    monkeypatch.chdir(tmp_path)
    code, out, err = _init(capsys, "mine", "--output", "my.yaml")
    assert code == 0, err
    page = (REPO / "docs/own-data.md").read_text()
    shown = page.split("csfbench init mine --output my.yaml` prints:\n\n```text\n", 1)[1].split("\n```", 1)[0]
    assert out.rstrip("\n").replace(str(tmp_path.resolve()), "/tmp/init-example") == shown
