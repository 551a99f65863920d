"""The ``csfbench`` command line: ``init``, ``formats``, ``validate``, ``inspect``, ``summary``, ``rank``, ``manifest``,
``reproduce``."""
from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import metadata
from pathlib import Path

from csfbench.errors import CsfbenchError
from csfbench.workflow.run_folder import MARKER as RUN_MARKER


def _init(args: argparse.Namespace) -> int:
    from csfbench.cli.init_config import run_init

    print(run_init(args.data_root, args.output, args.results, args.force))
    return 0


def _formats(args: argparse.Namespace) -> int:
    from csfbench.data.formats import FORMATS

    chosen = args.format or list(FORMATS)
    unknown = [name for name in chosen if name not in FORMATS]
    if unknown:
        print(f"unknown format(s) {unknown}; known: {', '.join(FORMATS)}", file=sys.stderr)
        return 2
    for name in chosen:
        fmt = FORMATS[name]
        splits = ", ".join(fmt.splits) if fmt.splits else "one (the split is ignored)"
        options = ", ".join(fmt.options) or "none"
        optional = f"; optional: {', '.join(fmt.optional)}" if fmt.optional else ""
        labels = "labelled" if fmt.labelled else "unlabelled (label -1)"
        print(f"{name}  [splits: {splits}; options: {options}{optional}; {labels}]")
        print("\n".join(f"    {line}" for line in fmt.expected_layout.strip().splitlines()))
        print()
    return 0


def _validate(args: argparse.Namespace) -> int:
    from csfbench.workflow import run_folder
    from csfbench.workflow.grid import Grid
    from csfbench.workflow.settings import load_config

    if args.run_dir is not None:  # checked first (it is quick), claimed only for a valid config
        run_folder.check_run_folder(args.run_dir, args.config, adopt=args.adopt)
    config = load_config(args.config, build_models=True)
    grid = Grid(config)
    n_models, n_ensembles = len(list(grid.iter_models())), len(list(grid.iter_ensembles()))
    ensembles = f", {n_ensembles} ensemble{'s' if n_ensembles > 1 else ''}" if n_ensembles else ""
    print(f"{args.config}: valid ({len(config['sources'])} sources, {n_models} models{ensembles})")
    if args.run_dir is not None:
        marker = run_folder.claim_run_folder(args.run_dir, args.config)
        print(f"{args.run_dir}: the run folder of {args.config} ({marker.name})")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from csfbench.features.consistency import check_predictions
    from csfbench.features.store import read_features, validate_feature_file

    attrs = validate_feature_file(args.file)
    restricted = check_predictions(args.file)
    arrays, _ = read_features(args.file)
    print(f"{args.file}")
    for key in sorted(attrs):
        print(f"  @{key} = {attrs[key]}")
    for key in sorted(arrays):
        print(f"  {key}: {arrays[key].dtype} {arrays[key].shape}")
    if restricted is not None:
        print(f"  pred: the argmax over the {len(restricted)} classes it takes, not over all "
              f"{attrs['n_classes']} (a restricted label space: logit_mask restrict)")
    if "correct" in arrays and attrs.get("shift_type") != "semantic" and len(arrays["correct"]):
        print(f"  accuracy = {arrays['correct'].mean():.4f}")
    return 0


def _summary(args: argparse.Namespace) -> int:
    from csfbench.cli.summary import summarize

    if not Path(args.results).is_dir():
        raise CsfbenchError(f"{args.results}: no such results folder (pass the folder the workflow wrote, "
                            "e.g. --results results)")
    text, unreadable = summarize(Path(args.results))
    print(text)
    return 1 if unreadable else 0


