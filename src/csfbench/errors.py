"""Exceptions with messages that name what was wrong and where."""


class CsfbenchError(Exception):
    """Base class of every error csfbench raises on bad input."""


class ConfigError(CsfbenchError):
    """An invalid configuration: names the key path, what was expected and what was found."""

    def __init__(self, key_path: str, expected: str, found: object, source: str = "config"):
        self.key_path = key_path
        self.expected = expected
        self.found = found
        super().__init__(f"{source}: invalid value at '{key_path}': expected {expected}, found {found!r}")


class DatasetError(CsfbenchError):
    """A missing or malformed dataset: names the dataset, the path tried and the expected layout."""

    def __init__(self, dataset: str, path: object, problem: str, expected_layout: str):
        self.dataset = dataset
        self.path = str(path)
        self.problem = problem
        self.expected_layout = expected_layout
        super().__init__(
            f"dataset '{dataset}': {problem}\n  path tried: {path}\n  expected layout:\n"
            + "\n".join("    " + line for line in expected_layout.strip().splitlines())
        )


class FeatureFileError(CsfbenchError):
    """A feature file that breaks the HDF5 contract (missing dataset, wrong shape, NaN, wrong model)."""
