from csfbench.logs import job_logging
from csfbench.stages.aggregate import aggregate_results

with job_logging(snakemake.log[0], snakemake.threads):
    metric_files = list(snakemake.input.metrics) + list(snakemake.input.conformal) + list(snakemake.input.pairs)
    aggregate_results(metric_files, snakemake.output.table, snakemake.output.selection, list(snakemake.input.regimes))
