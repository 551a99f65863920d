import json

from csfbench.jobs import demo_data
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    demo_data(list(snakemake.output.files), snakemake.params.seed, json.loads(snakemake.params.spec), snakemake.threads)
