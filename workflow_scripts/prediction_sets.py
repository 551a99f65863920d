import json

from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.conformal import prediction_set_table

with job_logging(snakemake.log[0], snakemake.threads):
    prediction_set_table(ModelSpec.from_json(snakemake.params.spec), snakemake.input.train, snakemake.input.test,
                         json.loads(snakemake.params.settings), snakemake.output.table)
