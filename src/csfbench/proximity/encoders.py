"""Image (and text) encoders whose embedding space the proximity distances are measured in
(Claros-Olivares & Brockmeier, §3.3, App. B).

The config's ``proximity/encoder`` section picks one:

* ``kind: timm`` — any timm-loadable weights file the workflow has (the demo: its own pretrained ViT,
  ``results/pretrained/vit_demo.safetensors``).  Keys: ``file``, ``num_classes`` (of the file's head),
  ``arch`` (``timm_name`` plus timm keyword arguments, as ``backbones/vit/arch``), ``image_size`` and
  ``normalize`` ({mean, std}).  The embedding is the pre-logit feature (the ViT's CLS token after the final
  norm).  No text tower: the text-alignment distance is skipped.
* ``kind: open_clip`` — an open_clip model with a local weights file (the paper: ``ViT-B-32`` with
  ``laion2b_s34b_b79k`` weights).  Keys: ``model``, ``weights``, optional ``class_names``
  ({source: list of names, or a text file with one name per line}) and ``templates`` (the prompt ensemble,
  default the paper's four).  ``open_clip`` is an optional dependency (``pip install 'csfbench[proximity]'``),
  imported only when this kind is configured.  Images go through the model's own preprocessing.

Embeddings are float32 ``N × E``, not normalised here (:mod:`csfbench.proximity.distances` normalises).
Text embeddings: per class, the mean of the raw embeddings of the prompts, L2-normalised (``C × E``).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from csfbench.data.base import ImageSet

log = logging.getLogger(__name__)

#: the prompt ensemble of the authors' ``src/clip_utils.py``
TEMPLATES = ("A photo of {}", "A low-resolution photo of {}", "A zoomed-in photo of {}", "A centered photo of {}")
KINDS = ("timm", "open_clip")


class TimmEncoder:
    """Pre-logit features of a timm model loaded from a local weights file (no text tower)."""

    has_text = False

    def __init__(self, cfg: dict, device: torch.device):
        from csfbench.models.vit import create_timm_vit, split_vit

        pretrained = {"file": cfg["file"], "num_classes": int(cfg["num_classes"])}
        vit = create_timm_vit(dict(cfg["arch"]), int(cfg["num_classes"]), int(cfg["image_size"]), 0, pretrained)
        self.encoder = split_vit(vit)[0].to(device).eval()
        self.image_size = int(cfg["image_size"])
        self.normalize = cfg["normalize"]
        self.device = device
        self.description = f"timm {cfg['arch']['timm_name']} ({cfg['file']})"

    @torch.no_grad()
    def embed(self, images: ImageSet, batch_size: int) -> np.ndarray:
        from csfbench.data.loader import make_loader
        from csfbench.data.transforms import normalize

        out = []
        for raw, _, _ in make_loader(images, self.image_size, batch_size):
            out.append(self.encoder(normalize(raw.to(self.device), **self.normalize)).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.encoder.feature_dim), np.float32)

    def embed_text(self, names: list[str]) -> np.ndarray:
        raise ValueError("the timm encoder has no text tower")


def _import_open_clip():
    from csfbench.torch_compat import ensure_torchvision

    ensure_torchvision()  # open_clip imports torchvision (CPU-torch fix, see csfbench.torch_compat)
    try:
        import open_clip
    except ImportError as exc:
        raise ImportError("proximity/encoder/kind is 'open_clip' but the open_clip package is not installed "
                          f"({exc}); install it with: pip install -c constraints.txt 'csfbench[proximity]'") from None
    return open_clip


class OpenClipEncoder:
    """An open_clip image and text tower with a local weights file and the model's own preprocessing."""

    has_text = True

    def __init__(self, cfg: dict, device: torch.device):
        open_clip = _import_open_clip()
        weights = Path(cfg["weights"])
        if not weights.is_file():
            raise FileNotFoundError(f"open_clip weights not found: {weights} (proximity/encoder/weights)")
        model, _, preprocess = open_clip.create_model_and_transforms(cfg["model"], pretrained=str(weights),
                                                                     device=device)
        self.model = model.eval()
        self.preprocess = preprocess
        self.tokenizer = open_clip.get_tokenizer(cfg["model"])
        self.templates = tuple(cfg.get("templates", TEMPLATES))
        self.device = device
        self.description = f"open_clip {cfg['model']} ({weights})"

    @torch.no_grad()
    def embed(self, images: ImageSet, batch_size: int) -> np.ndarray:
        out = []
        for start in range(0, len(images), batch_size):
            batch = torch.stack([self.preprocess(Image.fromarray(images.image(i)))
                                 for i in range(start, min(start + batch_size, len(images)))])
            out.append(self.model.encode_image(batch.to(self.device)).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)

    @torch.no_grad()
    def embed_text(self, names: list[str]) -> np.ndarray:
        rows = []
        for name in names:
            tokens = self.tokenizer([t.format(name.replace("_", " ")) for t in self.templates]).to(self.device)
            mean = self.model.encode_text(tokens).float().mean(0)
            rows.append((mean / mean.norm()).cpu().numpy())
        return np.stack(rows)


def build_encoder(cfg: dict, device: torch.device):
    """The encoder of a ``proximity/encoder`` config section on ``device``."""
    kind = cfg.get("kind")
    if kind == "timm":
        return TimmEncoder(cfg, device)
    if kind == "open_clip":
        return OpenClipEncoder(cfg, device)
    raise ValueError(f"proximity/encoder/kind must be one of {KINDS}, got {kind!r}")


def class_names(cfg: dict, source: str) -> list[str] | None:
    """The class names of ``source`` for the text tower (a list, or a file with one name per line); None
    when the encoder has none configured for it."""
    names = cfg.get("class_names", {}).get(source)
    if names is None or isinstance(names, list):
        return names
    path = Path(names)
    if not path.is_file():
        raise FileNotFoundError(f"class-name file not found: {path} (proximity/encoder/class_names/{source})")
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def embed_timed(encoder, images: ImageSet, batch_size: int, what: str) -> np.ndarray:
    """``encoder.embed`` with a progress line in the job log."""
    t0 = time.perf_counter()
    emb = encoder.embed(images, batch_size)
    log.info("%s: %d images embedded (%d-d) in %.1f s", what, len(emb), emb.shape[1], time.perf_counter() - t0)
    return emb
