from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.projnorm import projnorm_reference
from csfbench.workflow.sections import Projnorm

with job_logging(snakemake.log[0], snakemake.threads):
    projnorm_reference(ModelSpec.from_json(snakemake.params.spec), Projnorm.from_param(snakemake.params.settings),
                       snakemake.input.checkpoint, snakemake.output.reference)
