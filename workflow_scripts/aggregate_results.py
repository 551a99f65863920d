from csfbench.jobs import aggregate_results
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    aggregate_results(list(snakemake.input.metrics), snakemake.output.table, snakemake.output.selection,
                      list(snakemake.input.regimes))
