from csfbench.logs import job_logging
from csfbench.stages.conformal import write_band

with job_logging(snakemake.log[0], snakemake.threads):
    w = snakemake.wildcards
    write_band(int(w.n), float(w.delta), w.method, int(w.n_mc), int(w.seed), snakemake.output.band)
