"""Artifact manifest: sha256 content hashes of a run's results with their provenance.

``write_manifest`` records, for every result file (trained weights and histories, the demo's
pretrained ViT, feature files, CSF fits, scores, metric files, the results table and ``tables/``),
a sha256 digest, and once for the run: the config hash, the git commit and the versions of the
packages that decide the numbers.  ``verify_manifest`` recomputes the digests and names every file
that was modified, is missing, was not in the manifest, or can no longer be read (every file is
checked: an unreadable one is listed with the reason, not the end of the check).

**What is hashed: the content, not the bytes.**  Some result files carry values that change from one
identical run to the next although no number changes: HDF5 files hold a ``created`` time stamp (and
the git commit / package version, which are provenance, recorded once in the manifest instead),
``torch.save`` writes a random serialization id into every checkpoint, and ``history.csv`` has the
wall time of each epoch.  Making every writer byte-deterministic would mean dropping the creation
time from the HDF5 contract and patching torch's writer, so the digests are taken over a canonical
serialisation of the content instead:

* HDF5 (``.h5``): every group and dataset in name order: its path, attributes (sorted, less
  :data:`VOLATILE_ATTRS`) and, for datasets, dtype, shape and values (read in row blocks);
  chunking and compression do not enter the digest.
* PyTorch weights (``.pt``, loaded with ``weights_only=True``) and ``.safetensors``: every tensor by
  name: dtype, shape and raw bytes.
* Tables (``.parquet``, ``.csv``): column names, dtypes and values in order, less the timing
  columns of :data:`VOLATILE_COLUMNS`.
* Anything else (``.json``, ``.tex``, ...): the file's bytes.

Figures and the HTML report are not listed: they are drawn from the hashed tables, and PDF files
embed their creation date.

Two runs with the same config, code and package versions on CPU give identical manifests; on GPU see
the README ("Reproducibility").
"""
from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

import h5py
import numpy as np

from csfbench.workflow import paths
from csfbench.atomic import write_json
from csfbench.errors import CheckpointError, CsfbenchError
from csfbench.provenance import git_commit

FORMAT = "csfbench-manifest/1"
# result files under the results folder, as glob patterns relative to it
RESULT_PATTERNS = paths.MANIFEST_PATTERNS
VOLATILE_ATTRS = frozenset({"created", "git_commit", "package_version"})
VOLATILE_COLUMNS = {"history.csv": frozenset({"seconds"})}
PACKAGES = ("csfbench", "torch", "torchvision", "timm", "numpy", "scipy", "pandas", "pyarrow", "h5py",
            "scikit-learn", "safetensors", "bayesian-optimization", "snakemake")
ROW_BLOCK = 65536


class ManifestError(CsfbenchError):
    """A manifest that cannot be written or read (missing folder or file, wrong format)."""


