import json

from csfbench.logs import job_logging
from csfbench.specs import DatasetSpec
from csfbench.stages.proximity import embed_source_sets

with job_logging(snakemake.log[0], snakemake.threads):
    job = json.loads(snakemake.params.job)
    embed_source_sets(snakemake.wildcards.source, DatasetSpec.from_dict(job["source_dataset"]), job["val_size"],
                      {name: DatasetSpec.from_dict(d) for name, d in job["ood"].items()},
                      json.loads(snakemake.params.encoder), snakemake.params.batch_size, snakemake.output.embeddings)
