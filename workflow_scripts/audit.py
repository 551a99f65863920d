from csfbench.logs import job_logging
from csfbench.stages.audit import write_audit

with job_logging(snakemake.log[0], snakemake.threads):
    write_audit(snakemake.input.table, snakemake.input.fits, snakemake.input.network_fits, snakemake.input.rankings,
                snakemake.input.features, snakemake.input.prediction_sets, snakemake.params.audit,
                snakemake.params.ranking, snakemake.params.n_classes, snakemake.params.mcd_passes,
                snakemake.output.table)
