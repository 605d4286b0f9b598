"""``mpdp predict --model DIR --dataset new.csv --out predictions.csv``: apply a released model to a new table.

The CSV is read in the model's schema (:func:`mpdp.learning.release.schema.read_table`): every column the model
was trained on must be present (others are ignored), a missing value, a non-number or an unseen category is
refused with its line numbers, and a numeric value outside the model's public bounds is clipped and counted
(``--out-of-bounds clip``, the default) or refused (``--out-of-bounds error``). The output has one row per input
row: ``prediction`` (the class name where the model knows it, e.g. Adult's ``>50K``, else 0 or 1; a regression
value in the label's units when its bounds were declared) and, for a logistic model, ``probability`` (of
class 1). Prediction is post-processing of the released model:
it reads no training data and spends no budget.
"""

from __future__ import annotations

import argparse
from typing import Any

from mpdp.cli.common import add_output_arguments, interactive, print_json

__all__ = ["add_parser", "handle"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "predict", help="apply a model saved by `mpdp run --save` to a CSV",
        description="Predict with a released model (mpdp run --save DIR) on a CSV with the model's columns.")
    parser.add_argument("--model", required=True, metavar="DIR", help="the directory given to mpdp run --save")
    parser.add_argument("--dataset", required=True, metavar="PATH.csv", help="rows to predict (header row first)")
    parser.add_argument("--out", required=True, metavar="PATH.csv", help="where to write the predictions")
    parser.add_argument("--out-of-bounds", choices=("clip", "error"), default="clip",
                        help="numeric values outside the model's bounds: clip and count (default) or refuse")
    add_output_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from mpdp.learning.release.format import read_model
    from mpdp.learning.release.kinds import check_predictive, predict
    from mpdp.learning.release.schema import read_table, write_table

    model = read_model(args.model)
    check_predictive(model.kind)  # before reading the table
    table = read_table(model.schema, args.dataset, out_of_bounds=args.out_of_bounds)
    prediction, proba = predict(model.kind, model.parameters, model.schema, table.values)
    columns: dict[str, list[str]] = {}
    columns["prediction"] = model.schema.label_text(prediction)
    if proba is not None:
        columns["probability"] = [f"{p:.6f}" for p in proba]
    out = write_table(args.out, columns)
    record = {"model": str(args.model), "algorithm": model.algorithm, "rows": table.rows, "out": str(out),
              "clipped": table.clipped, "epsilon_spent": 0.0}
    if args.json:
        print_json(record)
    elif interactive(args):
        clipped = ", ".join(f"{k} {v}" for k, v in table.clipped.items()) or "none"
        print(f"{table.rows} predictions of {model.algorithm} written to {out} (values clipped to the model's "
              f"bounds: {clipped}; no privacy spent)")
    return 0
