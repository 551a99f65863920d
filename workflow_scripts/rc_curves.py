from csfbench.logs import job_logging
from csfbench.stages.figures import write_rc_curves

with job_logging(snakemake.log[0], snakemake.threads):
    write_rc_curves(list(snakemake.input.scores), snakemake.params.shift_types, snakemake.params.csfs,
                    snakemake.params.ranking, snakemake.params.title, snakemake.output.csv, snakemake.output.png,
                    snakemake.output.pdf)
