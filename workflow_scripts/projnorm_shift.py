import json

from csfbench.logs import job_logging
from csfbench.specs import EvalSet, ModelSpec
from csfbench.stages.projnorm import projnorm_shift
from csfbench.workflow.sections import Projnorm

with job_logging(snakemake.log[0], snakemake.threads):
    partner = json.loads(snakemake.params.partner_spec)
    projnorm_shift(ModelSpec.from_json(snakemake.params.spec), EvalSet.from_json(snakemake.params.eval_set),
                   Projnorm.from_param(snakemake.params.settings), snakemake.input.checkpoint,
                   snakemake.input.reference, snakemake.output.result, ModelSpec.from_dict(partner) if partner else None,
                   snakemake.input.get("partner"))
