import json

from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.adversarial import adversarial_set

with job_logging(snakemake.log[0], snakemake.threads):
    adversarial_set(ModelSpec.from_json(snakemake.params.spec), json.loads(snakemake.params.attack),
                    snakemake.input.checkpoint, snakemake.params.batch_size, snakemake.output.images,
                    snakemake.output.labels)
