"""Provenance: the attributes stamped on every artifact (package version, git commit, time) and the sha256 of
the pretrained weights files the models load.

The weights files a config's models load (:func:`weights_files`) are read from outside the results folder and
are not Snakemake inputs, so their content is recorded here, once: rule ``weights_provenance`` writes the
digests the models were built from (:func:`write_weights_record`, ``results/models/weights.json``), which the
report's run description shows (:func:`report_weights`), and the manifest's provenance records the digests of
the files at the time it is written (:func:`weights_provenance`), so that ``manifest verify --config`` names a
weights file that changed since.
"""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from csfbench.atomic import write_json
from csfbench.errors import CsfbenchError

_REPO = Path(__file__).resolve().parents[2]


def package_version() -> str:
    try:
        return version("csfbench")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The commit of the checkout the package runs from (``+dirty`` if modified), or ``unknown``."""
    try:
        commit = subprocess.run(["git", "-C", str(_REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(_REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def file_sha256(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# pretrained weights files
# ---------------------------------------------------------------------------------------------

def weights_key(config: dict, backbone: str, paradigm: str) -> str | None:
    """The key path of the weights file a model of ``backbone`` and ``paradigm`` loads, or None: the ViT
    starts from ``backbones/vit/pretrained/file``; a timm or torchvision backbone of paradigm ``pretrained``
    loads ``backbones/<name>/weights/file`` (paradigm ``random`` loads none, nor does VGG-13)."""
    bcfg = config["backbones"][backbone]
    if "library" in bcfg:
        return f"backbones/{backbone}/weights/file" if paradigm == "pretrained" else None
    return "backbones/vit/pretrained/file" if backbone == "vit" else None


def weights_files(config: dict) -> dict[str, str]:
    """Every weights file the config's models load: {key path: the file as the config names it (relative to the
    run folder, or absolute)}.  ``config`` is a config file's content, validated or not (the manifest reads the
    file as it is; one without backbones names no weights file)."""
    out = {}
    for backbone, bcfg in config.get("backbones", {}).items():
        for paradigm in bcfg.get("paradigms", ()):
            key = weights_key(config, backbone, paradigm)
            if key is not None:
                node = config
                for part in key.split("/"):
                    node = node[part]
                out[key] = node
    return out


def weights_provenance(config: dict, root: str | Path = ".") -> dict[str, dict]:
    """{key path: {"file": as the config names it, "sha256": its digest, or None where no such file is}} of
    :func:`weights_files`; a relative file is looked up under ``root``, the run folder (the working directory of
    the workflow: ``snakemake --directory``)."""
    out = {}
    for key, file in weights_files(config).items():
        path = Path(root) / file
        out[key] = {"file": file, "sha256": file_sha256(path) if path.is_file() else None}
    return out


def write_weights_record(config: dict, output: str | Path) -> dict[str, dict]:
    """Write the :func:`weights_provenance` of the working directory to ``output`` (rule ``weights_provenance``,
    after the models that load the files were built); a weights file that is not there is a CsfbenchError
    naming it and its key path."""
    record = weights_provenance(config)
    missing = [f"{entry['file']} ({key})" for key, entry in record.items() if entry["sha256"] is None]
    if missing:
        raise CsfbenchError(f"weights file(s) not found: {', '.join(missing)}; the models were built from them, "
                            "restore the file(s) or rerun the models")
    write_json(record, output, indent=1, sort_keys=True)
    return record


def report_weights(config: dict, record: str | Path) -> dict[str, dict]:
    """The weights files of ``config`` with the sha256 ``record`` (:func:`write_weights_record`) holds for them,
    for the report's run description: {key path: {"file": ..., "sha256": hex, or None while the run has not
    recorded that file}}.  A record that cannot be read is a CsfbenchError naming it."""
    record = Path(record)
    recorded = {}
    if record.is_file():
        try:
            recorded = json.loads(record.read_text())
        except (OSError, ValueError) as err:
            raise CsfbenchError(f"{record}: not a readable weights record ({err}); remove it and the workflow "
                                "writes it again") from err
    out = {}
    for key, file in weights_files(config).items():
        entry = recorded.get(key) if isinstance(recorded, dict) else None
        same = isinstance(entry, dict) and entry.get("file") == file
        out[key] = {"file": file, "sha256": entry.get("sha256") if same else None}
    return out
