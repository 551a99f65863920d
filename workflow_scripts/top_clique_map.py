from csfbench.logs import job_logging
from csfbench.stages.figures import write_top_clique_map

with job_logging(snakemake.log[0], snakemake.threads):
    write_top_clique_map(list(snakemake.input.rankings), snakemake.params.sources, snakemake.wildcards.backbone,
                         snakemake.params.group, snakemake.output.csv, snakemake.output.png, snakemake.output.pdf)
