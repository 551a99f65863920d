from csfbench.logs import job_logging
from csfbench.workflow.resources import loader_workers
from csfbench.specs import ModelSpec
from csfbench.stages.train import train

with job_logging(snakemake.log[0], snakemake.threads):
    train(ModelSpec.from_json(snakemake.params.spec), snakemake.output.checkpoint, snakemake.output.history,
          num_workers=loader_workers(snakemake.params.num_workers, snakemake.threads))
