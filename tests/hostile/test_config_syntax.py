"""A config file that is not YAML text: `csfbench validate` (which `make run` and `make demo` call before Snakemake)
names the file, the line and column and the problem in one line, exit status 2, no traceback.

Probes (before): ``snakemake --configfile bad.yaml`` says "Config file is not valid JSON or YAML" with neither file
nor line, and ``make demo`` ran Snakemake without validating first; a binary file that decodes as UTF-8 (NUL or
other control characters) gave a two-line message with a character offset instead of a line and column.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from csfbench import cli
from csfbench.workflow.config_file import describe_yaml_error
from tests.helpers.repo import REPO


def _describe(path):
    """What the config reader (csfbench.workflow.settings.load_yaml) gets from PyYAML for ``path``, described."""
    with open(path, encoding="utf-8") as fh:
        try:
            yaml.safe_load(fh)
        except yaml.YAMLError as err:
            return describe_yaml_error(err, path)
    raise AssertionError(f"{path} is valid YAML")


@pytest.mark.parametrize("content, where, problem", [
    (b"seed: 1\ndata_root: a\x00b\n", "line 2, column 13",
     "binary content: character #x0000 (special characters are not allowed; not YAML text)"),
    (b"\x00" * 64, "line 1, column 1", "binary content: character #x0000"),
    (b"seed: 1\n  x: \x1b[0m\n", "line 2, column 6", "binary content: character #x001b"),
    (b"sources:\n  a: [1, 2\n  b: 3\n", "line 3, column 4", "while parsing a flow sequence, expected ',' or ']'"),
], ids=["nul-in-a-value", "zeros", "escape-sequence", "syntax"])
def test_a_yaml_error_is_one_line_with_its_line_and_column(tmp_path, content, where, problem):
    path = tmp_path / "my.yaml"
    path.write_bytes(content)
    found_where, found_problem = _describe(path)
    assert found_where == where
    assert found_problem.startswith(problem) and "\n" not in found_problem


@pytest.mark.parametrize("content, message", [
    (b"\x89HDF\r\n\x1a\n\x00\x00", "not a valid YAML config: binary content (not UTF-8 text) at byte 0"),
    (b"- a\n- b\n", "invalid value at '<top level>': expected a mapping of sections (see config/README.md), "
                    "found 'list'"),
    (b"", "expected a mapping of sections (see config/README.md), found 'nothing (an empty file)'"),
    (b"seed: [1,\n", "line 2, column 1: not a valid YAML config: while parsing a flow node"),
], ids=["hdf5-file", "a-list", "empty", "unclosed"])
def test_csfbench_validate_answers_in_one_line_with_status_2(tmp_path, capsys, content, message):
    path = tmp_path / "my.yaml"
    path.write_bytes(content)
    assert cli.main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"csfbench: error: {path}") and message in err


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_make_run_shows_the_validation_error_and_does_not_start_snakemake(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("seed: 1\nsources: {a: [1, 2}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make", "-C", str(REPO), "-o", "setup", "run", f"CONFIG={config}",
                           f"RESULTS={tmp_path / 'run'}"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0
    assert f"csfbench: error: {config}, line 2, column 19: not a valid YAML config: " in proc.stderr
    assert "Traceback" not in proc.stderr and "snakemake" not in proc.stdout.split("csfbench validate", 1)[1]
    assert not (tmp_path / "run").exists()
