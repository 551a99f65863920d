import json

from csfbench.jobs import projnorm_shift
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    projnorm_shift(json.loads(snakemake.params.spec), json.loads(snakemake.params.eval_set),
                   json.loads(snakemake.params.settings), snakemake.input.checkpoint, snakemake.input.reference,
                   snakemake.output.result, json.loads(snakemake.params.partner_spec),
                   snakemake.input.get("partner"))
