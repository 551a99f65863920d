"""Writers of tiny datasets in exactly the real on-disk formats, for reader tests.

Each writer creates the dataset directory under a given folder and returns the directory together
with what a reader must give back (images as uint8 N×H×W×3, labels as int64), so tests can compare.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
from PIL import Image

CIFAR100_COARSE = (
    "aquatic_mammals", "fish", "flowers", "food_containers", "fruit_and_vegetables",
    "household_electrical_devices", "household_furniture", "insects", "large_carnivores",
    "large_man-made_outdoor_things", "large_natural_outdoor_scenes", "large_omnivores_and_herbivores",
    "medium_mammals", "non-insect_invertebrates", "people", "reptiles", "small_mammals", "trees",
    "vehicles_1", "vehicles_2",
)  # fmt: skip
CIFAR100_FINE_BY_COARSE = (
    ("beaver", "dolphin", "otter", "seal", "whale"),
    ("aquarium_fish", "flatfish", "ray", "shark", "trout"),
    ("orchid", "poppy", "rose", "sunflower", "tulip"),
    ("bottle", "bowl", "can", "cup", "plate"),
    ("apple", "mushroom", "orange", "pear", "sweet_pepper"),
    ("clock", "keyboard", "lamp", "telephone", "television"),
    ("bed", "chair", "couch", "table", "wardrobe"),
    ("bee", "beetle", "butterfly", "caterpillar", "cockroach"),
    ("bear", "leopard", "lion", "tiger", "wolf"),
    ("bridge", "castle", "house", "road", "skyscraper"),
    ("cloud", "forest", "mountain", "plain", "sea"),
    ("camel", "cattle", "chimpanzee", "elephant", "kangaroo"),
    ("fox", "porcupine", "possum", "raccoon", "skunk"),
    ("crab", "lobster", "snail", "spider", "worm"),
    ("baby", "boy", "girl", "man", "woman"),
    ("crocodile", "dinosaur", "lizard", "snake", "turtle"),
    ("hamster", "mouse", "rabbit", "shrew", "squirrel"),
    ("maple_tree", "oak_tree", "palm_tree", "pine_tree", "willow_tree"),
    ("bicycle", "bus", "motorcycle", "pickup_truck", "train"),
    ("lawn_mower", "rocket", "streetcar", "tank", "tractor"),
)
# The real meta lists the fine names alphabetically; fine label = index in this list.
CIFAR100_FINE = tuple(sorted(name for group in CIFAR100_FINE_BY_COARSE for name in group))
COARSE_OF_FINE = {fine: coarse for coarse, group in enumerate(CIFAR100_FINE_BY_COARSE) for fine in group}

TINY_WNIDS = ("n02124075", "n01443537", "n04067472")  # not sorted: labels follow file order
SVHN_SIDE = 32


@dataclass
class Written:
    """A written dataset: its directory and, per split or file, the expected images and labels."""

    root: Path
    images: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _random_images(rng: np.random.Generator, n: int, side: int) -> np.ndarray:
    """n random RGB images, uint8 n×side×side×3."""
    return rng.integers(0, 256, size=(n, side, side, 3), dtype=np.uint8)


def _channel_major(images: np.ndarray) -> np.ndarray:
    """N×32×32×3 → N×3072 rows (all red, then green, then blue), as in the CIFAR pickles."""
    return images.transpose(0, 3, 1, 2).reshape(len(images), -1)


def _pickle(path: Path, content: object) -> None:
    with path.open("wb") as f:
        pickle.dump(content, f, protocol=2)


def write_cifar10(folder: Path, n_per_file: int = 4, seed: int = 0) -> Written:
    """``cifar-10-batches-py`` with 5 train batches and a test batch of ``n_per_file`` images each."""
    root = folder / "cifar-10-batches-py"
    root.mkdir(parents=True)
    rng = _rng(seed)
    written = Written(root, {}, {})
    for file in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        images, labels = _random_images(rng, n_per_file, 32), rng.integers(0, 10, n_per_file)
        _pickle(root / file, {
            b"batch_label": f"{file} of 6".encode(),
            b"labels": [int(v) for v in labels],
            b"data": _channel_major(images),
            b"filenames": [f"img_{i}.png".encode() for i in range(n_per_file)],
        })  # fmt: skip
        written.images[file], written.labels[file] = images, labels
    _pickle(root / "batches.meta", {b"label_names": [f"class{i}".encode() for i in range(10)], b"num_vis": 3072})
    return written


def write_cifar100(folder: Path, seed: int = 0) -> Written:
    """``cifar-100-python``: ``train`` has every fine class twice, ``test`` once, in shuffled order.

    ``labels`` holds the fine labels per file (coarse = :data:`COARSE_OF_FINE` of the fine name).
    """
    root = folder / "cifar-100-python"
    root.mkdir(parents=True)
    rng = _rng(seed)
    written = Written(root, {}, {})
    coarse_by_fine = np.array([COARSE_OF_FINE[name] for name in CIFAR100_FINE])
    for file, copies in (("train", 2), ("test", 1)):
        fine = rng.permutation(np.repeat(np.arange(100), copies))
        images = _random_images(rng, len(fine), 32)
        _pickle(root / file, {
            b"filenames": [f"{file}_{i}.png".encode() for i in range(len(fine))],
            b"batch_label": f"{file} batch 1 of 1".encode(),
            b"fine_labels": [int(v) for v in fine],
            b"coarse_labels": [int(v) for v in coarse_by_fine[fine]],
            b"data": _channel_major(images),
        })  # fmt: skip
        written.images[file], written.labels[file] = images, fine
    _pickle(root / "meta", {
        b"fine_label_names": [name.encode() for name in CIFAR100_FINE],
        b"coarse_label_names": [name.encode() for name in CIFAR100_COARSE],
    })  # fmt: skip
    return written


def _save_jpeg(path: Path, image: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path, format="JPEG")


def write_tinyimagenet(folder: Path, n_train_per_class: int = 2, n_val: int = 12, seed: int = 0) -> Written:
    """``tiny-imagenet-200`` with the 3 classes :data:`TINY_WNIDS` and 64×64 JPEGs.

    ``labels["test"]`` lists the val labels in the order of ``val_annotations.txt`` (val_0, val_1, ...).
    """
    root = folder / "tiny-imagenet-200"
    rng = _rng(seed)
    root.mkdir(parents=True)
    (root / "wnids.txt").write_text("\n".join(TINY_WNIDS) + "\n")
    (root / "words.txt").write_text("".join(f"{wnid}\tsome words\n" for wnid in TINY_WNIDS))
    for wnid in TINY_WNIDS:
        boxes = []
        for i in range(n_train_per_class):
            _save_jpeg(root / "train" / wnid / "images" / f"{wnid}_{i}.JPEG", _random_images(rng, 1, 64)[0])
            boxes.append(f"{wnid}_{i}.JPEG\t0\t0\t63\t63\n")
        (root / "train" / wnid / f"{wnid}_boxes.txt").write_text("".join(boxes))
    val_labels = np.arange(n_val) % len(TINY_WNIDS)
    lines = []
    for i, label in enumerate(val_labels):
        _save_jpeg(root / "val" / "images" / f"val_{i}.JPEG", _random_images(rng, 1, 64)[0])
        lines.append(f"val_{i}.JPEG\t{TINY_WNIDS[label]}\t1\t2\t60\t61\n")
    (root / "val" / "val_annotations.txt").write_text("".join(lines))
    (root / "test" / "images").mkdir(parents=True)  # the unlabelled official test split, never read
    return Written(root, {}, {"test": val_labels})


def write_svhn(folder: Path, n: int = 7, seed: int = 0) -> Written:
    """``train_32x32.mat`` and ``test_32x32.mat``: X 32×32×3×N uint8, y N×1 double in 1..10."""
    root = folder / "svhn"
    root.mkdir(parents=True)
    rng = _rng(seed)
    written = Written(root, {}, {})
    for split in ("train", "test"):
        images = _random_images(rng, n, SVHN_SIDE)
        digits = np.arange(n) % 10  # digit 0 is stored as label 10
        y = np.where(digits == 0, 10, digits).astype(np.float64).reshape(n, 1)
        scipy.io.savemat(root / f"{split}_32x32.mat", {"X": images.transpose(1, 2, 3, 0), "y": y})
        written.images[split], written.labels[split] = images, digits
    return written


def write_image_folder(folder: Path, seed: int = 0) -> Written:
    """Nested folders with PNG/BMP (lossless), JPEG and a few non-image files, mixed-case extensions.

    ``images`` maps the relative paths of the lossless files to their pixels.
    """
    root = folder / "images"
    rng = _rng(seed)
    lossless = {"b/nested/deep/z.PNG": 16, "a.png": 8, "b/c.bmp": 12, "b/nested/y.Png": 10}
    written = Written(root, {}, {})
    for relative, side in lossless.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        image = _random_images(rng, 1, side)[0]
        Image.fromarray(image).save(root / relative, format="BMP" if relative.endswith(".bmp") else "PNG")
        written.images[relative] = image
    for relative in ("b/photo.JPG", "a_dir/x.jpeg"):
        _save_jpeg(root / relative, _random_images(rng, 1, 20)[0])
    (root / "README.txt").write_text("not an image")
    (root / "b" / "nested" / "labels.csv").write_text("x,y\n")
    return written


def write_cifar_c(folder: Path, corruption: str = "gaussian_noise", n_per_severity: int = 4, seed: int = 0) -> Written:
    """``CIFAR-10-C`` with one ``{corruption}.npy`` (5 severities stacked) and ``labels.npy``."""
    root = folder / "CIFAR-10-C"
    root.mkdir(parents=True)
    rng = _rng(seed)
    images = _random_images(rng, 5 * n_per_severity, 32)
    labels = np.tile(rng.integers(0, 10, n_per_severity), 5).astype(np.uint8)  # the real file is uint8
    np.save(root / f"{corruption}.npy", images)
    np.save(root / "labels.npy", labels)
    return Written(root, {corruption: images}, {corruption: labels.astype(np.int64)})


def write_npy(folder: Path, n: int = 5, side: int = 8, seed: int = 0) -> Written:
    """csfbench native ``{split}/images.npy`` (N×H×W×3 uint8) and ``{split}/labels.npy`` (int64, -1 allowed)."""
    root = folder / "demo"
    rng = _rng(seed)
    written = Written(root, {}, {})
    for split in ("train", "test"):
        (root / split).mkdir(parents=True)
        images, labels = _random_images(rng, n, side), np.arange(n, dtype=np.int64) - 1
        np.save(root / split / "images.npy", images)
        np.save(root / split / "labels.npy", labels)
        written.images[split], written.labels[split] = images, labels
    return written
