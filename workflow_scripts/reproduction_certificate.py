from csfbench.logs import job_logging
from csfbench.stages.reproduction import write_certificate

with job_logging(snakemake.log[0], snakemake.threads):
    write_certificate(snakemake.input.table, snakemake.params.ranking,
                      dict(zip(snakemake.params.nc_sources, snakemake.input.nc, strict=True)), snakemake.output.table)
