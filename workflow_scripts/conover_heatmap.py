from csfbench.logs import job_logging
from csfbench.stages.figures import write_conover_heatmap

with job_logging(snakemake.log[0], snakemake.threads):
    write_conover_heatmap(snakemake.input.ranking, snakemake.output.csv, snakemake.output.png, snakemake.output.pdf)
