from csfbench.logs import job_logging
from csfbench.stages.conformal import correction_band
from csfbench.workflow.sections import CorrectionBand

with job_logging(snakemake.log[0], snakemake.threads):
    correction_band(CorrectionBand.from_param(snakemake.params.band), snakemake.output.band)
