"""The ``membench`` command's entry point: ``membench trec-eval`` starts on its own light
path (:func:`membench.trec.trec_eval.main`: numpy and the TREC engine, no pandas or
pydantic), every other command through :func:`membench.cli.main`."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["trec-eval"] and not any(a in ("-h", "--help") for a in args[1:2]):
        from .trec.trec_eval import main as trec_eval_main

        return trec_eval_main(args[1:])
    from .cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
