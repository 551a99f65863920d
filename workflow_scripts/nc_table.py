from csfbench.logs import job_logging
from csfbench.stages.geometry import write_nc_table

with job_logging(snakemake.log[0], snakemake.threads):
    write_nc_table(list(snakemake.input.records), snakemake.output.csv, snakemake.output.tex, snakemake.wildcards.source)
