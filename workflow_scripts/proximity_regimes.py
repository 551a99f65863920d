import json

from csfbench.logs import job_logging
from csfbench.proximity.distances import DEFAULT_MMD_SUBSET_SIZE, DEFAULT_MMD_SUBSETS
from csfbench.proximity.stratification import write_stratification

with job_logging(snakemake.log[0], snakemake.threads):
    mmd = snakemake.params.mmd
    write_stratification(snakemake.wildcards.source, snakemake.input.embeddings, json.loads(snakemake.params.static),
                         snakemake.params.precedence, snakemake.params.seed,
                         mmd.get("n_subsets", DEFAULT_MMD_SUBSETS), mmd.get("subset_size", DEFAULT_MMD_SUBSET_SIZE),
                         snakemake.output.csv, snakemake.output.tex, snakemake.output.regimes)
