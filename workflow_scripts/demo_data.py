from csfbench.jobs import demo_data
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    demo_data(list(snakemake.output.files), snakemake.params.seed, snakemake.params.spec, snakemake.threads)
