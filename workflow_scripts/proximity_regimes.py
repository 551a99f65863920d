import json

from csfbench.logs import job_logging
from csfbench.stages.proximity import write_stratification

with job_logging(snakemake.log[0], snakemake.threads):
    mmd = snakemake.params.mmd
    write_stratification(snakemake.wildcards.source, snakemake.input.embeddings, json.loads(snakemake.params.static),
                         snakemake.params.precedence, snakemake.params.seed, mmd["n_subsets"], mmd["subset_size"],
                         snakemake.output.csv, snakemake.output.tex, snakemake.output.regimes)
