# csfbench: confidence-scoring-function benchmark (README.md; stages and file contracts in docs/design.md).
import os

from snakemake.utils import min_version

min_version("9.0")

# Jobs inherit this (locally and under SLURM): OpenBLAS threads sleep at once after a threaded call
# instead of spinning for ~0.1 s, which halves the speed of the CSF kernels' own row-block threads
# (csfbench.csf.blocks) on the same cores; measured in docs/benchmarks.md.  Read when OpenBLAS loads.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


# The embedded demo is the default; a config given with --configfile replaces it wholesale
# (it is not merged into the demo's keys).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"



report: "report/workflow.rst"


onstart:
    # temporaries of jobs killed in an earlier run (csfbench.atomic) would hold disk space until rewritten
    for stale in remove_stale_temporaries(paths.RESULTS):
        logger.info(f"removed the temporary file of a killed job: {stale}")


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/features.smk"
include: "rules/csf.smk"
include: "rules/network_csf.smk"
include: "rules/ensembles.smk"
include: "rules/geometry.smk"
include: "rules/proximity.smk"
include: "rules/shifts.smk"
include: "rules/adversarial.smk"
include: "rules/projnorm.smk"
include: "rules/conformal.smk"
include: "rules/analyses.smk"
include: "rules/aggregate.smk"
include: "rules/ranking.smk"
include: "rules/audit.smk"
include: "rules/reproduction.smk"
include: "rules/figures.smk"


rule all:
    default_target: True
    input:
        **G.all_targets(),
    localrule: True
