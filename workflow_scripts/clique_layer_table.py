from csfbench.logs import job_logging
from csfbench.stages.figures import write_clique_layer_table

with job_logging(snakemake.log[0], snakemake.threads):
    write_clique_layer_table(list(snakemake.input.rankings), snakemake.output.csv, snakemake.output.tex)
