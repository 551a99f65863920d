import json

from csfbench.jobs import adversarial_set
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    adversarial_set(json.loads(snakemake.params.spec), json.loads(snakemake.params.attack), snakemake.input.checkpoint,
                    snakemake.params.batch_size, snakemake.output.images, snakemake.output.labels)
