"""``mpdp run --save DIR``: write the run's released model (``model.json``) and its JSON record (``run.json``).

The model file's format and reader: :mod:`mpdp.learning.release.format`. Saving happens after the run, from
what it released; it spends no further budget.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mpdp.cli.common import jsonable
from mpdp.files import write_atomic
from mpdp.learning.release.build import check_savable, released_model
from mpdp.learning.release.format import write_model
from mpdp.learning.spec.run import RunConfig, RunReport

__all__ = ["RUN_FILE", "check_savable", "save_run"]

RUN_FILE = "run.json"


def save_run(directory: str, report: RunReport, config: RunConfig, record: dict[str, Any],
             args: argparse.Namespace) -> dict[str, str]:
    """Write ``DIR/model.json`` and ``DIR/run.json``; returns their paths."""
    bounds = getattr(args, "bounds", None) or {}
    label = config.train.label_name
    model = released_model(report, config.train, label_bounds=bounds.get(label),
                           label_classes=config.train.label_classes)
    model_path = write_model(directory, model)
    run_path = Path(directory).expanduser() / RUN_FILE
    write_atomic(run_path, json.dumps(jsonable(record), allow_nan=False, indent=1).encode("utf-8") + b"\n")
    return {"model": str(model_path), "run": str(run_path)}
