import json

from csfbench.jobs import score_and_evaluate
from csfbench.logs import job_logging

with job_logging(snakemake.log[0], snakemake.threads):
    score_and_evaluate(json.loads(snakemake.params.spec), json.loads(snakemake.params.eval_set), snakemake.input.fit,
                       snakemake.input.features, snakemake.output.scores, snakemake.output.metrics,
                       snakemake.input.get("id_scores"))
