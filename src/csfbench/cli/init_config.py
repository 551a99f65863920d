"""``csfbench init DATA_ROOT``: a starter config from a data folder.

The data folder is scanned by :func:`csfbench.cli.init_scan.scan` (which layouts it holds, checked by the
formats' own readers).

What was found becomes a proposal:

* **sources**: labelled datasets with official ``train`` and ``test`` splits whose training labels are
  the classes ``0..C-1`` (CIFAR-10/100, SVHN, the MNIST family's IDX files, TinyImageNet, ImageNet, csfbench
  ``npy``, ICONIC-444 tasks);
* **semantic** evaluation sets of a source: unlabelled sets (image folders, OpenOOD's OOD lists, wnid
  folders of other classes, unlabelled ``npy``) and the other sources' datasets (another label space);
* **covariate** evaluation sets of a source: corruptions of its images (CIFAR-10-C/100-C of a CIFAR
  source, ImageNet-C and ImageNet-R-style wnid folders of an ImageNet source).

:func:`~csfbench.cli.init_scan.scan` returns the findings, :func:`build_config` the config text (comments from the
schema's descriptions; every optional key left to its schema default), :func:`run_init` does both, checks the
text with :func:`csfbench.workflow.settings.validate_config` and writes it.  Paths and folder names from the
disk or the command line are written into comments and the report through
:func:`~csfbench.cli.init_scan.printable`, so that no line break or control character in them can end a
comment line (and add keys to the config) or reach the terminal.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import yaml

from csfbench.errors import CsfbenchError
from csfbench.cli.init_layouts import STAT_SAMPLES, Found, dataset_name
from csfbench.cli.init_scan import MAX_SIDE, NAME_RULE, SOURCE_FORMATS, Scan, printable, scan
from csfbench.workflow.settings import schema, validate_config

__all__ = ["NAME_RULE", "build_config", "dataset_name", "default_results", "make_command", "report", "run_init",
           "scan"]


# ---------------------------------------------------------------------------------------------
# the config text


def _flow(value) -> str:
    """``value`` as one line of YAML (flow style; a scalar without the document-end marker)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False)
    return text.removesuffix("\n...\n").strip()


def _comment(text: str, indent: str = "", width: int = 110) -> list[str]:
    """``text`` as comment lines wrapped at ``width`` (its whitespace runs one space, :func:`printable`)."""
    text = " ".join(printable(text).split())
    return [f"{indent}# {line}" for line in textwrap.wrap(text, width - len(indent) - 2)] if text else []


def _comment_lines(*lines: str) -> list[str]:
    """Each of ``lines`` as one comment line as it is (not wrapped; :func:`printable`)."""
    return [f"# {printable(line)}" for line in lines]


def _description(*keys: str) -> str:
    """The schema's description of a key path (``sources``, ``*``, ``val_size``: ``*`` = any name)."""
    node = schema()
    for key in keys:
        if key == "*":
            node = node.get("additionalProperties", {})
        else:
            node = node.get("properties", {}).get(key, {})
    return " ".join(str(node.get("description", "")).split())


