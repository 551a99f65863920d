import json

from csfbench.jobs import corrupt_set
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    corrupt_set(json.loads(snakemake.params.dataset), snakemake.params.val_size, json.loads(snakemake.params.corruption),
                snakemake.output.images, snakemake.output.labels)
