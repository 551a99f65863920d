"""ProjNorm (Yu et al. 2022) and the label-free error predictors it is compared with, and their evaluation."""
