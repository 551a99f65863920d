"""The images of an evaluation set (:class:`csfbench.specs.EvalSet`), in the order of its feature, scores and
embeddings files: an ID split of the source's dataset, or a shifted set (:mod:`csfbench.data.sources`)."""
from __future__ import annotations

from csfbench.data.base import ImageSet
from csfbench.data.sources import shift_set, source_split
from csfbench.specs import DatasetSpec, EvalSet, ModelSpec


def set_images(source_dataset: DatasetSpec, val_size: int, eval_set: EvalSet) -> ImageSet:
    """The images of ``eval_set``: the ID split of that name of ``source_dataset`` (``val_size``: images of its
    official test split that form the validation split) when the set has no dataset of its own, else the
    shifted set."""
    if eval_set.dataset is None:
        return source_split(source_dataset, val_size, eval_set.name)
    return shift_set(eval_set.dataset, eval_set.shift_type)


def eval_images(spec: ModelSpec, eval_set: EvalSet) -> ImageSet:
    """The images of an evaluation set of the model ``spec``: an ID split of its source or a shifted set."""
    return set_images(spec.dataset, spec.val_size, eval_set)
