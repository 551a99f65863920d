"""Hostile data folders for ``csfbench init`` (:mod:`csfbench.cli.init_config`): control characters in folder
names, line breaks in the paths written into the config's comments, broken symbolic links, links out of the
data folder and folder names longer than a dataset name may be.  Each test reproduces one probe of issue 51."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from csfbench.cli import main
from csfbench.cli.init_config import NAME_RULE, scan
from csfbench.workflow.settings import load_config, schema

from tests.helpers import format_fixtures as ff

INJECTED = "analyses: {enabled: true}"
MAX_NAME = schema()["definitions"]["name"]["maxLength"]


def _init(capsys, root: Path, output: Path, *args) -> tuple[int, str, str]:
    code = main(["init", str(root), "--output", str(output), *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def _with_cifar10(root: Path) -> Path:
    ff.write_cifar10(root, n_per_file=20)
    return root


@pytest.mark.parametrize("char", ["\x1b", "\x07", "\x7f", "\x85", "\u2028"])
def test_a_control_character_in_a_folder_name_gives_a_valid_name_and_a_valid_config(tmp_path, capsys, char):
    """Before: the character was copied into the dataset's comment; yaml.reader.ReaderError (ESC) or a
    comment ended early (NEL, U+2028)."""
    root = _with_cifar10(tmp_path / "data")
    ff.write_image_folder(root / f"ph{char}oto")
    code, out, err = _init(capsys, root, tmp_path / "my.yaml")
    assert code == 0, err
    config = load_config(tmp_path / "my.yaml")
    assert config["datasets"]["ph-oto"]["path"] == f"ph{char}oto"  # the real folder, its name escaped in YAML
    assert config["sources"]["cifar10"]["ood"]["ph-oto"]["shift_type"] == "semantic"
    text = (tmp_path / "my.yaml").read_text(encoding="utf-8")
    assert char not in text and char not in out  # written as its escape, in the file and in the report
    assert f"ph{repr(char)[1:-1]}oto" in out


def test_a_folder_name_that_is_not_utf8_is_skipped_with_a_message(tmp_path, capsys):
    """Before: yaml.reader.ReaderError (#xdcff) on the generated text."""
    root = _with_cifar10(tmp_path / "data")
    ff.write_image_folder(Path(os.fsdecode(os.fsencode(root) + b"/ph\xffoto")))
    code, out, err = _init(capsys, root, tmp_path / "my.yaml")
    assert code == 0, err
    assert list(load_config(tmp_path / "my.yaml")["datasets"]) == ["cifar10"]
    assert "ph\\udcffoto: its path is not UTF-8 text, which a config cannot hold: skipped (rename it)" in out


@pytest.mark.parametrize("where", ["data_root", "results", "output"])
def test_a_line_break_in_a_path_cannot_inject_config(tmp_path, capsys, where):
    """Before: the data root's newline ended the header comment, and `analyses: {enabled: true}` was written
    and validated.  The config must be the one of the same data without the line break."""
    hostile = f"x\n{INJECTED}\n#"
    plain_root, plain_out = _with_cifar10(tmp_path / "plain" / "data"), tmp_path / "plain" / "my.yaml"
    code, _, err = _init(capsys, plain_root, plain_out, "--results", tmp_path / "run")
    assert code == 0, err
    root = _with_cifar10(tmp_path / (hostile if where == "data_root" else "data"))
    output = tmp_path / ("out" + hostile + ".yaml" if where == "output" else "my.yaml")
    results = tmp_path / ("run" + hostile if where == "results" else "run")
    code, out, err = _init(capsys, root, output, "--results", results)
    assert code == 0, err
    text = output.read_text(encoding="utf-8")
    config, plain = yaml.safe_load(text), yaml.safe_load(plain_out.read_text(encoding="utf-8"))
    assert config.pop("data_root") == str(root.resolve()) and plain.pop("data_root") == str(plain_root.resolve())
    assert config == plain and "analyses" not in config
    assert "x\\nanalyses: {enabled: true}\\n#" in text  # the path, escaped, in its comment
    assert not any(line.startswith(INJECTED) for line in text.splitlines() + out.splitlines())


def _link_loop(root: Path) -> list[str]:
    os.symlink("loop", root / "loop")
    return ["loop: a symbolic link loop (to loop): skipped"]


def _two_link_loop(root: Path) -> list[str]:
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    return ["a: a symbolic link loop (to b): skipped", "b: a symbolic link loop (to a): skipped"]


def _dangling(root: Path) -> list[str]:
    os.symlink("nowhere", root / "gone")
    return ["gone: a dangling symbolic link (to nowhere): skipped"]


@pytest.mark.parametrize("make_link", [_link_loop, _two_link_loop, _dangling])
@pytest.mark.parametrize("level", ["data root", "dataset group"])
def test_a_broken_link_is_skipped_with_a_warning_and_the_scan_goes_on(tmp_path, make_link, level):
    """Before: a loop in the data folder (or in a folder grouping datasets) made the whole folder unreadable
    ("no source found" beside a valid CIFAR-10); a dangling link was "a file directly in the data folder"."""
    root = _with_cifar10(tmp_path / "data")
    ff.write_svhn(root / "ood", n=10)  # makes ood/ a group of datasets
    ff.write_image_folder(root / "ood" / "isun")
    folder = root if level == "data root" else root / "ood"
    warnings = make_link(folder)
    found = scan(root)
    assert {f.name for f in found.found} == {"cifar10", "svhn", "isun"}
    links = [f"{s.path}: {s.reason}" for s in found.skipped if s.link]
    prefix = "" if level == "data root" else "ood/"
    assert links == [prefix + warning for warning in warnings]
    assert not [s for s in found.skipped if not s.link]


def test_a_broken_link_inside_a_dataset_folder_leaves_the_dataset_readable(tmp_path):
    """Before: ``cannot be read (OSError: Too many levels of symbolic links)`` for the data folder itself."""
    root = _with_cifar10(tmp_path / "data")
    os.symlink("loop", root / "cifar-10-batches-py" / "loop")
    assert [f.name for f in scan(root).sources] == ["cifar10"]
    assert [f.name for f in scan(root / "cifar-10-batches-py").sources] == ["cifar10"]  # the data folder as one


@pytest.mark.parametrize("level", ["data root", "dataset group"])
def test_links_out_of_the_data_folder_are_not_followed(tmp_path, capsys, level):
    """Before: a link to an image folder elsewhere was proposed as an evaluation set."""
    outside = tmp_path / "elsewhere"
    ff.write_image_folder(outside / "photos")
    root = _with_cifar10(tmp_path / "data")
    ff.write_svhn(root / "ood", n=10)
    folder = root if level == "data root" else root / "ood"
    os.symlink(outside / "photos", folder / "photos")
    ff.write_image_folder(root / "mine")
    os.symlink(root / "mine", folder / "inside")  # a link within the data folder is followed
    code, out, err = _init(capsys, root, tmp_path / "my.yaml")
    assert code == 0, err
    datasets = load_config(tmp_path / "my.yaml")["datasets"]
    assert "photos" not in datasets and {"inside", "mine", "svhn"} <= set(datasets)
    prefix = "" if level == "data root" else "ood/"
    assert (f"  {prefix}photos: a symbolic link to {outside / 'photos'}, outside the data folder: not followed"
            in out)
    assert "symbolic links not followed (1):" in out


def test_long_folder_names_become_short_unique_valid_names(tmp_path, capsys):
    """Before: a 250-character name was proposed; the generated config was refused (maxLength 64)."""
    root = _with_cifar10(tmp_path / "data")
    long = "Places365_" + "very_long_" * 24  # 250 characters
    for suffix in ("a", "b"):  # the two names differ only after the 64th character
        ff.write_image_folder(root / f"{long}{suffix}")
    code, out, err = _init(capsys, root, tmp_path / "my.yaml")
    assert code == 0, err
    names = [name for name in load_config(tmp_path / "my.yaml")["datasets"] if name != "cifar10"]
    assert len(names) == 2 and len(set(names)) == 2
    assert all(len(name) <= MAX_NAME and NAME_RULE.fullmatch(name) for name in names)
    assert names[0].startswith("places365-very-long-very-long") and names[1] == names[0][:MAX_NAME - 2] + "-2"
