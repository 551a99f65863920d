from csfbench.stages.ranking import write_rankings
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    write_rankings(snakemake.input.table, snakemake.params.settings, snakemake.params.cells,
                   snakemake.params.out_dir, snakemake.output.summary, snakemake.output.coverage,
                   snakemake.output.stability, snakemake.output.ensembles, snakemake.input.metrics)
