"""``fvswe case``: the case-file template and the table of its keys, both from one schema."""

from __future__ import annotations

from .. import casefile


def register(sub) -> None:
    p = sub.add_parser(
        "case",
        help="print a case-file template (every key) or the table of keys",
        description="Print a TOML case file with every key (it runs: fvswe case --template > "
        "c.toml && fvswe run c.toml -o out), or the Markdown table of the keys.",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--template", action="store_true", help="a case file with every key")
    what.add_argument("--keys", action="store_true", help="the table of keys (Markdown)")
    p.add_argument("--layers", type=int, choices=(1, 2), default=1,
                   help="with --template: a case of one layer (default) or two")  # fmt: skip
    p.set_defaults(func=main)


def main(args) -> int:
    text = casefile.template(args.layers) if args.template else casefile.reference_markdown()
    print(text, end="")
    return 0
