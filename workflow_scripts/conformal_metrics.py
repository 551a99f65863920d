import json

from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.conformal import conformal_metrics
from csfbench.workflow.sections import ConformalFit

with job_logging(snakemake.log[0], snakemake.threads):
    bands = {(method, float(delta)): path for method, delta, path in json.loads(snakemake.params.bands)}
    conformal_metrics(ModelSpec.from_json(snakemake.params.spec), snakemake.input.scores, snakemake.input.metrics,
                      bands, ConformalFit.from_param(snakemake.params.conformal), snakemake.output.metrics)
