"""python3 -m tally ARGS: the tally command line, run inside this interpreter.

It is the same program as the `tally` binary (report, ops, gaps, diff, export, run, demo),
compiled into the extension module; `run` injects the module itself, so the program it runs must
be a Python program (`python3 -m tally run -- python3 train.py`); for other programs use the
`tally` binary.
"""

import signal
import sys

from . import _tally


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    return _tally.cli(["tally"] + args)


if __name__ == "__main__":
    # the signals Python ignores at start-up, back to their defaults, as the tally binary (and
    # the programs `tally run` starts, which inherit them) has them
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    sys.exit(main())
