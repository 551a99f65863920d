import json

from csfbench.logs import job_logging
from csfbench.stages.projnorm import projnorm_evaluate, study_from_inputs

with job_logging(snakemake.log[0], snakemake.threads):
    out, inp = snakemake.output, snakemake.input
    models = study_from_inputs(json.loads(snakemake.params.study), list(inp.val), list(inp.features),
                               list(inp.projnorm))
    projnorm_evaluate(models, snakemake.params.atc_score,
                      {k: out[k] for k in ("per_set", "correlations", "stress", "stress_mse")}, out.figure, out.metrics)
