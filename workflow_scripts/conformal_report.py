import json

from csfbench.logs import job_logging
from csfbench.stages.conformal import conformal_report
from csfbench.workflow.sections import Conformal

with job_logging(snakemake.log[0], snakemake.threads):
    bands = {(method, int(n)): path for method, n, path in json.loads(snakemake.params.bands)}
    conformal_report(snakemake.input.results, snakemake.input.prediction_sets, snakemake.input.scores, bands,
                     Conformal.from_param(snakemake.params.conformal), snakemake.wildcards.source,
                     dict(snakemake.output.items()))