def _first_sentence(text: str) -> str:
    """The first sentence of a schema description, without its parenthesised references (papers, sections)."""
    text, kept, depth, group = " ".join(str(text).split()), [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        if depth:
            group += char
        else:
            kept.append(char)
        if char == ")" and depth:
            depth -= 1
            if not depth:
                if not re.search(r"\d|§|et al|docs/|&", group):
                    kept.append(group)
                group = ""
    plain = re.sub(r"\s+([,;.:])", r"\1", re.sub(r"\s{2,}", " ", "".join(kept))).strip()
    return re.split(r"(?<=[a-z)])\. (?=[A-Z])", plain, maxsplit=1)[0].rstrip(".")


def _image_size(item: Found) -> int:
    side = item.side or 32
    return 32 if side <= 48 else MAX_SIDE


def _describe(item: Found) -> str:
    sizes = ", ".join(f"{split} {n}" if split else f"{n} images" for split, n in item.sizes.items())
    classes = f", {item.n_classes} classes" if item.n_classes else ""
    label = "" if item.labels == "labelled" else f", {item.labels}"
    return f"{sizes}{classes}{label}"


def default_results(config_path: str | Path) -> str:
    """The run folder proposed for a config: ``runs/{its file stem}``, the Makefile's default ``RESULTS`` for
    ``make run CONFIG=...`` (relative to the checkout)."""
    return f"runs/{Path(config_path).stem}"


def make_command(config_path: str | Path, results: str) -> str:
    """``make run CONFIG=...`` for a config, with ``RESULTS=`` only where it differs from the Makefile's default."""
    extra = "" if results == default_results(config_path) else f" RESULTS={results}"
    return f"make run CONFIG={config_path}{extra}"


def build_config(scan_: Scan, results: str | None = None, config_path: str | None = None) -> str:
    """The starter config of ``scan_`` as YAML text with comments."""
    if not scan_.sources:
        raise CsfbenchError(
            f"{printable(scan_.data_root)}: no source found. A source is a labelled dataset with official train and "
            f"test splits in one of the formats {', '.join(SOURCE_FORMATS)} (docs/own-data.md); "
            "image folders and single image lists are evaluation sets only")
    root = schema()
    required = list(root.get("required", []))
    config_path = str(Path(config_path or "my.yaml").resolve())
    results = results or default_results(config_path)
    lines = _comment_lines(
        f"Starter config written by `csfbench init {scan_.data_root}` (docs/own-data.md).",
        "Check the proposal below (sources, their evaluation sets and shift types), then run it in its own folder,",
        "apart from the demo's results/ (from the csfbench checkout; --directory is relative to it):",
        f"  csfbench validate {config_path}",
        f"  snakemake --cores 2 --directory {results} --configfile {config_path}",
        f"  snakemake --directory {results} --configfile {config_path} --report results/report.html",
        f"(the report's path is relative to --directory: it lands in {results}/results/report.html)",
        f"or, the run, its summary and its report in one command: {make_command(config_path, results)}",
        "Small CPU-friendly settings: a VGG-13 at width 0.25, one paradigm, one run, a few epochs; scale up in",
        "`backbones` and `training` (config/paper.yaml: the paper's grid and its 250-300 epochs, on a GPU).",
    )
    lines += _comment(f"Required sections: {', '.join(required)}. Every key left out takes its default from "
                      "config/schema.yaml (config/README.md lists them); the optional sections are listed at the end.")
    lines += [""]
    lines += _comment(_description("seed"))
    lines += ["seed: 0"]
    lines += _comment(_description("data_root") + "; absolute, so that the run may work in any --directory")
    lines += [f"data_root: {_flow(str(scan_.data_root))}", ""]

    lines += _comment(_description("datasets") + ". Names: lower case letters, digits, '.' and '-', starting with "
                      "a letter or digit. `split` (default test): the official split read when the set is evaluated "
                      "as a shift; `options`: the format's reader options")
    lines += ["datasets:"]
    for item in scan_.found:
        entry = {"format": item.format, "path": item.path}
        if item.split != "test":
            entry["split"] = item.split
        if item.options:
            entry["options"] = item.options
        role = {"source": "a source", "ood_val": "OOD validation set: not evaluated (csf.tuning.ood_validation of "
                "the grid protocol)"}.get(item.kind, "evaluation set")
        lines += [*_comment(f"{item.where}: {_describe(item)}; {role}", "  "), f"  {item.name}: {_flow(entry)}"]
    lines += [""]

    lines += _comment(_description("sources") + ": " + _first_sentence(_description("sources", "*", "val_size"))
                      + ". image_size: the input side S per backbone; images are resized to S x S by the source's "
                      "image_geometry, default stretch (the aspect ratio is lost; resize_crop and pad keep it: "
                      "docs/own-data.md). ood: " + _first_sentence(_description("sources", "*", "ood"))
                      + "; semantic sets lose their labels, covariate sets keep them")
    lines += ["sources:"]
    for src in scan_.sources:
        lines += [f"  {src.name}:", f"    dataset: {src.name}", f"    n_classes: {src.n_classes}",
                  f"    val_size: {src.val_size}"]
        lines += [f"    image_size: {_flow({'vgg13': _image_size(src)})}"
                  + ("" if (src.side or 32) <= MAX_SIDE else
                     f"  # images of about {src.side} px, stretched to S x S; larger S needs a GPU")]
        how = "the paper's CIFAR values" if src.format in ("cifar10", "cifar100") else \
            "torchvision's ImageNet values" if src.format == "imagenet" else \
            f"estimated from {min(STAT_SAMPLES, src.sizes.get('train', 0))} training images"
        lines += [f"    normalize: {_flow(src.normalize)}  # {how}"]
        sets = [(f.name, f.shift_of[src.name]) for f in scan_.found if src.name in f.shift_of]
        if sets:
            lines += ["    ood:"] + [f"      {name}: {_flow({'shift_type': shift})}" for name, shift in sets]
        else:
            lines += ["    ood: {}  # no evaluation set found: add catalogue datasets here"]
    lines += [""]

    lines += _comment("the model grid: every paradigm x dropout x run is one model. Other paradigms: confidnet "
                      "(training.vgg13.confidnet), dg (training.vgg13.dg and sources.*.dg_rewards), ce, logitnorm "
                      "(training.vgg13.logitnorm) and oe (training.vgg13.oe, with an outlier dataset of the catalogue "
                      "that no source evaluates); dropout [0, 1] "
                      "adds MC-dropout models (then set mcd_samples, the MC-dropout passes, e.g. 50; default 0); "
                      "more runs = more seeds")
    lines += ["backbones:", "  vgg13:", "    paradigms: [devries]", "    dropout: [0]", "    runs: [1]",
              "    arch: {width: 0.25}  # the paper: 1.0", ""]
    lines += _comment("training per backbone: `common` SGD settings shared by its paradigms, then per paradigm "
                      "(config/README.md, training). hflip: turn it off for data whose mirror image is another "
                      "class (digits, text)")
    lines += ["training:", "  vgg13:",
              "    common: {batch_size: 128, lr: 0.05, weight_decay: 5.0e-4, augment: {crop_padding: 4, hflip: true}}",
              "    devries: {epochs: 10}  # the paper: 250", ""]
    lines += _comment("feature extraction: images per batch")
    lines += ["features: {batch_size: 256}", ""]
    lines += _comment(_description("csf") + ". methods: absent = every CSF of the registry; tuning: Bayesian "
                      "probes per tuned quantity (the paper: init_points 20, n_iter 80)")
    lines += ["csf:", "  groups: [none, global, class]", "  tuning: {init_points: 5, n_iter: 10}", ""]

    lines += ["# Optional sections, left out (config/README.md has each one's keys; demo and pretrain are the",
              "# embedded demo's own):"]
    written = {"seed", "data_root", "datasets", "sources", "backbones", "training", "features", "csf"}
    for key, node in root.get("properties", {}).items():
        if key in written or key in ("demo", "pretrain"):  # the embedded demo's own sections
            continue
        if "enabled" in node.get("properties", {}):
            default = " (runs when written, unless enabled: false)"
        elif "default" in node:
            default = " (defaults apply without it)"
        else:
            default = " (runs when present)"
        text = _first_sentence(node.get("description", "")) or "see config/README.md"
        text = re.sub(r"[;,] the stage runs when present$", "", text)
        if key == "resources":
            text += "; keys: " + ", ".join(node.get("properties", {}))
        lines += _comment(f"{key}{default}: {text}", "  ")
    return "\n".join(lines) + "\n"


def report(scan_: Scan) -> str:
    """What was found, under which format, what could not be classified and which symbolic links were not
    followed, with the reason (every line :func:`printable`)."""
    out = [f"scanned {scan_.data_root}"]
    used = scan_.found
    if used:
        out.append(f"found {_count(len(used), 'dataset')}:")
        width = max(len(f.name) for f in used)
        fwidth = max(len(f.format) for f in used)
        for item in used:
            if item.kind == "source":
                role = f"source ({item.n_classes} classes, val_size {item.val_size})"
            elif item.kind == "ood_val":
                role = "OOD validation set (catalogued, not evaluated)"
            else:
                by_type: dict[str, list[str]] = {}
                for src, shift in item.shift_of.items():
                    by_type.setdefault(shift, []).append(src)
                role = "; ".join(f"{shift} shift of {', '.join(srcs)}" for shift, srcs in by_type.items())
            if item.kind == "source" and item.shift_of:
                role += f"; semantic shift of {', '.join(item.shift_of)}"
            out.append(f"  {item.name:<{width}}  {item.format:<{fwidth}}  {item.where}: {_describe(item)} -> {role}")
            if item.note:
                out.append(f"  {'':<{width}}  {'':<{fwidth}}  note: {item.note}")
    if scan_.unused:
        out.append(f"found but not used ({len(scan_.unused)}):")
        for item in scan_.unused:
            out.append(f"  {item.where} [{item.format}]: {item.note}")
    for heading, items in (("could not classify", [s for s in scan_.skipped if not s.link]),
                           ("symbolic links not followed", [s for s in scan_.skipped if s.link])):
        if items:
            out.append(f"{heading} ({len(items)}):")
            out += [f"  {item.path}: {item.reason}" for item in items]
    return "\n".join(map(printable, out))


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def run_init(data_root: str | Path, output: str | Path, results: str | None = None, force: bool = False) -> str:
    """Scan ``data_root``, write the starter config to ``output`` (checked by ``validate_config``
    first) and return the report to print.  An existing ``output`` is kept unless ``force``."""
    from csfbench.workflow.grid import Grid

    output = Path(output)
    if output.exists() and not force:
        raise CsfbenchError(f"{printable(output)}: exists; choose another --output or pass --force to replace it")
    found = scan(data_root)
    text_report = report(found)
    try:
        text = build_config(found, results, str(output))
    except CsfbenchError as err:
        raise CsfbenchError(f"{text_report}\n{err}") from None
    config = validate_config(yaml.safe_load(text), f"{printable(output)} (generated)")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    n_models = len(list(Grid(config).iter_models()))
    results = results or default_results(output)
    config_path = output.resolve()
    return "\n".join([text_report, *map(printable, [
        f"wrote {output}: valid ({_count(len(config['sources']), 'source')}, {_count(n_models, 'model')}, "
        f"{_count(sum(len(s['ood']) for s in config['sources'].values()), 'evaluation set')} besides the ID splits)",
        "next: check the proposal in the file, then (from the csfbench checkout)",
        f"  snakemake --cores 2 --directory {results} --configfile {config_path}",
        f"  snakemake --directory {results} --configfile {config_path} --report results/report.html"
        f"   # writes {results}/results/report.html",
        f"or, the run, its summary and its report in one command: {make_command(config_path, results)}",
    ])])


__all__ = ["Found", "Scan", "Skipped", "build_config", "dataset_name", "report", "run_init", "scan"]
