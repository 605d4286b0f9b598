"""``mpdp certs``: a demo certificate authority and one TLS certificate per party (for ``mpdp party``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mpdp.runtime.certs import generate_demo_certificates, generate_party_folders


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("certs", help="create a demo CA and per-party certificates for mutual TLS")
    parser.add_argument("--out", required=True, help="directory to write ca.pem and <party>.pem/.key into")
    parser.add_argument("--parties", nargs="+", required=True, help="party names, e.g. alice bob carol")
    parser.add_argument("--days", type=int, default=30, help="validity in days (default 30)")
    parser.add_argument("--split", action="store_true",
                        help="one folder per party (ca.pem, <party>.pem, <party>.key), the CA key kept apart")
    parser.add_argument("--ca-key-out", default=None, metavar="DIR",
                        help="with --split: where to keep the CA key (default: not kept)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.ca_key_out and not args.split:
        from mpdp.errors import ParameterError, explain

        raise ParameterError(explain("--ca-key-out", args.ca_key_out, "only with --split",
                                     "add --split, or drop --ca-key-out (ca.key is then written to --out)"))
    creds = (generate_party_folders(args.out, args.parties, days=args.days, ca_key_directory=args.ca_key_out)
             if args.split else generate_demo_certificates(args.out, args.parties, days=args.days))
    report = {name: {"ca": str(c.ca), "cert": str(c.cert), "key": str(c.key)} for name, c in creds.items()}
    if args.json:
        print(json.dumps({"directory": args.out, "parties": report}))
    else:
        print(f"wrote a demo CA and certificates for {', '.join(creds)} to {args.out}")
        print("  private keys are unencrypted (mode 0600): for demos and tests, not for production")
    return 0
