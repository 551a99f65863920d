"""csfbench.provenance: which weights file each model loads, and the sha256 of a file's bytes."""
from __future__ import annotations

import hashlib

from csfbench.provenance import file_sha256, weights_key

CONFIG = {"backbones": {"vgg13": {"paradigms": ["dg"]}, "vit": {"paradigms": ["ce"], "pretrained": {"file": "v"}},
                        "resnet": {"library": "torchvision", "paradigms": ["pretrained", "random"],
                                   "weights": {"file": "r"}}}}


def test_each_model_loads_the_file_of_its_backbone_and_paradigm():
    assert weights_key(CONFIG, "vgg13", "dg") is None
    assert weights_key(CONFIG, "vit", "ce") == "backbones/vit/pretrained/file"
    assert weights_key(CONFIG, "resnet", "pretrained") == "backbones/resnet/weights/file"
    assert weights_key(CONFIG, "resnet", "random") is None


def test_file_sha256_is_the_digest_of_the_bytes(tmp_path):
    path = tmp_path / "w.bin"
    data = bytes(range(256)) * 5000  # more than one read block
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
