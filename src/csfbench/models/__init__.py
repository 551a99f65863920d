"""Backbones (VGG-13, timm ViT) and the classifier wrapper with paradigm heads."""
from csfbench.models.factory import build_model, load_checkpoint

__all__ = ["build_model", "load_checkpoint"]
