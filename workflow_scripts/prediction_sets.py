from csfbench.data.eval_sets import eval_images
from csfbench.logs import job_logging
from csfbench.workflow.sections import PredictionSets
from csfbench.workflow.resources import loader_workers
from csfbench.specs import EvalSet, ModelSpec
from csfbench.stages.conformal import prediction_set_table
from csfbench.stages.network_csf import gram_class_scores

with job_logging(snakemake.log[0], snakemake.threads):
    spec = ModelSpec.from_json(snakemake.params.spec)
    gram = None
    if "network_fit" in snakemake.input.keys():
        def gram():
            return gram_class_scores(spec, snakemake.input.checkpoint, snakemake.input.network_fit,
                                     eval_images(spec, EvalSet("test", "id", "test")), snakemake.params.batch_size,
                                     loader_workers(snakemake.params.num_workers, snakemake.threads))
    prediction_set_table(spec, snakemake.input.train, snakemake.input.test,
                         PredictionSets.from_param(snakemake.params.settings), snakemake.output.table, gram)
