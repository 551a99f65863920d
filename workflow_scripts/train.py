import json

from csfbench.jobs import train
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    train(json.loads(snakemake.params.spec), snakemake.output.checkpoint, snakemake.output.history,
          num_workers=snakemake.params.num_workers)
