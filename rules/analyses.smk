# Pair analyses (Yang, Zhang & Russakovsky, "ImageNet-OOD", ICLR 2024): one job per source over the scores of
# its models (fit group `none`): the A_co/A_io/A_ci decomposition of every (ID-role, OOD-role) pair with its
# identities checked, the pair grid, cliques over (model, pair) blocks, transferred-threshold false rejection
# and the random-network check.  `analyses.enabled: false` leaves the stage without jobs.


rule pair_analyses:
    input:
        unpack(analysis_inputs),
    output:
        decomposition=paths.analysis_table("decomposition"),
        pair_grid=report(paths.analysis_table("pair_grid"), caption="../report/table_pair_grid.rst",
                         category="Pair analyses"),
        conditional=report(paths.analysis_table("conditional"), caption="../report/table_conditional.rst",
                           category="Pair analyses"),
        frr=report(paths.analysis_table("frr"), caption="../report/table_frr.rst", category="Pair analyses"),
        random_check=report(paths.analysis_table("random_check"), caption="../report/table_random_check.rst",
                            category="Pair analyses"),
        distance=report(paths.analysis_table("distance"), caption="../report/table_distance.rst",
                        category="Pair analyses"),
        distance_overlap=paths.analysis_table("distance_overlap"),
        categories=paths.analysis_table("categories_long"),
        ranks=paths.analysis_table("ranks"),
        gallery=paths.analysis_table("gallery"),
        gallery_png=report(paths.figure("gallery_{source}.png"), caption="../report/figure_gallery.rst",
                           category="Pair analyses"),
        gallery_pdf=paths.figure("gallery_{source}.pdf"),
        scores_png=report(paths.figure("scores_{source}.png"), caption="../report/figure_scores.rst",
                          category="Pair analyses"),
        scores_pdf=paths.figure("scores_{source}.pdf"),
        rankings=paths.pair_rankings(),
        png=report(paths.figure("pairs_{source}.png"), caption="../report/figure_pairs.rst",
                   category="Pair analyses"),
        pdf=paths.figure("pairs_{source}.pdf"),
        distance_png=report(paths.figure("distance_{source}.png"), caption="../report/figure_distance.rst",
                            category="Pair analyses"),
        distance_pdf=paths.figure("distance_{source}.pdf"),
    params:
        settings=config["analyses"],
        alpha=config["ranking"]["alpha"],
        gallery_sets=lambda w: gallery_sets_json(w.source),
    log:
        paths.log("analyses", "{source}"),
    benchmark:
        paths.benchmark("analyses", "{source}")
    conda:
        "../envs/csfbench.yaml"
    threads: res("pair_analyses", "threads")
    resources:
        mem_mb=res("pair_analyses", "mem_mb"),
        runtime=res("pair_analyses", "runtime"),
    script:
        "../workflow_scripts/pair_analyses.py"


rule category_tables:
    input:
        long=lambda w: [paths.analysis_table("categories_long", source) for source in analysis_sources()],
    output:
        averaged=report(paths.category_table("averaged"), caption="../report/table_categories.rst",
                        category="Pair analyses"),
        pooled=paths.category_table("pooled"),
    log:
        paths.log("analyses", "category_tables"),
    benchmark:
        paths.benchmark("analyses", "category_tables")
    conda:
        "../envs/csfbench.yaml"
    threads: res("category_tables", "threads")
    resources:
        mem_mb=res("category_tables", "mem_mb"),
        runtime=res("category_tables", "runtime"),
    script:
        "../workflow_scripts/category_tables.py"
