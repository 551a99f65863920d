from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.train import pretrain

with job_logging(snakemake.log[0], snakemake.threads):
    pretrain(ModelSpec.from_json(snakemake.params.spec), snakemake.output.weights, snakemake.output.history)
