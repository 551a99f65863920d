import json

from csfbench.jobs import fit_csf
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    fit_csf(json.loads(snakemake.params.spec), json.loads(snakemake.params.csf), snakemake.wildcards.projection,
            snakemake.input.train, snakemake.input.val, snakemake.output.fit)
