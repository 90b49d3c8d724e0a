"""Command line: `python -m widgets_py list | describe NAME | run NAME key=value ...`.

`run` prints the widget's named values as JSON (plain numbers); bad input exits with
status 2 and one line naming the parameter and what it allows.
"""

from __future__ import annotations

import argparse
import json
import sys

from .engine import registry
from .engine.params import ParamError, pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m widgets_py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print the widget names, one per line")
    describe = sub.add_parser("describe", help="print a widget's parameters as JSON")
    describe.add_argument("name")
    run = sub.add_parser("run", help="run a widget and print its named values as JSON")
    run.add_argument("name")
    run.add_argument("params", nargs="*", metavar="key=value")
    run.add_argument("--svg", action="store_true", help="print the SVG figure instead of the values")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            print("\n".join(registry.names()))
        elif args.command == "describe":
            print(json.dumps(registry.get(args.name).describe(), ensure_ascii=False, indent=2))
        else:
            result = registry.run(args.name, pairs(args.params))
            print(result.figure if args.svg else json.dumps(result.values, ensure_ascii=False, indent=2))
    except ParamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
