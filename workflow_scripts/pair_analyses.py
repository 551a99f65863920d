from csfbench.logs import job_logging
from csfbench.stages.analyses import write_analyses

with job_logging(snakemake.log[0], snakemake.threads):
    embeddings = snakemake.input.embeddings if "embeddings" in snakemake.input.keys() else None
    write_analyses(snakemake.wildcards.source, list(snakemake.input.scores), snakemake.params.settings,
                   snakemake.params.alpha, dict(snakemake.output.items()), embeddings)
