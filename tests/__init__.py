"""csfbench's tests: unit/ (per package), workflow/ (Snakemake end to end), helpers/."""
