import json

from csfbench.logs import job_logging
from csfbench.proximity.stratification import embed_source_sets

with job_logging(snakemake.log[0], snakemake.threads):
    job = json.loads(snakemake.params.job)
    embed_source_sets(snakemake.wildcards.source, job["source_dataset"], job["val_size"], job["ood"], job["encoder"],
                      job["batch_size"], snakemake.output.embeddings)
