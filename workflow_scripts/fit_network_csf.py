from csfbench.logs import job_logging
from csfbench.workflow.sections import NetworkCsfFit
from csfbench.workflow.resources import loader_workers
from csfbench.specs import ModelSpec
from csfbench.stages.network_csf import fit_network_csf

with job_logging(snakemake.log[0], snakemake.threads):
    fit_network_csf(ModelSpec.from_json(snakemake.params.spec), NetworkCsfFit.from_param(snakemake.params.settings),
                    snakemake.input.checkpoint, snakemake.output.fit, snakemake.params.batch_size,
                    loader_workers(snakemake.params.num_workers, snakemake.threads))
