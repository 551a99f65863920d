# Near/mid/far stratification of each source's semantic OOD sets: embed its train and test splits and
# its semantic OOD sets with the configured encoder, then the four distances, z-scored k-means (k = 3,
# fixed seed), clusters named by ascending FD, combined with the config's static regimes
# (proximity/precedence).  Runs when the config has a `proximity` section, for sources with at least
# one semantic OOD set.


rule proximity_embed:
    input:
        unpack(jobwise(G.proximity_embed_inputs)),
    output:
        embeddings=paths.proximity_embeddings(),
    params:
        job=jobwise(G.proximity_embed_params),
        encoder=setting_json("proximity/encoder"),
        batch_size=setting("proximity/batch_size"),
    log:
        paths.log("proximity", "{source}/embed"),
    benchmark:
        paths.benchmark("proximity", "{source}/embed")
    conda:
        "../envs/csfbench.yaml"
    threads: res("proximity_embed", "threads")
    resources:
        mem_mb=res("proximity_embed", "mem_mb"),
        runtime=res("proximity_embed", "runtime"),
        gpu=res("proximity_embed", "gpu"),
    script:
        "../workflow_scripts/proximity_embed.py"


rule proximity_regimes:
    input:
        embeddings=paths.proximity_embeddings(),
    output:
        csv=paths.proximity_table(ext="csv"),
        tex=paths.proximity_table(ext="tex"),
        view=report(paths.table_view(paths.proximity_table(ext="csv")), caption="../report/proximity_table.rst",
                    category="Tables", subcategory="Near/mid/far distances", labels={"source": "{source}"}),
        regimes=paths.proximity_regimes(),
    params:
        static=jobwise(G.static_regimes),
        precedence=setting("proximity/precedence"),
        seed=setting("proximity/seed"),
        mmd=setting("proximity/mmd"),
    log:
        paths.log("proximity", "{source}/regimes"),
    benchmark:
        paths.benchmark("proximity", "{source}/regimes")
    conda:
        "../envs/csfbench.yaml"
    threads: res("proximity_regimes", "threads")
    resources:
        mem_mb=res("proximity_regimes", "mem_mb"),
        runtime=res("proximity_regimes", "runtime"),
    script:
        "../workflow_scripts/proximity_regimes.py"
