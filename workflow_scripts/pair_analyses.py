import json

from csfbench.logs import job_logging
from csfbench.specs import DatasetSpec, EvalSet
from csfbench.stages.analyses import gallery_images, write_analyses
from csfbench.workflow.sections import Analyses

with job_logging(snakemake.log[0], snakemake.threads):
    embeddings = [snakemake.input[key] for key in ("embeddings", "covariate_embeddings")
                  if key in snakemake.input.keys()]
    sets = json.loads(snakemake.params.gallery_sets)
    images = gallery_images(DatasetSpec.from_dict(sets["source"]), sets["val_size"],
                            [EvalSet.from_dict(d) for d in sets["sets"]])
    write_analyses(snakemake.wildcards.source, list(snakemake.input.scores), list(snakemake.input.metrics),
                   Analyses.from_param(snakemake.params.settings),
                   snakemake.params.alpha, dict(snakemake.output.items()), embeddings, images)
