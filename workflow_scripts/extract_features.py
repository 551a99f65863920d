from csfbench.logs import job_logging
from csfbench.workflow.resources import loader_workers
from csfbench.specs import EvalSet, ModelSpec
from csfbench.stages.features import extract

with job_logging(snakemake.log[0], snakemake.threads):
    extract(ModelSpec.from_json(snakemake.params.spec), EvalSet.from_json(snakemake.params.eval_set),
            snakemake.input.checkpoint, snakemake.output.features, snakemake.params.batch_size,
            snakemake.params.compression, loader_workers(snakemake.params.num_workers, snakemake.threads),
            feature_dtype=snakemake.params.feature_dtype)
