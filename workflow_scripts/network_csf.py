import json

from csfbench.evaluation import Bootstrap
from csfbench.logs import job_logging
from csfbench.workflow.resources import loader_workers
from csfbench.specs import EvalSet, ModelSpec
from csfbench.stages.network_csf import network_csf

with job_logging(snakemake.log[0], snakemake.threads):
    eval_sets = [EvalSet.from_dict(d) for d in json.loads(snakemake.params.eval_sets)]
    network_csf(ModelSpec.from_json(snakemake.params.spec), eval_sets, snakemake.input.checkpoint, snakemake.input.fit,
                {e.name: path for e, path in zip(eval_sets, snakemake.input.features)}, snakemake.output.scores,
                snakemake.output.metrics, tuple(snakemake.params.metrics), snakemake.params.batch_size,
                loader_workers(snakemake.params.num_workers, snakemake.threads),
                Bootstrap(**json.loads(snakemake.params.bootstrap)))
