# Feature extraction: one HDF5 file per (model, evaluation set).


rule extract_features:
    input:
        unpack(jobwise(G.extract_inputs)),
    output:
        features=paths.features(),
    params:
        spec=jobwise(G.model_spec_json),
        eval_set=jobwise(G.eval_set_json),
        batch_size=G.setting("features/batch_size"),
        compression=G.setting("features/compression"),
        feature_dtype=G.setting("features/feature_dtype"),
        num_workers=res("extract_features", "num_workers"),
    log:
        paths.log("features", "{source}/{model}/{dataset}"),
    benchmark:
        paths.benchmark("features", "{source}/{model}/{dataset}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("extract_features", "threads")
    resources:
        mem_mb=res("extract_features", "mem_mb"),
        runtime=res("extract_features", "runtime"),
        gpu=res("extract_features", "gpu"),
    script:
        "../workflow_scripts/extract_features.py"


# A classifier evaluated with its pretrained weights (paradigm `pretrained`) gives the same feature files in every
# study that evaluates the same weights on the same data: this rule writes them under Snakemake's between-workflow
# output cache (`snakemake --cache` with SNAKEMAKE_OUTPUT_CACHE set; docs/reproducibility.md).  The cache key is
# the script, the extraction identity (csfbench.features.identity: weights settings, preprocessing, data, storage),
# the weights file's bytes and the provenance of the evaluation set's index or generated images; the study's
# names, seed, batch size and workers are read by the job from the config, outside the key.  No benchmark
# directive: Snakemake cannot fill one for a file taken from the cache.  Resources: those of extract_features.
import re

if G.shared_feature_models():

    ruleorder: extract_pretrained_features > extract_features

    rule extract_pretrained_features:
        input:
            unpack(jobwise(G.shared_extract_inputs)),
        output:
            features=paths.features(),
        params:
            extraction=jobwise(G.extraction_json),
        wildcard_constraints:
            model="|".join(map(re.escape, G.shared_feature_models())),
        log:
            paths.log("features", "{source}/{model}/{dataset}"),
        cache: True
        conda:
            "../envs/csfbench.yaml"
        threads: res("extract_features", "threads")
        resources:
            mem_mb=res("extract_features", "mem_mb"),
            runtime=res("extract_features", "runtime"),
            gpu=res("extract_features", "gpu"),
        script:
            "../workflow_scripts/extract_pretrained_features.py"
