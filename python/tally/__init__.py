"""tally: where the time of a deep-learning program goes, recorded from Python.

    import tally

    with tally.profile(schedule=tally.schedule(wait=1, warmup=1, active=3)) as p:
        for batch in loader:
            with tally.range("forward", "forward"):
                loss = model(batch)
            p.step(len(batch))
    print(p.report())

Ranges (`tally.range`, `push`/`pop`, `mark`, `counter`) cost well under a microsecond, and next
to nothing outside the recorded window; PyTorch's operators are recorded too when torch is
imported (the tally._torch shim). `tally.load(path)` reads any trace the `tally` command reads
(its own .tally files, PyTorch's and Paddle's JSON) and gives the same report and tables.
`tally.memory.categorize(model, optimizer)` says what PyTorch's memory blocks hold (parameters,
gradients, optimizer state) for `tally memory`. `python3 -m tally ARGS` is the `tally` command.
docs/python.md has the whole API.
"""

import os as _os
import sys as _sys

from ._tally import CATEGORIES, TallyError, __version__, counter, mark, pop, push, range
from ._tally import set_cli_python as _set_cli_python

# A finished window's Chrome JSON (TALLY_WRITE=json.gz) is written by a `tally export` process:
# this package's own command line (python3 -m tally) when no TALLY_BIN names a tally binary, so
# that a pip-installed package, which has none, writes it too.
if _sys.executable:
    _set_cli_python(_sys.executable, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
from ._profile import Schedule, Trace, Window, load, profile, schedule
from . import memory

__all__ = [
    "CATEGORIES",
    "Schedule",
    "TallyError",
    "Trace",
    "Window",
    "counter",
    "load",
    "mark",
    "memory",
    "pop",
    "profile",
    "push",
    "range",
    "schedule",
]
