"""Artifact manifest: sha256 content hashes of a run's results with their provenance.

``write_manifest`` records, for every result file (trained weights and histories, the demo's
pretrained ViT, feature files, CSF fits, scores, metric files, the results table and ``tables/``),
a sha256 digest, and once for the run: the config hash, the git commit, the versions of the
packages that decide the numbers and the sha256 of every pretrained weights file the config's models
load (``provenance.weights``: path as the config names it, digest of its bytes, null where the file is
not found; :func:`csfbench.provenance.weights_provenance`).  ``verify_manifest`` recomputes the
digests and names every file that was modified, is missing, was not in the manifest, or can no longer
be read (every file is checked: an unreadable one is listed with the reason, not the end of the check).

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

**Bytes the readers skip count too.**  h5py reads an HDF5 file only up to the end-of-file address its
superblock records (and from the superblock on), and torch reads a checkpoint's zip archive from its
end-of-central-directory record: bytes appended after those ends, or written before an HDF5 superblock
(a user block), are invisible to the content above.  Such bytes (csfbench never writes any) enter the
digest as they are (:func:`outside_bytes`), so appending to a result file makes it *modified*; a file
without them keeps the digest of its content alone, as manifests written before this check recorded.

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
from csfbench.provenance import file_sha256, git_commit, weights_provenance

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


# ---------------------------------------------------------------------------------------------
# bytes outside what a reader reads
# ---------------------------------------------------------------------------------------------

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
ZIP_END_SIGNATURE = b"PK\x05\x06"  # end of central directory record: 22 bytes, then its comment
ZIP_END_SEARCH = 22 + 0xFFFF  # the record and the longest comment it can announce


def _hdf5_extent(path: Path) -> tuple[int, int]:
    """(first, end) byte offsets of the HDF5 file proper: its superblock and its end-of-file address.

    The superblock is found where the HDF5 library looks for it (offset 0, 512, 1024, 2048, ...); its
    end-of-file address is relative to its base address, which the library moves to where the superblock
    was found (HDF5 file format specification, "Superblock"; versions 0-1 and 2-3 differ in layout)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        first = 0
        while True:
            fh.seek(first)
            if fh.read(8) == HDF5_SIGNATURE:
                break
            first = 512 if first == 0 else 2 * first
            if first + 8 > size:
                raise ValueError("no HDF5 superblock signature")
        version = fh.read(1)[0]
        if version in (0, 1):
            fields = fh.read(15 + (4 if version == 1 else 0))  # versions, sizes, B-tree K values, flags
            offset_size = fields[4]
            n_addresses, eof_index = 4, 2  # base, free-space info, end of file, driver info
        elif version in (2, 3):
            offset_size = fh.read(3)[0]  # sizes of offsets and lengths, flags
            n_addresses, eof_index = 3, 2  # base, superblock extension, end of file
        else:
            raise ValueError(f"HDF5 superblock version {version} (expected 0-3)")
        raw = fh.read(n_addresses * offset_size)
    addresses = [int.from_bytes(raw[i * offset_size:(i + 1) * offset_size], "little") for i in range(n_addresses)]
    return first, first + addresses[eof_index] - addresses[0]


def _zip_extent(path: Path) -> tuple[int, int] | None:
    """(0, end) of a zip archive (``torch.save``'s format): the end of its end-of-central-directory record
    and comment; None for a file that is not a zip archive (a legacy pickle checkpoint)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - ZIP_END_SEARCH))
        tail = fh.read()
    record = tail.rfind(ZIP_END_SIGNATURE)
    if record < 0 or record + 22 > len(tail):
        return None
    comment = int.from_bytes(tail[record + 20:record + 22], "little")
    return 0, size - len(tail) + record + 22 + comment


#: the byte range a format's reader reads, for the formats whose readers skip bytes outside it
EXTENTS: dict[str, Callable[[Path], tuple[int, int] | None]] = {".h5": _hdf5_extent, ".pt": _zip_extent}


def outside_bytes(path: str | Path) -> list[tuple[int, int]]:
    """The (start, end) byte ranges of ``path`` that its format's reader skips (see the module docstring):
    a user block before an HDF5 superblock, bytes after an HDF5 file's end-of-file address or after a zip
    archive's end record.  Empty for a file as csfbench writes it and for the other formats."""
    path = Path(path)
    extent = EXTENTS[path.suffix](path) if path.suffix in EXTENTS else None
    if extent is None:
        return []
    size = path.stat().st_size
    first, end = extent
    return [(start, stop) for start, stop in ((0, first), (min(end, size), size)) if stop > start]


