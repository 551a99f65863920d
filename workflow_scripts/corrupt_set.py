import json

from csfbench.logs import job_logging
from csfbench.specs import DatasetSpec
from csfbench.stages.shifts import corrupt_set

with job_logging(snakemake.log[0], snakemake.threads):
    corrupt_set(DatasetSpec.from_json(snakemake.params.dataset), snakemake.params.val_size,
                json.loads(snakemake.params.corruption), snakemake.output.images, snakemake.output.labels)
