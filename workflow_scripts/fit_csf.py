import json

from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.csf import fit_csf

with job_logging(snakemake.log[0], snakemake.threads):
    fit_csf(ModelSpec.from_json(snakemake.params.spec), json.loads(snakemake.params.csf), snakemake.wildcards.fit_group,
            snakemake.input.train, snakemake.input.val, snakemake.output.fit)
