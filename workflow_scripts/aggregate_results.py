from csfbench.logs import job_logging
from csfbench.stages.aggregate import aggregate_results

with job_logging(snakemake.log[0], snakemake.threads):
    aggregate_results(list(snakemake.input.metrics) + list(snakemake.input.conformal), snakemake.output.table, snakemake.output.selection,
                      list(snakemake.input.regimes))