def _rank(args: argparse.Namespace) -> int:
    import warnings

    from csfbench.atomic import write_json
    from csfbench.stats import IncompleteBlocksWarning, StatsInputError, format_summary, rank_table, read_table

    if Path(args.output).resolve() == Path(args.input).resolve():
        raise StatsInputError(f"{args.output}: --output is the --input table; it would be overwritten")
    blocks = [col.strip() for item in args.blocks for col in item.split(",") if col.strip()]
    table = read_table(args.input)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", IncompleteBlocksWarning)
        result = rank_table(table, blocks, args.entity, args.value, alpha=args.alpha,
                            p_adjust=args.p_adjust, higher_is_better=args.higher_is_better)
    for w in caught:
        if issubclass(w.category, IncompleteBlocksWarning):
            print(f"csfbench: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    try:
        write_json(result, args.output, allow_nan=False)
    except OSError as err:
        raise StatsInputError(f"{args.output}: cannot write the output: {err}") from err
    print(format_summary(result))
    print(f"wrote {args.output}")
    return 0


def _manifest(args: argparse.Namespace) -> int:
    from csfbench.workflow import manifest

    results = Path(args.results)
    if args.action == "write":
        output = Path(args.output) if args.output else results / "manifest.json"
        written = manifest.write_manifest(results, args.config, output)
        print(f"wrote {output}: {len(written['files'])} files, config hash "
              f"{written['provenance']['config_hash'][:16]}, commit {written['provenance']['git_commit']}")
        return 0
    path = Path(args.manifest) if args.manifest else results / "manifest.json"
    report = manifest.verify_manifest(results, path)
    if args.config:
        for line in manifest.provenance_differences(path, args.config, results.parent):
            print(f"provenance differs: {line}")
    print("\n".join(report.lines(results)))
    return 0 if report.ok else 1


def _reproduce(args: argparse.Namespace) -> int:
    import pandas as pd

    from csfbench.reproduction import certify, deviations, verdict_counts
    from csfbench.stages.reproduction import read_run
    from csfbench.workflow import paths
    from csfbench.workflow.settings import load_config, schema_default

    results = None
    if args.results:
        folder = Path(args.results)
        table = folder / os.path.relpath(paths.results_table(), paths.RESULTS)
        if not table.is_file():
            raise CsfbenchError(f"{args.results}: no {table.name} there (pass the results folder a finished run "
                                "wrote, e.g. --results results)")
        ranking = load_config(args.config)["ranking"] if args.config else schema_default("ranking", complete=True)
        sources = pd.read_parquet(table, columns=["source"])["source"].unique()
        nc_tables = {source: folder / os.path.relpath(paths.nc_table(source, "csv"), paths.RESULTS)
                     for source in sources}
        results = read_run(table, ranking, {source: path for source, path in nc_tables.items() if path.is_file()})
    certificate = certify(results)
    columns = ["target", "published", "obtained", "difference", "tolerance", "verdict"]
    with pd.option_context("display.width", 200, "display.max_colwidth", 90, "display.max_rows", None):
        print(certificate[columns].to_string(index=False, float_format=lambda x: f"{x:.6g}"))
    if args.output:
        certificate.to_csv(args.output, index=False)
        print(f"wrote {args.output}")
    print(", ".join(f"{n} {verdict}" for verdict, n in verdict_counts(certificate).items()))
    return 1 if len(deviations(certificate)) else 0


# The exit status when stdout's reader has gone (`csfbench inspect FILE | head -1`): 128 + SIGPIPE (13), the
# status a shell shows for a program a closed pipe ends.  Not the 1 of the recipe in the Python docs ("Note on
# SIGPIPE", signal module): here 1 means unreadable files (summary) or a changed result (manifest verify).
EXIT_BROKEN_PIPE = 141


def _command(sub, name: str, func, summary: str) -> argparse.ArgumentParser:
    """A subcommand that ``csfbench --help`` lists with ``summary`` and whose own ``--help`` starts with it."""
    parser = sub.add_parser(name, help=summary, description=summary)
    parser.set_defaults(func=func)
    return parser


def build_parser() -> argparse.ArgumentParser:
    package = metadata("csfbench")  # the installed distribution's summary and version, as pyproject.toml sets them
    parser = argparse.ArgumentParser(prog="csfbench", description=package["Summary"])
    parser.add_argument("--version", action="version", version=f"csfbench {package['Version']}",
                        help="print the installed csfbench version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="run 'csfbench COMMAND --help' for its options")
    p = _command(sub, "init", _init, "scan a data folder and write a starter config for it (docs/own-data.md)")
    p.add_argument("data_root", help="the folder holding the datasets (scanned one or two levels deep)")
    p.add_argument("--output", "-o", default="my.yaml", help="the config file to write (default: %(default)s)")
    p.add_argument("--results", metavar="DIR",
                   help="the run's own folder (snakemake --directory DIR; results land in DIR/results) named in "
                        "the printed commands and the config's header (default: runs/<output's stem>)")
    p.add_argument("--force", action="store_true", help="replace an existing --output file")
    p = _command(sub, "formats", _formats, "the on-disk dataset formats csfbench reads, with their expected layouts")
    p.add_argument("format", nargs="*", help="formats to describe (default: all)")
    p = _command(sub, "validate", _validate, "validate a config file against config/schema.yaml")
    p.add_argument("config", help="the config file (YAML) to check; prints its sources and model count if valid")
    p.add_argument("--run-dir", metavar="DIR",
                   help="the run's folder (snakemake --directory DIR, as make run passes it): refuse a DIR that "
                        f"holds other files and is not this config's run folder (its {RUN_MARKER} names the "
                        "config); for a valid config, create DIR if needed and mark it as the config's run folder")
    p.add_argument("--adopt", action="store_true",
                   help="with --run-dir: take over a DIR that holds files and no marker (a run made before csfbench "
                        "marked its run folders); a DIR marked for another config is still refused")
    p = _command(sub, "inspect", _inspect, "check a feature file against the HDF5 contract and describe it")
    p.add_argument("file", help="a feature file (.h5) the workflow wrote, e.g. results/features/SOURCE/MODEL/test.h5; "
                                "pred and correct are checked against the logits and labels")
    p = _command(sub, "summary", _summary, "list what a workflow run produced (models, accuracies, feature files)")
    p.add_argument("--results", default="results", help="the results folder the workflow wrote (default: %(default)s)")
    p = _command(sub, "rank", _rank, "Friedman -> Conover -> cliques -> layers on a long-format table "
                                     "(lower = better)")
    p.add_argument("--input", required=True, help="long-format table (.csv or .parquet), one row per value")
    p.add_argument("--blocks", required=True, action="append",
                   help="columns that identify a block (comma-separated or repeated)")
    p.add_argument("--entity", required=True, help="column naming what is ranked (e.g. csf)")
    p.add_argument("--value", required=True, help="column of metric values")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the indifference graph (default: %(default)s)")
    p.add_argument("--p-adjust", choices=["none", "holm"], default="none",
                   help="post-hoc multiplicity correction (default: %(default)s, which reproduces the paper's "
                        "cliques)")
    p.add_argument("--higher-is-better", action="store_true", help="rank the highest value first")
    p.add_argument("--output", required=True, help="JSON file to write")
    p = _command(sub, "manifest", _manifest,
                 "write or verify sha256 content hashes of a run's results with provenance")
    p.add_argument("action", choices=["write", "verify"],
                   help="write: hash every result file into a manifest; verify: re-hash them and list every file "
                        "that was modified, is missing, is not in the manifest or cannot be read (exit status 1 "
                        "if any)")
    p.add_argument("--results", default="results", help="the results folder (default: %(default)s)")
    p.add_argument("--config", help="the run's config file (required by write; verify reports provenance changes)")
    p.add_argument("--output", help="manifest to write (default: RESULTS/manifest.json)")
    p.add_argument("--manifest", help="manifest to verify against (default: RESULTS/manifest.json)")
    p = _command(sub, "reproduce", _reproduce,
                 "recompute the published values csfbench can check (docs/reproducibility.md); exit 1 if one deviates")
    p.add_argument("--results", metavar="DIR", help="a finished run's results folder: also check the targets that "
                   "need data (default: only the data-free targets, from the papers' published inputs)")
    p.add_argument("--config", help="the run's config file, whose ranking settings chose the ranked rows (default: "
                   "the schema's)")
    p.add_argument("--output", help="also write the certificate as CSV")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _dispatch(build_parser(), argv)
        finally:
            sys.stdout.flush()  # a closed pipe raises here, inside the try, not at interpreter exit
    except BrokenPipeError:
        # the reader has gone: point stdout at /dev/null so the flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _dispatch(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    args = parser.parse_args(argv)
    if args.command == "manifest" and args.action == "write" and not args.config:
        parser.error("manifest write: --config is required (its hash is part of the provenance)")
    if args.command == "validate" and args.adopt and args.run_dir is None:
        parser.error("validate: --adopt takes over the folder of --run-dir DIR, which is missing")
    try:
        return args.func(args)
    except CsfbenchError as err:
        print(f"csfbench: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
