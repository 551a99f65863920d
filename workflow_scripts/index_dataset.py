from csfbench.logs import job_logging
from csfbench.specs import DatasetSpec
from csfbench.stages.data import index_dataset

with job_logging(snakemake.log[0], snakemake.threads):
    index_dataset(DatasetSpec.from_json(snakemake.params.dataset), snakemake.params.splits, snakemake.output.index)
