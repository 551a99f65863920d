from csfbench.logs import job_logging
from csfbench.stages.figures import write_selected_configuration_tables

with job_logging(snakemake.log[0], snakemake.threads):
    out = snakemake.output
    write_selected_configuration_tables(snakemake.input.selection, snakemake.params.metric, out.dropout_csv,
                                        out.dropout_tex, out.reward_csv, out.reward_tex)