class UnreadableFileError(ManifestError):
    """A result file whose content cannot be read for its digest: names the file and the reason."""

    def __init__(self, path: Path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


# ---------------------------------------------------------------------------------------------
# canonical content digests
# ---------------------------------------------------------------------------------------------

def _update_array(h, values: np.ndarray) -> None:
    """Digest dtype, shape and values of an array (strings as NUL-separated UTF-8)."""
    values = np.asarray(values)
    h.update(f"{values.dtype.kind}{values.dtype.itemsize}{values.shape}".encode())
    if values.dtype.kind in "OSU":
        items = (v if isinstance(v, bytes) else str(v).encode() for v in values.reshape(-1))
        h.update(b"\0".join(items))
    else:
        h.update(np.ascontiguousarray(values).tobytes())


def _update_attrs(h, attrs: h5py.AttributeManager) -> None:
    for key in sorted(k for k in attrs if k not in VOLATILE_ATTRS):
        h.update(f"@{key}=".encode())
        _update_array(h, attrs[key])


def _hdf5_digest(path: Path) -> str:
    h = hashlib.sha256()

    def visit(name: str, obj) -> None:
        h.update(f"/{name}".encode())
        _update_attrs(h, obj.attrs)
        if isinstance(obj, h5py.Dataset):
            data = obj.asstr() if h5py.check_string_dtype(obj.dtype) else obj
            if obj.shape == ():
                _update_array(h, data[()])
                return
            step = obj.chunks[0] if obj.chunks else ROW_BLOCK
            for start in range(0, obj.shape[0], step):
                _update_array(h, data[start:start + step])

    with h5py.File(path, "r", locking=False) as fh:
        _update_attrs(h, fh.attrs)
        fh.visititems(visit)
    return h.hexdigest()


def _tensors_digest(tensors: dict) -> str:
    import torch

    h = hashlib.sha256()
    for key in sorted(tensors):
        value = tensors[key]
        h.update(f"{key}:".encode())
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"entry '{key}' is a {type(value).__name__}, expected a tensor (weights only)")
        t = value.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _torch_digest(path: Path) -> str:
    from csfbench.torch_compat import load_weights

    state = load_weights(path)
    if not isinstance(state, dict):
        raise ValueError(f"expected a state dict of tensors, found a {type(state).__name__}")
    return _tensors_digest(state)


def _safetensors_digest(path: Path) -> str:
    from safetensors.torch import load_file

    return _tensors_digest(load_file(str(path)))


def _table_digest(path: Path) -> str:
    import pandas as pd

    table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    table = table.drop(columns=[c for c in VOLATILE_COLUMNS.get(path.name, ()) if c in table])
    h = hashlib.sha256()
    for name in table.columns:
        column = table[name]
        h.update(f"|{name}:{column.dtype}".encode())
        values = column.to_numpy()
        _update_array(h, values if values.dtype.kind in "biufcmM" else values.astype(object))
    return h.hexdigest()


def _bytes_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


DIGESTS: dict[str, tuple[str, Callable[[Path], str]]] = {
    ".h5": ("hdf5-content", _hdf5_digest),
    ".pt": ("torch-tensors", _torch_digest),
    ".safetensors": ("torch-tensors", _safetensors_digest),
    ".parquet": ("table", _table_digest),
    ".csv": ("table", _table_digest),
}


def file_digest(path: str | Path) -> tuple[str, str]:
    """(kind, sha256 hex digest) of one result file's content; see the module docstring.

    Any failure to read the file (torch, h5py, pyarrow, pandas or the OS) raises
    :class:`UnreadableFileError` naming the file and the reason."""
    path = Path(path)
    kind, digest = DIGESTS.get(path.suffix, ("bytes", _bytes_digest))
    try:
        return kind, digest(path)
    except CheckpointError as err:
        raise UnreadableFileError(path, err.problem) from None
    except Exception as err:  # a tampered file can make any reader fail in its own way
        raise UnreadableFileError(path, f"cannot read it as {kind}: {type(err).__name__}: {err}") from None


# ---------------------------------------------------------------------------------------------
# manifest
# ---------------------------------------------------------------------------------------------

def result_files(results: str | Path) -> list[str]:
    """Result files under ``results`` (paths relative to it, sorted); hidden temporary files are skipped."""
    results = Path(results)
    if not results.is_dir():
        raise ManifestError(f"results folder not found: {results}")
    found = {p.relative_to(results).as_posix() for pattern in RESULT_PATTERNS for p in results.glob(pattern)
             if p.is_file() and not any(part.startswith(".") for part in p.relative_to(results).parts)}
    return sorted(found)


def config_hash(config_path: str | Path) -> str:
    """sha256 of the config's canonical JSON (key order, comments and formatting do not matter)."""
    from csfbench.workflow.settings import load_yaml

    path = Path(config_path)
    if not path.is_file():
        raise ManifestError(f"config file not found: {path}")
    return hashlib.sha256(json.dumps(load_yaml(path), sort_keys=True).encode()).hexdigest()


