"""Covariate-shift sets: deterministic CIFAR-10-C-style corruptions and the official archive layout."""
from csfbench.shifts.corruptions import CORRUPTIONS, SEVERITIES, corrupt_image, corrupt_images

__all__ = ["CORRUPTIONS", "SEVERITIES", "corrupt_image", "corrupt_images"]
