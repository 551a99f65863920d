"""The run folder of a config: the workflow's working directory (``snakemake --directory``), which holds its
``results/`` and ``.snakemake/``.

``make run`` writes a config's run into a folder of its own (``runs/<config stem>``, or ``RESULTS=``).  A folder
that already holds other files may be anything of the user's (a data folder, another project, another config's
run): the workflow would write ``results/`` into it and overwrite a ``results/results.parquet`` found there.
So before the DAG is built, ``csfbench validate CONFIG --run-dir DIR`` (:func:`check_run_folder`, then
:func:`claim_run_folder`) accepts ``DIR`` only when it

* does not exist, or holds nothing but the config file itself: it becomes the config's run folder;
* holds the marker :data:`MARKER` naming this same config file: a rerun (an edited config reruns what changed).

Any other folder is refused with a message that names it and says what to do.  The marker is a small JSON
file, ``{"format": "csfbench-run/1", "config": PATH}``, written when the folder is claimed; ``PATH`` is relative
to the folder when the config lies inside it (so the checkout, whose tracked marker names the demo's
``config/config.yaml``, stays the demo's run folder wherever it is cloned) and absolute otherwise.  The same
config means the same file (after resolving links), not the same content.  A folder run before csfbench
wrote markers (or by ``snakemake --directory`` alone) is taken over explicitly with ``--adopt``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from csfbench.atomic import write_json
from csfbench.errors import CsfbenchError

MARKER = ".csfbench-run.json"
FORMAT = "csfbench-run/1"
LISTED = 5  # entries of a refused folder named in the message


class RunFolderError(CsfbenchError):
    """A run folder that the run of a config must not write into: names the folder and what to do."""


def _marked_config(folder: Path) -> Path:
    """The config file the marker of ``folder`` names (resolved)."""
    marker = folder / MARKER
    try:
        content = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # JSON and UTF-8 decoding errors are ValueErrors
        raise RunFolderError(f"{marker}: not a readable run-folder marker ({err}); remove it if {folder} is the "
                             "run folder of the config you run, or choose another folder with RESULTS=") from err
    if not isinstance(content, dict) or content.get("format") != FORMAT or not isinstance(content.get("config"), str):
        raise RunFolderError(f"{marker}: expected a run-folder marker of format {FORMAT!r} naming its config, found "
                             f"{content!r}; remove it if {folder} is the run folder of the config you run, or choose "
                             "another folder with RESULTS=")
    return (folder / content["config"]).resolve()


def check_run_folder(folder: str | Path, config: str | Path, adopt: bool = False) -> None:
    """Raise :class:`RunFolderError` unless ``folder`` may hold the run of ``config`` (see the module docstring).

    ``adopt``: also accept a folder that holds other files and no marker (a run made before csfbench marked run
    folders, or by Snakemake alone); a folder marked for another config is refused even then."""
    folder, config = Path(folder), Path(config)
    if not folder.exists():
        return
    if not folder.is_dir():
        raise RunFolderError(f"{folder}: the run folder is a file, not a folder; choose another folder with "
                             "RESULTS=")
    if (folder / MARKER).exists():
        marked = _marked_config(folder)
        if marked != config.resolve():
            raise RunFolderError(f"{folder}: this is the run folder of {marked} (its {MARKER}), not of {config}; "
                                 f"run {config} in a folder of its own (RESULTS=another folder), or run {marked} "
                                 "there")
        return
    others = sorted(entry.name for entry in os.scandir(folder)
                    if not (folder / entry.name).resolve() == config.resolve())
    if not others or adopt:
        return
    listed = ", ".join(others[:LISTED]) + (f" and {len(others) - LISTED} more" if len(others) > LISTED else "")
    advice = (f"if it holds an earlier run of {config} (made before csfbench marked its run folders), take it "
              f"over with `csfbench validate {config} --run-dir {folder} --adopt`; otherwise "
              if {".snakemake", "results"} & set(others) else "")
    raise RunFolderError(f"{folder}: an existing folder that is not a csfbench run folder (it holds {listed} and no "
                         f"{MARKER}); the run would write {folder / 'results'} there and overwrite the files of the "
                         f"same names; {advice}choose a new or empty folder with RESULTS=")


def claim_run_folder(folder: str | Path, config: str | Path) -> Path:
    """Create ``folder`` if needed and write its marker naming ``config`` (kept when it already names it);
    return the marker's path.  Call :func:`check_run_folder` first."""
    folder, config = Path(folder), Path(config)
    marker = folder / MARKER
    if marker.exists():
        return marker
    try:
        folder.mkdir(parents=True, exist_ok=True)
        base, resolved = folder.resolve(), config.resolve()
        written = resolved.relative_to(base) if resolved.is_relative_to(base) else resolved
        write_json({"format": FORMAT, "config": written.as_posix()}, marker, indent=1)
    except OSError as err:
        raise RunFolderError(f"{folder}: cannot create the run folder or its {MARKER} ({err})") from err
    return marker
