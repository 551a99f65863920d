from csfbench.logs import job_logging
from csfbench.stages.analyses import write_category_tables

with job_logging(snakemake.log[0], snakemake.threads):
    write_category_tables(list(snakemake.input.long), dict(snakemake.output.items()))
