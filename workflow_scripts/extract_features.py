import json

from csfbench.jobs import extract
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    extract(json.loads(snakemake.params.spec), json.loads(snakemake.params.eval_set), snakemake.input.checkpoint,
            snakemake.output.features, snakemake.params.batch_size, snakemake.params.compression,
            snakemake.params.num_workers)
