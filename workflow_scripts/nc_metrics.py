import json

from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.geometry import write_model_nc

with job_logging(snakemake.log[0], snakemake.threads):
    nc = json.loads(snakemake.params.nc)
    write_model_nc(ModelSpec.from_json(snakemake.params.spec), snakemake.input.train,
                   dict(zip(snakemake.params.fit_groups, snakemake.input.fits)), snakemake.output.records,
                   nc["normalizer"], nc.get("variance"))
