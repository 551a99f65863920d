import json

from csfbench.evaluation import Bootstrap
from csfbench.logs import job_logging
from csfbench.specs import EnsembleSpec, EvalSet
from csfbench.stages.ensembles import score_ensemble

with job_logging(snakemake.log[0], snakemake.threads):
    spec = EnsembleSpec.from_json(snakemake.params.spec)
    eval_sets = [EvalSet.from_dict(d) for d in json.loads(snakemake.params.eval_sets)]
    # the members' feature files come member by member, each in the order of the evaluation sets
    files = iter(snakemake.input.features)
    features = {m.model: {e.name: next(files) for e in eval_sets} for m in spec.members}
    scores = snakemake.input.get("scores", [])
    score_ensemble(spec, eval_sets, snakemake.wildcards.scorer, features,
                   {m.model: path for m, path in zip(spec.members, scores)}, list(snakemake.input.get("metrics", [])),
                   snakemake.output.scores, snakemake.output.metrics, tuple(snakemake.params.metrics),
                   Bootstrap(**json.loads(snakemake.params.bootstrap)))
