"""The ``csfbench`` command line: ``validate``, ``inspect``, ``summary``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from csfbench.errors import CsfbenchError


def _validate(args: argparse.Namespace) -> int:
    from csfbench.config import iter_models, load_config

    config = load_config(args.config)
    n_models = len(list(iter_models(config)))
    print(f"{args.config}: valid ({len(config['sources'])} sources, {n_models} models)")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from csfbench.features.store import read_features, validate_feature_file

    attrs = validate_feature_file(args.file)
    arrays, _ = read_features(args.file)
    print(f"{args.file}")
    for key in sorted(attrs):
        print(f"  @{key} = {attrs[key]}")
    for key in sorted(arrays):
        print(f"  {key}: {arrays[key].dtype} {arrays[key].shape}")
    if "correct" in arrays and attrs.get("shift_type") != "semantic" and len(arrays["correct"]):
        print(f"  accuracy = {arrays['correct'].mean():.4f}")
    return 0


def _summary(args: argparse.Namespace) -> int:
    from csfbench.summary import summarize

    print(summarize(Path(args.results)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="csfbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="validate a config file against config/schema.yaml")
    p.add_argument("config")
    p.set_defaults(func=_validate)
    p = sub.add_parser("inspect", help="check a feature file against the HDF5 contract and describe it")
    p.add_argument("file")
    p.set_defaults(func=_inspect)
    p = sub.add_parser("summary", help="list what a workflow run produced (models, accuracies, feature files)")
    p.add_argument("--results", default="results")
    p.set_defaults(func=_summary)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CsfbenchError as err:
        print(f"csfbench: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
