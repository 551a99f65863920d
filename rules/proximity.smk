# Near/mid/far stratification (spec 000 §6): embed each source's train and test splits and its semantic
# OOD sets with the configured encoder, then the four distances, z-scored k-means (k = 3, fixed seed),
# clusters named by ascending FD, combined with the config's static regimes (proximity/precedence).
# Runs when the config has a `proximity` section, for sources with at least one semantic OOD set.


rule proximity_embed:
    input:
        unpack(proximity_embed_inputs),
    output:
        embeddings="results/proximity/{source}/embeddings.h5",
    params:
        job=proximity_embed_params,
    log:
        "results/logs/proximity/{source}/embed.log",
    benchmark:
        "results/benchmarks/proximity/{source}/embed.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: res("proximity_embed", "threads", 1)
    resources:
        mem_mb=res("proximity_embed", "mem_mb", 8000),
        runtime=res("proximity_embed", "runtime", 60),
        gpu=res("proximity_embed", "gpu", 1),
    script:
        "../workflow_scripts/proximity_embed.py"


rule proximity_regimes:
    input:
        embeddings="results/proximity/{source}/embeddings.h5",
    output:
        csv=report(
            "results/tables/proximity_{source}.csv",
            caption="../report/proximity_table.rst",
            category="Tables",
            subcategory="Near/mid/far distances",
            labels={"source": "{source}"},
        ),
        tex="results/tables/proximity_{source}.tex",
        regimes="results/proximity/{source}/regimes.csv",
    params:
        static=static_regimes,
        precedence=config.get("proximity", {}).get("precedence", "static"),
        seed=config.get("proximity", {}).get("seed", 0),
        mmd=config.get("proximity", {}).get("mmd", {}),
    log:
        "results/logs/proximity/{source}/regimes.log",
    benchmark:
        "results/benchmarks/proximity/{source}/regimes.tsv"
    conda:
        "../envs/csfbench.yaml"
    threads: 1
    resources:
        mem_mb=res("proximity_regimes", "mem_mb", 4000),
        runtime=res("proximity_regimes", "runtime", 30),
    script:
        "../workflow_scripts/proximity_regimes.py"
