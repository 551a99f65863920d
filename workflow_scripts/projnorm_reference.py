import json

from csfbench.jobs import projnorm_reference
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    projnorm_reference(json.loads(snakemake.params.spec), json.loads(snakemake.params.settings),
                       snakemake.input.checkpoint, snakemake.output.reference)
