# Pair analyses (Yang, Zhang & Russakovsky, "ImageNet-OOD", ICLR 2024): one job per source over the scores of
# its models (fit group `none`): the A_co/A_io/A_ci decomposition of every (ID-role, OOD-role) pair with its
# identities checked, the conditional-AUROC table, the pair grid, cliques over (model, pair) blocks,
# transferred-threshold false rejection, the random-network check, the distance-controlled AUROC, the MSP vs
# Max-Logit rank comparison with score densities and the rank-gap gallery, each a table and a figure in the
# report; then ICONIC-444's category tables over every source.  `analyses.enabled: false` leaves the stage
# without jobs.


rule pair_analyses:
    input:
        unpack(jobwise(G.analysis_inputs)),
    output:
        decomposition=paths.analysis_table("decomposition"),
        decomposition_view=report(paths.table_view(paths.analysis_table("decomposition")),
                                  caption="../report/table_decomposition.rst", category="Pair analyses"),
        decomposition_png=report(paths.figure("decomposition_{source}.png"),
                                 caption="../report/figure_decomposition.rst", category="Pair analyses"),
        decomposition_pdf=paths.figure("decomposition_{source}.pdf"),
        pair_grid=paths.analysis_table("pair_grid"),
        pair_grid_view=report(paths.table_view(paths.analysis_table("pair_grid")),
                              caption="../report/table_pair_grid.rst", category="Pair analyses"),
        conditional=paths.analysis_table("conditional"),
        conditional_view=report(paths.table_view(paths.analysis_table("conditional")),
                                caption="../report/table_conditional.rst", category="Pair analyses"),
        conditional_png=report(paths.figure("conditional_{source}.png"),
                               caption="../report/figure_conditional.rst", category="Pair analyses"),
        conditional_pdf=paths.figure("conditional_{source}.pdf"),
        frr=paths.analysis_table("frr"),
        frr_view=report(paths.table_view(paths.analysis_table("frr")),
                        caption="../report/table_frr.rst", category="Pair analyses"),
        frr_png=report(paths.figure("frr_{source}.png"),
                       caption="../report/figure_frr.rst", category="Pair analyses"),
        frr_pdf=paths.figure("frr_{source}.pdf"),
        random_check=paths.analysis_table("random_check"),
        random_check_view=report(paths.table_view(paths.analysis_table("random_check")),
                                 caption="../report/table_random_check.rst", category="Pair analyses"),
        distance=paths.analysis_table("distance"),
        distance_view=report(paths.table_view(paths.analysis_table("distance")),
                             caption="../report/table_distance.rst", category="Pair analyses"),
        distance_overlap=paths.analysis_table("distance_overlap"),
        categories=paths.analysis_table("categories_long"),
        ranks=paths.analysis_table("ranks"),
        ranks_view=report(paths.table_view(paths.analysis_table("ranks")),
                          caption="../report/table_ranks.rst", category="Pair analyses"),
        gallery=paths.analysis_table("gallery"),
        gallery_view=report(paths.table_view(paths.analysis_table("gallery")),
                            caption="../report/table_gallery.rst", category="Pair analyses"),
        gallery_png=report(paths.figure("gallery_{source}.png"), caption="../report/figure_gallery.rst",
                           category="Pair analyses"),
        gallery_pdf=paths.figure("gallery_{source}.pdf"),
        scores_png=report(paths.figure("scores_{source}.png"), caption="../report/figure_scores.rst",
                          category="Pair analyses"),
        scores_pdf=paths.figure("scores_{source}.pdf"),
        rankings=paths.pair_rankings(),
        pair_metrics=paths.pair_metrics(),
        rankings_table=paths.analysis_table("pair_rankings"),
        rankings_table_view=report(paths.table_view(paths.analysis_table("pair_rankings")),
                                   caption="../report/table_pair_rankings.rst", category="Pair analyses"),
        rankings_png=report(paths.figure("pair_rankings_{source}.png"),
                            caption="../report/figure_pair_rankings.rst", category="Pair analyses"),
        rankings_pdf=paths.figure("pair_rankings_{source}.pdf"),
        png=report(paths.figure("pairs_{source}.png"), caption="../report/figure_pairs.rst",
                   category="Pair analyses"),
        pdf=paths.figure("pairs_{source}.pdf"),
        distance_png=report(paths.figure("distance_{source}.png"), caption="../report/figure_distance.rst",
                            category="Pair analyses"),
        distance_pdf=paths.figure("distance_{source}.pdf"),
    params:
        settings=setting("analyses"),
        alpha=G.setting("ranking/alpha"),
        gallery_sets=jobwise(G.gallery_sets_json),
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
        long=G.category_inputs(),
    output:
        averaged=paths.category_table("averaged"),
        averaged_view=report(paths.table_view(paths.category_table("averaged")),
                             caption="../report/table_categories.rst", category="Pair analyses"),
        pooled=paths.category_table("pooled"),
        pooled_view=report(paths.table_view(paths.category_table("pooled")),
                           caption="../report/table_categories_pooled.rst", category="Pair analyses"),
        png=report(paths.figure("categories.png"), caption="../report/figure_categories.rst",
                   category="Pair analyses"),
        pdf=paths.figure("categories.pdf"),
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


# The distance-controlled AUROC's covariate query sets (ImageNet-OOD §4.2 compares covariate and semantic sets at
# equal distance): a source's covariate sets embedded with the proximity stage's encoder, in a file of their own
# beside the proximity stage's embeddings (whose near/mid/far stratification covers only the semantic sets).
rule covariate_embed:
    input:
        unpack(jobwise(G.covariate_embed_inputs)),
    output:
        embeddings=paths.covariate_embeddings(),
    params:
        sets=jobwise(G.covariate_embed_sets),
        encoder=setting_json("proximity/encoder"),
        batch_size=setting("proximity/batch_size"),
    log:
        paths.log("analyses", "{source}/covariate_embed"),
    benchmark:
        paths.benchmark("analyses", "{source}/covariate_embed")
    conda:
        "../envs/csfbench.yaml"
    threads: res("proximity_embed", "threads")
    resources:
        mem_mb=res("proximity_embed", "mem_mb"),
        runtime=res("proximity_embed", "runtime"),
        gpu=res("proximity_embed", "gpu"),
    script:
        "../workflow_scripts/covariate_embed.py"
