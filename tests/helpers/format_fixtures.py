"""Writers of tiny datasets in exactly the real on-disk formats, for reader tests.

Each writer creates the dataset directory under a given folder and returns the directory together
with what a reader must give back (images as uint8 N×H×W×3, labels as int64), so tests can compare.
"""
from __future__ import annotations

import gzip
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
#: H x W of the IDX fixtures' images: not square, so that a transposition shows
IDX_HW = (6, 5)
#: EMNIST splits: (first label in the files, number of classes), as in csfbench.data.readers.EMNIST_SPLITS
EMNIST_LABELS = {"balanced": (0, 47), "byclass": (0, 62), "bymerge": (0, 47), "digits": (0, 10), "letters": (1, 26),
                 "mnist": (0, 10)}


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


def idx_bytes(array: np.ndarray, code: int = 0x08) -> bytes:
    """A uint8 ``array`` as an IDX file: magic ``00 00 {code} {ndim}``, its sizes as big-endian uint32, its bytes."""
    return bytes([0, 0, code, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.astype(np.uint8).tobytes()


def write_idx_file(path: Path, content: bytes, gz: bool) -> Path:
    """``content`` written to ``path``, gzipped to ``{path}.gz`` with ``gz``; the path written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not gz:
        path.write_bytes(content)
        return path
    path = path.with_name(path.name + ".gz")
    with gzip.open(path, "wb") as f:
        f.write(content)
    return path


def write_idx(folder: Path, name: str = "mnist", emnist: str | None = None, gz: bool = True, per_class: int = 2,
              seed: int = 0) -> Written:
    """``{folder}/{name}/`` holding IDX files (gzipped with ``gz``, else raw) of :data:`IDX_HW` images.

    Without ``emnist``: MNIST's names (also Fashion-MNIST's and KMNIST's), 10 classes.  With ``emnist`` (a key
    of :data:`EMNIST_LABELS`): ``emnist-{emnist}-{split}-...`` files, added to the folder if it exists, images
    stored transposed and labels from the split's first label (``letters``: 1..26), as EMNIST distributes them.
    Split "train" holds ``per_class`` images of each class in shuffled order, "test" one.  ``images`` are
    the upright images as a reader must return them (N×H×W×3, three identical channels), ``labels`` 0-based.
    """
    root = folder / name
    rng = _rng(seed)
    first, n_classes = (0, 10) if emnist is None else EMNIST_LABELS[emnist]
    written = Written(root, {}, {})
    for split, prefix, copies in (("train", "train", per_class), ("test", "t10k", 1)):
        labels = rng.permutation(np.repeat(np.arange(n_classes), copies))
        gray = rng.integers(0, 256, size=(len(labels), *IDX_HW), dtype=np.uint8)
        stored = gray if emnist is None else gray.transpose(0, 2, 1)
        stem = prefix if emnist is None else f"emnist-{emnist}-{split}"
        write_idx_file(root / f"{stem}-images-idx3-ubyte", idx_bytes(stored), gz)
        write_idx_file(root / f"{stem}-labels-idx1-ubyte", idx_bytes(labels + first), gz)
        written.images[split] = np.repeat(gray[..., None], 3, axis=-1)
        written.labels[split] = labels
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


# ---------------------------------------------------------------------------------------------
# Image lists and class-folder trees (csfbench.data.list_readers)

#: five real ImageNet-1K wnids, sorted (their labels in the sorted 1000-class list would differ;
#: in these fixtures the class list is these five)
IMAGENET_WNIDS = ("n01440764", "n01443537", "n01484850", "n01491361", "n01494475")


@dataclass
class WrittenFiles:
    """A written file tree: its directory, the expected sample ids and labels per split (in reader
    order), and the options a reader needs."""

    root: Path
    sample_ids: dict[str, list[str]]
    labels: dict[str, np.ndarray]
    options: dict[str, dict]


def _save_image(path: Path, rng: np.random.Generator, side: int = 8) -> None:
    """A tiny random RGB image, JPEG or PNG by the path's extension."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "PNG" if path.suffix.lower() == ".png" else "JPEG"
    Image.fromarray(_random_images(rng, 1, side)[0]).save(path, format=fmt)


def write_wnids(path: Path, wnids=IMAGENET_WNIDS, names: bool = False) -> Path:
    """A class list, one wnid per line (with ``names``: 'wnid name, other name' as LOC_synset_mapping.txt)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{w} class {i}, other name\n" if names else f"{w}\n" for i, w in enumerate(wnids)))
    return path


def write_openood(folder: Path, seed: int = 0) -> WrittenFiles:
    """An OpenOOD ``data/`` folder: ``benchmark_imglist/cifar10/test_cifar10.txt`` (labelled, unsorted
    lines), ``test_tin.txt`` (OOD, label -1) and ``imagenetood.txt`` (no labels, ImageNet-OOD's
    form), over ``images_classic/``.  ``sample_ids["test"]`` / ``labels["test"]``: the cifar10 list."""
    root = folder / "data"
    rng = _rng(seed)
    images = root / "images_classic"
    lists = root / "benchmark_imglist" / "cifar10"
    lists.mkdir(parents=True)
    cifar = [("cifar10/test/dog/0002.png", 5), ("cifar10/test/airplane/0001.png", 0),
             ("cifar10/test/airplane/0003.png", 0), ("cifar10/test/cat/0004.png", 3)]
    tin = ["tin/test/n01443537/a.JPEG", "tin/test/n01443537/b.JPEG", "tin/test/n01484850/c.JPEG"]
    for relative, _ in cifar:
        _save_image(images / relative, rng, 32)
    for relative in tin:
        _save_image(images / relative, rng, 16)
    (lists / "test_cifar10.txt").write_text("".join(f"{p} {label}\n" for p, label in cifar))
    (lists / "test_tin.txt").write_text("".join(f"{p} -1\n" for p in tin))
    (lists / "imagenetood.txt").write_text("".join(f"{p.split('/', 2)[2]}\n" for p in tin))  # relative to tin/test
    ordered = sorted(cifar)
    return WrittenFiles(
        root,
        {"test": [p for p, _ in ordered], "tin": sorted(tin)},
        {"test": np.array([label for _, label in ordered]), "tin": np.full(len(tin), -1)},
        {"test": {"imglist": "benchmark_imglist/cifar10/test_cifar10.txt", "images": "images_classic"},
         "tin": {"imglist": "benchmark_imglist/cifar10/test_tin.txt", "images": "images_classic"},
         "imagenetood": {"imglist": "benchmark_imglist/cifar10/imagenetood.txt", "images": "images_classic/tin/test"}},
    )


def write_imagenet(folder: Path, val: str = "folders", n_train: int = 2, seed: int = 0) -> WrittenFiles:
    """``ILSVRC2012/`` with train/{wnid}/ for :data:`IMAGENET_WNIDS` (``n_train`` JPEGs each) and val/
    as class folders (``val="folders"``, one image per class) or flat with ``LOC_val_solution.csv``
    (``val="flat"``, val images 1..5 of classes 4, 0, 2, 1, 3), plus ``LOC_synset_mapping.txt``."""
    root = folder / "ILSVRC2012"
    rng = _rng(seed)
    train_ids, train_labels = [], []
    for label, wnid in enumerate(IMAGENET_WNIDS):
        for i in range(n_train):
            relative = f"train/{wnid}/{wnid}_{i + 1}.JPEG"
            _save_image(root / relative, rng)
            train_ids.append(relative)
            train_labels.append(label)
    val_ids, val_labels = [], []
    if val == "folders":
        for label, wnid in enumerate(IMAGENET_WNIDS):
            relative = f"val/{wnid}/ILSVRC2012_val_{label + 1:08d}.JPEG"
            _save_image(root / relative, rng)
            val_ids.append(relative)
            val_labels.append(label)
    else:
        rows = ["ImageId,PredictionString"]
        for i, label in enumerate((4, 0, 2, 1, 3), start=1):
            image_id = f"ILSVRC2012_val_{i:08d}"
            _save_image(root / "val" / f"{image_id}.JPEG", rng)
            wnid = IMAGENET_WNIDS[label]
            rows.append(f"{image_id},{wnid} 10 12 40 44 {wnid} 1 2 3 4 ")
            val_ids.append(f"val/{image_id}.JPEG")
            val_labels.append(label)
        (root / "LOC_val_solution.csv").write_text("\n".join(rows[:1] + rows[:0:-1]) + "\n")  # rows unsorted
    write_wnids(root / "LOC_synset_mapping.txt", names=True)
    return WrittenFiles(root, {"train": train_ids, "test": val_ids},
                        {"train": np.array(train_labels), "test": np.array(val_labels)}, {})


def write_wnid_folders(folder: Path, seed: int = 0) -> WrittenFiles:
    """``imagenet-r/`` with class folders for 3 of the 5 :data:`IMAGENET_WNIDS` (rendition-prefixed
    file names, one nested folder) and the class list ``imagenet_wnids.txt`` beside it (option
    ``wnids``, absolute); ``labels["test"]`` are the labels through that list."""
    root = folder / "imagenet-r"
    rng = _rng(seed)
    files = {"n01443537": ["art_0.jpg", "cartoon_1.jpg"], "n01491361": ["sketch_2.png"],
             "n01494475": ["toy_3.jpg", "deeper/origami_4.jpg"]}
    ids = []
    for wnid, names in files.items():
        for name in names:
            _save_image(root / wnid / name, rng)
            ids.append(f"{wnid}/{name}")
    (root / "README.txt").write_text("not an image")
    wnids = write_wnids(folder / "imagenet_wnids.txt")
    ids.sort()
    labels = np.array([IMAGENET_WNIDS.index(i.split("/")[0]) for i in ids])
    return WrittenFiles(root, {"test": ids}, {"test": labels}, {"test": {"wnids": str(wnids)}})


def write_imagenet_c(folder: Path, seed: int = 0) -> WrittenFiles:
    """``ImageNet-C/`` with corruptions gaussian_noise (severities 1 and 5) and fog (severity 3), each
    holding 4 of the 5 :data:`IMAGENET_WNIDS` (not n01484850) with one or two JPEGs per class."""
    root = folder / "ImageNet-C"
    rng = _rng(seed)
    wnids = [w for w in IMAGENET_WNIDS if w != "n01484850"]
    ids: dict[str, list[str]] = {}
    for corruption, severity in (("gaussian_noise", 1), ("gaussian_noise", 5), ("fog", 3)):
        key = f"{corruption}/{severity}"
        ids[key] = []
        for k, wnid in enumerate(wnids):
            for i in range(1 + k % 2):
                relative = f"{key}/{wnid}/ILSVRC2012_val_{10 * k + i + 1:08d}.JPEG"
                _save_image(root / relative, rng)
                ids[key].append(relative)
    labels = {key: np.array([IMAGENET_WNIDS.index(i.split("/")[2]) for i in v]) for key, v in ids.items()}
    return WrittenFiles(root, ids, labels, {"test": {"corruption": "gaussian_noise", "severity": 1}})


#: the fixture's ICONIC-444 classes: class_idx -> (class_name, group, category)
ICONIC_CLASSES = {
    3: ("almond shell", "nuts", "food"), 10: ("almond blanched", "nuts", "food"),
    11: ("almond natural", "nuts", "food"), 20: ("almond sliced", "nuts", "food"),
    21: ("almond diced", "nuts", "food"), 22: ("almond damaged", "nuts", "food"),
    40: ("almond rancid", "nuts", "food"), 5: ("nuts acorn", "nuts", "food"),
    6: ("rye flakes", "seeds and kernels", "food"), 430: ("glass shard other", "glass", "non_food"),
    440: ("coins", "coins", "non_food"), 441: ("wood pellets", "wood", "non_food"),
}
ICONIC_ALMOND = (3, 10, 11, 20, 21, 22, 40)  # ID classes of the fixture's almond task (7)


def write_iconic444(folder: Path, manifest: str = "csv", seed: int = 0) -> WrittenFiles:
    """``iconic444/``: manifest (``manifest.csv`` or ``.parquet``), images/{class_idx}/{k}.png, the almond
    task's train/val/test/near lists and the shared far.txt, ood_val.txt and extreme_textures.txt
    (external images, label -1, not in the manifest).  Expected ids/labels per list key."""
    import pandas as pd

    root = folder / "iconic444"
    rng = _rng(seed)
    rows, by_class = [], {}
    for class_idx, (class_name, group, category) in sorted(ICONIC_CLASSES.items()):
        by_class[class_idx] = []
        for k in range(4):
            relative = f"images/{class_idx:03d}/{k}.png"
            _save_image(root / relative, rng)
            by_class[class_idx].append(relative)
            rows.append({"image_id": len(rows), "rel_path": relative, "class_name": class_name,
                         "class_idx": class_idx, "group": group, "category": category,
                         "has_manual_defect": "damaged" in class_name, "is_food_grade": category == "food",
                         "width": 8, "height": 8})
    table = pd.DataFrame(rows)
    if manifest == "csv":
        table.to_csv(root / "manifest.csv", index=False)
    else:
        table.to_parquet(root / "manifest.parquet", index=False)
    reindex = {c: i for i, c in enumerate(sorted(ICONIC_ALMOND))}
    parts = {"train": slice(0, 2), "val": slice(2, 3), "test": slice(3, 4)}
    lists = {name: [(p, c) for c in reversed(ICONIC_ALMOND) for p in by_class[c][part]] for name, part in parts.items()}
    lists["near"] = [(p, c) for c in (5, 6) for p in by_class[c][:3]]
    lists["far"] = [(p, -1) for c in (430, 440) for p in by_class[c]]
    lists["ood_val"] = [(p, 441) for p in by_class[441]]
    textures = [f"extreme/dtd/images/banded/banded_{k:04d}.jpg" for k in (2, 1)]
    for relative in textures:
        _save_image(root / relative, rng)
    lists["extreme_textures"] = [(p, -1) for p in textures]
    (root / "almond").mkdir()
    for name, entries in lists.items():
        path = root / "almond" / f"{name}.txt" if name in ("train", "val", "test", "near") else root / f"{name}.txt"
        path.write_text("".join(f"{p} {c}\n" for p, c in entries))
    ids = {"train": sorted(p for p, _ in lists["train"]),
           "test": sorted(p for p, _ in lists["val"]) + sorted(p for p, _ in lists["test"])}
    labels = {key: np.array([reindex[int(p.split("/")[1])] for p in v]) for key, v in ids.items()}
    for name in ("near", "far", "ood_val", "extreme_textures"):
        ids[name] = sorted(p for p, _ in lists[name])
        labels[name] = np.full(len(ids[name]), -1)
    return WrittenFiles(root, ids, labels, {"test": {"task": "almond"}})


#: writer and (test split) reader options of every format of csfbench.data.list_readers, for the
#: tests that run over every registered format
LIST_FORMAT_WRITERS = {
    "imglist": write_openood,
    "imagenet": write_imagenet,
    "wnid_folders": write_wnid_folders,
    "imagenet_c": write_imagenet_c,
    "iconic444": write_iconic444,
}
LIST_FORMAT_OPTIONS = {
    "imglist": {"imglist": "benchmark_imglist/cifar10/test_cifar10.txt", "images": "images_classic"},
    "imagenet_c": {"corruption": "gaussian_noise", "severity": 1},
    "iconic444": {"task": "almond"},
}
