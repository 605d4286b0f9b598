"""``mpdp synthesize --model DIR --rows N --out twin.csv``: a synthetic twin from a released generative model.

For dpvi (paper 002's mixture) the rows are drawn from the mixture at the released posterior mean; for pfds
(paper 004) they are drawn with replacement from the synthetic records the sharers released. The twin has the
training table's columns: original names, category labels, numbers in their units, and the label column (the
class names where the model knows them, e.g. Adult's, else 0 or 1; a regression target in its units when its
bounds were declared) when the model covers it. Synthesis is
post-processing of a DP release: it reads no training data and spends no budget, whatever N. A model with no
generative part (fm-*, mpc-*, ofpa, ...) is refused (:class:`~mpdp.errors.UnsupportedModelError`).
Randomness: fresh OS entropy, or ``--seed`` for a reproducible twin.
"""

from __future__ import annotations

import argparse
from typing import Any

from mpdp.cli.common import add_output_arguments, interactive, print_json, rng_from_args

__all__ = ["add_parser", "handle"]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "synthesize", help="write a synthetic twin from a model saved by `mpdp run dpvi|pfds --save`",
        description="Sample a synthetic twin, in the training table's schema, from a released generative model.")
    parser.add_argument("--model", required=True, metavar="DIR", help="the directory given to mpdp run --save")
    parser.add_argument("--rows", required=True, type=int, metavar="N", help="number of synthetic rows")
    parser.add_argument("--out", required=True, metavar="PATH.csv", help="where to write the twin")
    add_output_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from mpdp.learning.release.format import read_model
    from mpdp.learning.release.kinds import sample
    from mpdp.learning.release.mixture import has_label
    from mpdp.learning.release.schema import format_value, write_table

    model = read_model(args.model)
    schema = model.schema
    values, labels = sample(model.kind, model.parameters, schema, args.rows, rng_from_args(args))
    columns = {a.name: [format_value(a, v) for v in values[:, j]] for j, a in enumerate(schema.attributes)}
    if model.kind == "records" or has_label(model.parameters, schema):
        columns[schema.label] = schema.label_text(labels)
    out = write_table(args.out, columns)
    record = {"model": str(args.model), "algorithm": model.algorithm, "rows": args.rows, "out": str(out),
              "columns": list(columns), "epsilon_spent": 0.0}
    if args.json:
        print_json(record)
    elif interactive(args):
        print(f"{args.rows} synthetic rows of {model.algorithm}'s release written to {out} "
              "(post-processing: no privacy spent)")
    return 0