def provenance(config_path: str | Path) -> dict:
    """Config hash, git commit, Python, package versions and the torch build (CUDA / cuDNN)."""
    import torch

    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    return {"config_file": str(config_path), "config_hash": config_hash(config_path), "git_commit": git_commit(),
            "python": platform.python_version(), "packages": packages,
            "torch_cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}


def build_manifest(results: str | Path, config_path: str | Path) -> dict:
    """The manifest of ``results`` (see the module docstring for what is hashed)."""
    results = Path(results)
    files = {}
    for rel in result_files(results):
        kind, digest = file_digest(results / rel)
        files[rel] = {"hash": kind, "sha256": digest}
    return {"format": FORMAT, "provenance": provenance(config_path), "files": files}


def write_manifest(results: str | Path, config_path: str | Path, output: str | Path) -> dict:
    """Build the manifest of ``results`` and write it as JSON to ``output`` (atomically)."""
    manifest = build_manifest(results, config_path)
    write_json(manifest, output, indent=1, sort_keys=True)
    return manifest


def read_manifest(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"manifest not found: {path} (write one with `csfbench manifest write`)")
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as err:  # JSON and UTF-8 decoding errors are ValueErrors
        raise ManifestError(f"{path}: not a readable JSON manifest ({err})") from err
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise ManifestError(f"{path}: expected a manifest of format {FORMAT!r}, found {found!r}")
    bad = [rel for rel, entry in files.items() if not isinstance(entry, dict) or "sha256" not in entry]
    if bad:
        raise ManifestError(f"{path}: entries without a 'sha256' digest: {bad[:5]}")
    return manifest


@dataclass
class Verification:
    """Files that differ from a manifest (paths relative to the results folder)."""

    checked: int = 0
    modified: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)  # path -> why its content cannot be read

    @property
    def ok(self) -> bool:
        return not (self.modified or self.missing or self.extra or self.unreadable)

    def lines(self, results: Path) -> list[str]:
        out = [f"{what}: {results / rel}" for what, paths in
               (("modified", self.modified), ("missing", self.missing), ("not in manifest", self.extra))
               for rel in paths]
        out += [f"unreadable: {results / rel} ({reason})" for rel, reason in self.unreadable.items()]
        return out + [f"{self.checked} files checked: " + ("all match" if self.ok else f"{len(out)} differ")]


def verify_manifest(results: str | Path, manifest_path: str | Path) -> Verification:
    """Recompute the digests of ``results`` and compare them with the manifest at ``manifest_path``."""
    results = Path(results)
    expected = read_manifest(manifest_path)["files"]
    present = set(result_files(results))
    report = Verification(extra=sorted(present - set(expected)))
    for rel, entry in sorted(expected.items()):
        if rel not in present:
            report.missing.append(rel)
            continue
        report.checked += 1
        try:
            digest = file_digest(results / rel)[1]
        except UnreadableFileError as err:
            report.unreadable[rel] = err.reason
            continue
        if digest != entry["sha256"]:
            report.modified.append(rel)
    return report


def provenance_differences(manifest_path: str | Path, config_path: str | Path) -> list[str]:
    """Provenance entries (config hash, commit, versions) that differ from the current environment."""
    recorded = read_manifest(manifest_path)["provenance"]
    now = provenance(config_path)
    out = []
    for key in sorted(set(recorded) | set(now)):
        if key == "config_file":
            continue
        if key == "packages":
            for name in sorted(set(recorded.get(key, {})) | set(now[key])):
                old, new = recorded.get(key, {}).get(name), now[key].get(name)
                if old != new:
                    out.append(f"{name}: manifest {old}, now {new}")
        elif recorded.get(key) != now.get(key):
            out.append(f"{key}: manifest {recorded.get(key)}, now {now.get(key)}")
    return out
