"""Job of ``rules/features.smk``: the feature file of one (model, evaluation set)."""
from __future__ import annotations

from pathlib import Path

from csfbench.data.eval_sets import eval_images
from csfbench.features.extract import extract_features
from csfbench.models import load_checkpoint
from csfbench.specs import EvalSet, ModelSpec
from csfbench.training.loop import resolve_device


def extract(spec: ModelSpec, eval_set: EvalSet, checkpoint: str | Path, out_h5: str | Path, batch_size: int,
            compression: str, num_workers: int = 0, feature_dtype: str = "float32") -> None:
    """Write the feature file of one (model, evaluation set), its features stored as ``feature_dtype``; the
    training set's also holds the head."""
    device = resolve_device()
    model = load_checkpoint(spec, checkpoint, device)
    extract_features(model, spec, eval_images(spec, eval_set), out_h5, eval_set.name, eval_set.split,
                     eval_set.shift_type, batch_size, device, compression=compression, num_workers=num_workers,
                     feature_dtype=feature_dtype,
                     with_head=(eval_set.name == "train"),
                     prediction_classes=eval_set.label_space if eval_set.logit_mask == "restrict" else None)
