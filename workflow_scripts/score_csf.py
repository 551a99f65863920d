import json

from csfbench.csf.device import job_device
from csfbench.evaluation import Bootstrap
from csfbench.logs import job_logging
from csfbench.specs import EvalSet, ModelSpec
from csfbench.stages.csf import score_csf

with job_logging(snakemake.log[0], snakemake.threads):
    eval_sets = [EvalSet.from_dict(d) for d in json.loads(snakemake.params.eval_sets)]
    score_csf(ModelSpec.from_json(snakemake.params.spec), eval_sets, snakemake.input.fit,
              {e.name: path for e, path in zip(eval_sets, snakemake.input.features)}, snakemake.output.scores,
              snakemake.output.metrics, tuple(snakemake.params.metrics),
              Bootstrap(**json.loads(snakemake.params.bootstrap)),
              job_device(snakemake.resources.csf_device, snakemake.resources.gpu))
