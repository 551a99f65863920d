import json

from csfbench.logs import job_logging
from csfbench.specs import DatasetSpec
from csfbench.stages.analyses import embed_covariate_sets

with job_logging(snakemake.log[0], snakemake.threads):
    sets = json.loads(snakemake.params.sets)
    embed_covariate_sets(snakemake.wildcards.source, {name: DatasetSpec.from_dict(d) for name, d in sets.items()},
                         json.loads(snakemake.params.encoder), snakemake.params.batch_size,
                         snakemake.output.embeddings)
