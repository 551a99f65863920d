import json

from csfbench.logs import job_logging
from csfbench.stages.data import demo_data

with job_logging(snakemake.log[0], snakemake.threads):
    demo_data(list(snakemake.output.files), snakemake.params.seed, json.loads(snakemake.params.spec), snakemake.threads)