def _with_outside_bytes(digest: str, path: Path) -> str:
    """``digest`` of the content, extended by the bytes outside it (unchanged when there are none)."""
    ranges = outside_bytes(path)
    if not ranges:
        return digest
    h = hashlib.sha256(f"{digest}|outside {ranges}".encode())
    with open(path, "rb") as fh:
        for start, stop in ranges:
            fh.seek(start)
            for block in iter(lambda: fh.read(min(1 << 20, stop - fh.tell())), b""):
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
    """(kind, sha256 hex digest) of one result file's content, and of any bytes its reader skips; see the
    module docstring.

    Any failure to read the file (torch, h5py, pyarrow, pandas or the OS) raises
    :class:`UnreadableFileError` naming the file and the reason."""
    path = Path(path)
    kind, digest = DIGESTS.get(path.suffix, ("bytes", file_sha256))
    try:
        return kind, _with_outside_bytes(digest(path), path)
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


def _read_config(config_path: str | Path) -> dict:
    """The content of a config file as it is (not validated: a manifest records the run's file)."""
    from csfbench.workflow.settings import load_yaml

    path = Path(config_path)
    if not path.is_file():
        raise ManifestError(f"config file not found: {path}")
    config = load_yaml(path)
    if not isinstance(config, dict):
        raise ManifestError(f"{path}: expected a config (a mapping), found {type(config).__name__}")
    return config


def config_hash(config: dict) -> str:
    """sha256 of a config's canonical JSON (key order, comments and formatting do not matter)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def provenance(config_path: str | Path, run_folder: str | Path) -> dict:
    """Config hash, git commit, Python, package versions, the torch build (CUDA / cuDNN) and the sha256 of every
    pretrained weights file the config's models load (:func:`csfbench.provenance.weights_provenance`; relative
    paths are taken in ``run_folder``, the workflow's working directory, which holds ``results/``)."""
    import torch

    config = _read_config(config_path)
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    return {"config_file": str(config_path), "config_hash": config_hash(config), "git_commit": git_commit(),
            "python": platform.python_version(), "packages": packages,
            "torch_cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "weights": weights_provenance(config, run_folder)}


def build_manifest(results: str | Path, config_path: str | Path) -> dict:
    """The manifest of ``results`` (see the module docstring for what is hashed)."""
    results = Path(results)
    files = {}
    for rel in result_files(results):
        kind, digest = file_digest(results / rel)
        files[rel] = {"hash": kind, "sha256": digest}
    return {"format": FORMAT, "provenance": provenance(config_path, results.parent), "files": files}


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


def _weights_text(entry: dict | None) -> str:
    """A weights entry of the provenance as a verify line shows it."""
    if not entry:
        return "not recorded"
    return f"{entry['file']} sha256 {entry['sha256']}" if entry["sha256"] else f"{entry['file']} (not found)"


def provenance_differences(manifest_path: str | Path, config_path: str | Path, run_folder: str | Path) -> list[str]:
    """Provenance entries (config hash, commit, versions, weights files) that differ from the current environment
    (weights files looked up in ``run_folder``, see :func:`provenance`)."""
    recorded = read_manifest(manifest_path)["provenance"]
    now = provenance(config_path, run_folder)
    out = []
    for key in sorted(set(recorded) | set(now)):
        if key == "config_file":
            continue
        if key in ("packages", "weights"):  # one line per package, per weights file
            describe, prefix = (_weights_text, "weights ") if key == "weights" else (str, "")
            old_items, new_items = recorded.get(key) or {}, now[key]
            for name in sorted(set(old_items) | set(new_items)):
                old, new = old_items.get(name), new_items.get(name)
                if old != new:
                    out.append(f"{prefix}{name}: manifest {describe(old)}, now {describe(new)}")
        elif recorded.get(key) != now.get(key):
            out.append(f"{key}: manifest {recorded.get(key)}, now {now.get(key)}")
    return out
