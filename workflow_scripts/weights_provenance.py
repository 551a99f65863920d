from csfbench.logs import job_logging
from csfbench.provenance import write_weights_record

with job_logging(snakemake.log[0], snakemake.threads):
    write_weights_record(snakemake.config, snakemake.output.record)
