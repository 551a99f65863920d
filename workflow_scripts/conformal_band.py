from csfbench.logs import job_logging
from csfbench.metrics.conformal import write_band  # not csfbench.stages.conformal: a band job stays light

with job_logging(snakemake.log[0], snakemake.threads):
    w = snakemake.wildcards
    write_band(int(w.n), float(w.delta), w.method, int(w.n_mc), int(w.seed), snakemake.output.band)
