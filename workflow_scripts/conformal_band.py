from csfbench.logs import job_logging
from csfbench.stages.conformal import correction_band
from csfbench.workflow.sections import CorrectionBand

with job_logging(snakemake.log[0], snakemake.threads):
    if snakemake.params.get("band") is not None:
        band = CorrectionBand.from_param(snakemake.params.band)
    else:  # TODO(lead): drop (the key parsed back from the wildcards, until the rule passes the param `band`)
        w = snakemake.wildcards
        band = CorrectionBand(method=w.method, n=int(w.n), delta=float(w.delta), n_mc=int(w.n_mc), seed=int(w.seed))
    correction_band(band, snakemake.output.band)
