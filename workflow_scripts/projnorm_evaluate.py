import json

from csfbench.jobs import projnorm_evaluate
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    out = snakemake.output
    projnorm_evaluate(json.loads(snakemake.params.study), snakemake.params.atc_score,
                      {k: out[k] for k in ("per_set", "correlations", "stress", "stress_mse")}, out.figure, out.metrics)
