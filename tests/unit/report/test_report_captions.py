"""Every report caption (``report/*.rst``) renders, through Jinja as Snakemake renders it and with each
shipped config, to reStructuredText that docutils parses without a warning.  Snakemake's report prints
a docutils problem inline, into the caption the user reads (e.g. ``|x|`` taken for a substitution
reference)."""
from __future__ import annotations

from types import SimpleNamespace

import jinja2
import pytest
from docutils.core import publish_parts

from csfbench.workflow.settings import load_config

CONFIGS = ("config.yaml", "paper.yaml", "imagenet.yaml", "openood.yaml")


@pytest.mark.parametrize("config_name", CONFIGS)
def test_every_caption_is_clean_restructuredtext(repo, config_name):
    captions = sorted((repo / "report").glob("*.rst"))
    assert len(captions) > 30
    config = load_config(repo / "config" / config_name)
    snakemake = SimpleNamespace(config=config, wildcards=SimpleNamespace(source=next(iter(config["sources"]))))
    for caption in captions:
        text = jinja2.Template(caption.read_text()).render(snakemake=snakemake)
        # halt_level 2: a warning or error raises docutils' SystemMessage, naming the line
        publish_parts(text, source_path=str(caption), writer="html",
                      settings_overrides={"halt_level": 2, "report_level": 5})
