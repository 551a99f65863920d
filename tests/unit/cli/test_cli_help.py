"""The ``csfbench`` command line's help, ``--version``, and a closed stdout pipe (issue 51)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib.metadata import version

import numpy as np
import pytest

from csfbench.cli import EXIT_BROKEN_PIPE, build_parser, main
from csfbench.features.extract import feature_attrs
from csfbench.features.store import FeatureWriter

from tests.helpers.training import tiny_spec

# what the installed console script runs (`csfbench = "csfbench.cli:main"`)
CONSOLE_SCRIPT = "import sys; from csfbench.cli import main; sys.exit(main())"


def _parsers(parser: argparse.ArgumentParser, name: str = "csfbench"):
    """(command line, parser) of ``parser`` and of every subcommand below it."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def _actions():
    """(command line, option or positional name, action) of every argument of every (sub)command."""
    for name, parser in _parsers(build_parser()):
        for action in parser._actions:
            yield name, "/".join(action.option_strings) or action.dest, action
            if isinstance(action, argparse._SubParsersAction):
                yield from ((name, f"subcommand {choice.dest}", choice) for choice in action._choices_actions)


def test_the_walk_reaches_every_subcommand():
    names = {name for name, _ in _parsers(build_parser())}
    assert names == {"csfbench"} | {f"csfbench {command}" for command in
                                    ("init", "formats", "validate", "inspect", "summary", "rank", "manifest",
                                     "reproduce")}


def test_every_subcommand_and_argument_has_help():
    missing = [f"{name}: {arg}" for name, arg, action in _actions()
               if not (action.help or "").strip() or action.help == argparse.SUPPRESS]
    assert not missing, f"arguments without help: {missing}"


def test_every_default_is_shown():
    """An argument with a default other than None or False (a flag) says it in its help."""
    hidden = [f"{name}: {arg} (default {action.default!r})" for name, arg, action in _actions()
              if action.default not in (None, False, argparse.SUPPRESS)
              and "(default: " not in (action.help or "")]
    assert not hidden, f"defaults not shown in the help: {hidden}"


@pytest.mark.parametrize("name", [name for name, _ in _parsers(build_parser())])
def test_help_of_every_command_renders_without_markup(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*name.split()[1:], "--help"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 0 and err == ""
    assert out.startswith(f"usage: {name} ")
    assert "`" not in out  # no reST ``literals`` (nor Markdown ones) shown as typed


def test_version_is_the_installed_package_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"csfbench {version('csfbench')}\n"


@pytest.fixture(scope="module")
def feature_file(tmp_path_factory):
    """A small valid feature file (the tiny model's test set), as the extraction stage writes it."""
    tmp = tmp_path_factory.mktemp("inspect")
    spec = tiny_spec(tmp / "blobs")
    n, rng = 8, np.random.default_rng(0)
    logits = rng.normal(size=(n, 5)).astype("f4")  # Deep Gamblers: 4 classes + the abstention output
    labels = rng.integers(0, 4, n)
    rows = {"logits": logits, "features": rng.normal(size=(n, 4)).astype("f4"), "labels": labels,
            "pred": logits[:, :4].argmax(1), "sample_id": np.array([f"img/{i}.png" for i in range(n)], object),
            "confidence": rng.random(n).astype("f4")}
    rows["correct"] = rows["pred"] == labels
    path = tmp / "test.h5"
    attrs = feature_attrs(spec, "test", "test", "id", feature_dim=4)
    with FeatureWriter(path, n, n_outputs=5, feature_dim=4, mcd_samples=0, has_confidence=True, attrs=attrs) as w:
        w.write_batch(rows)
    return path


def _run_into_closed_pipe(argv: list[str], unbuffered: bool) -> subprocess.CompletedProcess:
    """Run the console script with a stdout pipe whose reader has already gone (what `| head -c 1` leaves)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"  # each print fails at once, not at the final flush
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-c", CONSOLE_SCRIPT, *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("command", ["inspect", "formats", "--help"])
def test_a_closed_pipe_exits_quietly(command, unbuffered, feature_file):
    argv = [command, str(feature_file)] if command == "inspect" else [command]
    result = _run_into_closed_pipe(argv, unbuffered)
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
    # argparse ignores a failed write of its own help (status 0) unless the write is left to the final flush
    expected = {0, EXIT_BROKEN_PIPE} if command == "--help" else {EXIT_BROKEN_PIPE}
    assert result.returncode in expected


def test_inspect_still_writes_to_an_open_pipe(feature_file):
    result = subprocess.run([sys.executable, "-c", CONSOLE_SCRIPT, "inspect", str(feature_file)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{feature_file}\n") and "accuracy = " in result.stdout
