from csfbench.logs import job_logging
from csfbench.stages.figures import write_best_metric_table

with job_logging(snakemake.log[0], snakemake.threads):
    write_best_metric_table(snakemake.input.table, snakemake.params.metric, snakemake.params.ranking,
                            snakemake.output.csv, snakemake.output.tex)
