import json

from csfbench.jobs import pretrain
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    pretrain(json.loads(snakemake.params.spec), snakemake.output.weights, snakemake.output.history)
