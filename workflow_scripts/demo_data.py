from csfbench.jobs import demo_data
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    demo_data(snakemake.params.root, snakemake.params.seed, snakemake.params.spec)
