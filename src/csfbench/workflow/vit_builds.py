"""Whether timm builds a config's ViTs: each ``arch`` mapping of ``backbones/vit`` or of a timm
``proximity/encoder``, built as :func:`csfbench.models.vit.create_timm_vit` builds it, on torch's meta device
(no weights allocated).  torch and timm are imported only when a config has a ViT to build.
"""
from __future__ import annotations

import functools
import inspect
import json

from csfbench.errors import ConfigError, did_you_mean


def check_timm_builds(builds: list[tuple], origin: str) -> None:
    """``builds``: (key path of the ``arch`` mapping, arch, n_classes, image_size, dropout) per ViT; a
    :class:`~csfbench.errors.ConfigError` at the key under ``arch`` that keeps timm from building the first that
    fails (:func:`_timm_vit_problem`)."""
    for key, arch, *shape in builds:
        problem = _timm_vit_problem(_canonical(arch), *shape)
        if problem:
            subkey, expected, found = problem
            raise ConfigError(f"{key}/{subkey}".rstrip("/"), expected, found, origin)


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


@functools.cache
def _timm_vit_problem(arch_json: str, n_classes: int, image_size: int, dropout: int) -> tuple | None:
    """(key under ``arch``, expected, found) of what keeps timm from building the ViT of ``arch`` (``dropout``
    1: with its ``drop_rate``), None when it builds.  Built on torch's meta device (no weights allocated, ~0.2 s for a
    ViT-B); torch and timm are imported here, so a config without a ViT is validated without them."""
    import torch

    from csfbench.models.vit import create_timm_vit, timm

    arch = json.loads(arch_json)
    name = arch["timm_name"]
    if not timm.is_model(name):
        return "timm_name", f"a timm architecture (timm.list_models()){did_you_mean(name, timm.list_models())}", name
    with torch.device("meta"):
        try:
            create_timm_vit(arch, n_classes, image_size, dropout, None)
        except Exception as err:  # noqa: BLE001 -- whatever timm raises is the config's problem
            unknown = _unknown_keyword(arch, type(timm.create_model(name))) if isinstance(err, TypeError) else None
            return unknown or ("", f"keywords timm builds {name} with ({type(err).__name__}: {err})", arch)
    return None


#: the keywords of a timm ViT that csfbench.models.vit.create_timm_vit sets from the source
_SET_BY_SOURCE = ("img_size", "num_classes")


def _unknown_keyword(arch: dict, model_class: type) -> tuple | None:
    """(key, expected, found) of the first key of ``arch`` that is no keyword of ``model_class`` (nor
    ``timm_name``/``drop_rate``); None when the class takes any keyword or every key is one."""
    params = inspect.signature(model_class).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    valid = sorted({"timm_name", "drop_rate", *params} - {"device", "dtype", *_SET_BY_SOURCE})
    key = next((key for key in arch if key not in valid), None)
    if key is None:
        return None
    hint = " (the source's image_size and n_classes set img_size and num_classes)" if key in _SET_BY_SOURCE \
        else did_you_mean(key, valid)
    return key, f"a keyword of timm's {model_class.__name__}: {valid}{hint}", key
