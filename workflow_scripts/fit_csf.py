from csfbench.csf.device import job_device
from csfbench.csf.fit_settings import FitSettings
from csfbench.logs import job_logging
from csfbench.specs import ModelSpec
from csfbench.stages.csf import fit_csf

with job_logging(snakemake.log[0], snakemake.threads):
    # the grid protocol's OOD validation features: one file, or none (an empty named input)
    ood_val = snakemake.input.ood_val
    ood_val = [ood_val] if isinstance(ood_val, str) else list(ood_val)
    # the `csf` param (JSON) is parsed here, once, into typed settings
    fit_csf(ModelSpec.from_json(snakemake.params.spec), FitSettings.from_json(snakemake.params.csf),
            snakemake.wildcards.fit_group, snakemake.input.train, snakemake.input.val, snakemake.output.fit,
            ood_val[0] if ood_val else None, job_device(snakemake.resources.csf_device, snakemake.resources.gpu))
