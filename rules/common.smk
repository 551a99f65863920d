# The hand-over from Snakemake to csfbench.workflow: the config is validated once (every check, with the
# key path of what is wrong, before the DAG is built), then every rule asks its jobs (csfbench.workflow.jobs, on the grid of csfbench.workflow.grid)
# what its jobs read, through the adapters below.  Paths come from csfbench.workflow.paths.
import inspect

from snakemake.common import overwrite_function_params

from csfbench.atomic import remove_stale_temporaries
from csfbench.csf.projection import NETWORK_SCORER
from csfbench.workflow import paths
from csfbench.workflow.jobs import HEATMAP_FILES, Jobs
from csfbench.workflow.ids import ENSEMBLE_PATTERN, MODEL_PATTERN
from csfbench.workflow.settings import validate_config

G = Jobs(validate_config(config, origin="snakemake config"))


wildcard_constraints:
    source="|".join(G.sources),
    model=MODEL_PATTERN,
    ensemble=ENSEMBLE_PATTERN,
    scorer="|".join(G.ensemble_scorers),
    dataset="|".join(G.dataset_names()),
    name="|".join(G.setting("datasets")),
    fit_group="|".join(G.fit_groups),
    backbone="|".join(G.backbones),


def of_wildcards(function):
    """``function(wildcards)`` as a Snakemake input/params function whose signature Snakemake need not read
    again for every job (it would otherwise inspect it at each call: seconds over the paper grid's DAG)."""
    overwrite_function_params(function, inspect.signature(function).parameters)
    return function


def jobwise(method):
    """``method`` of the grid as a Snakemake input/params function: called with the job's wildcards that are
    among its parameters (by name)."""
    names = list(inspect.signature(method).parameters)
    return of_wildcards(lambda wildcards: method(**{n: wildcards[n] for n in names if n in wildcards.keys()}))


def setting(key_path):
    """A setting by key path (e.g. "features/batch_size"), read when a job of the rule is planned (a disabled
    stage's section may be absent)."""
    return of_wildcards(lambda wildcards: G.setting(key_path))


def setting_json(key_path):
    """:func:`setting` as canonical JSON (reordering a config file's keys does not rerun the job)."""
    return of_wildcards(lambda wildcards: G.setting_json(key_path))


def res(rule_name, key):
    """A resource setting of a rule (config `resources`, keyed by rule name; defaults in the schema)."""
    return G.resource(rule_name, key)
