import json

from csfbench.geometry.nc_records import write_model_nc
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    nc = json.loads(snakemake.params.nc)
    write_model_nc(json.loads(snakemake.params.spec), snakemake.input.train,
                   dict(zip(snakemake.params.groups, snakemake.input.fits)), snakemake.output.records,
                   nc.get("normalizer", "authors"), nc.get("variance"))
