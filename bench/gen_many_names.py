#!/usr/bin/env python3
"""Write a Chrome/Kineto JSON trace whose every event has its own name (issue 10, item 8).

    bench/gen_many_names.py OUT.json [N]

N (default 1,000,000) complete events {"ph":"X","name":"n0000000","pid":1,"tid":1,
"ts":2i,"dur":1}: 66.4 MB at 1M. `tally report OUT.json` then makes a row per name in the
ops and ranges views; PERFORMANCE.md ("Many distinct names in the views") records the peak
RSS of `/usr/bin/time -v tally report OUT.json [--views ops|ranges] > /dev/null`.
"""
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    with open(sys.argv[1], "w") as f:
        f.write('{"traceEvents":[\n')
        for i in range(n):
            f.write('%s{"ph":"X","name":"n%07d","pid":1,"tid":1,"ts":%d,"dur":1}\n'
                    % ("," if i else "", i, 2 * i))
        f.write("]}\n")


if __name__ == "__main__":
    main()
