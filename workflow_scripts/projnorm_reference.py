import json

from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.projnorm import projnorm_reference

with job_logging(snakemake.log[0], snakemake.threads):
    projnorm_reference(ModelSpec.from_json(snakemake.params.spec), json.loads(snakemake.params.settings),
                       snakemake.input.checkpoint, snakemake.output.reference)
