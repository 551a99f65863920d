# The study's names and the settings outside the cache key (batch size, workers) come from the config, not params.
from csfbench.logs import job_logging
from csfbench.stages.features import extract_shared_job

with job_logging(snakemake.log[0], snakemake.threads):
    extract_shared_job(snakemake.config, snakemake.wildcards.source, snakemake.wildcards.model,
                       snakemake.wildcards.dataset, snakemake.params.extraction, snakemake.output.features,
                       snakemake.threads)
