import json

from csfbench.jobs import index_dataset
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    index_dataset(json.loads(snakemake.params.dataset), snakemake.params.splits, snakemake.output.index)
