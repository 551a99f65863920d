"""Hostile image lists (format ``imglist``, and ICONIC-444's lists, which the same parser reads): a label
that does not fit the int64 labels of an image set, is below -1 or is no plain decimal integer is
refused with a :class:`~csfbench.errors.DatasetError` naming the dataset, the list file and the line,
before any image is opened.  Probe of issue 51: a label >= 2**63 gave a raw ``OverflowError`` naming
no file or line."""
from __future__ import annotations

import pytest

from csfbench.data.formats import open_dataset
from csfbench.errors import DatasetError

from tests.helpers.format_fixtures import write_openood

INT64_MAX = 2**63 - 1
GOOD = "cifar10/test/cat/0004.png 3\n"


@pytest.mark.parametrize(("label", "fragment"), [
    (str(2**63), f"line 2: label {2**63} out of range -1..{INT64_MAX}"),
    (str(10**40), f"line 2: label {10**40} out of range -1..{INT64_MAX}"),
    (str(-2**63 - 1), f"line 2: label {-2**63 - 1} out of range -1..{INT64_MAX}"),
    ("-2", f"line 2: label -2 out of range -1..{INT64_MAX}"),
    ("3.0", "line 2: label '3.0' is not an integer"),
    ("1_0", "line 2: label '1_0' is not an integer"),  # int() would read 10
    ("\u0663", "line 2: label '\u0663' is not an integer"),  # an Arabic-Indic 3: int() would read 3
    ("0x3", "line 2: label '0x3' is not an integer"),
])
def test_a_label_that_does_not_fit_names_the_list_and_line(tmp_path, label, fragment):
    written = write_openood(tmp_path)
    options = written.options["test"]
    list_path = written.root / options["imglist"]
    list_path.write_text(f"{GOOD}cifar10/test/dog/0002.png {label}\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        open_dataset("imglist", written.root, "test", "myset", **options)
    message = str(info.value)
    assert info.value.dataset == "myset" and str(list_path) in message and fragment in message, message


def test_the_largest_int64_label_and_a_signed_label_are_read(tmp_path):
    """The bound is the int64 range of the labels: 2**63 - 1 itself is a label; '+3' and '-1' are integers."""
    written = write_openood(tmp_path)
    options = written.options["test"]
    list_path = written.root / options["imglist"]
    list_path.write_text(f"cifar10/test/cat/0004.png +3\ncifar10/test/dog/0002.png {INT64_MAX}\n"
                         "cifar10/test/airplane/0001.png -1\n", encoding="utf-8")
    dataset = open_dataset("imglist", written.root, "test", "myset", **options)
    assert dict(zip(dataset.sample_ids, dataset.labels.tolist())) == {
        "cifar10/test/airplane/0001.png": -1, "cifar10/test/cat/0004.png": 3, "cifar10/test/dog/0002.png": INT64_MAX}
