#!/usr/bin/env python3
"""Write a Chrome/Kineto JSON trace whose every event has its own name (issue 10, item 8).

    bench/gen_many_names.py OUT.json [N] [--kind range|op|kernel] [--one-name]

N (default 1,000,000) complete events {"ph":"X","name":"n0000000","pid":1,"tid":1,
"ts":2i,"dur":1}: 66.4 MB at 1M. --kind op gives them "cat":"cpu_op" (host operators: the
operator and ops views make a row per name), --kind kernel "cat":"kernel" on "tid":7 (kernels:
the kernel and ops views), the default none (user ranges: the ranges and ops views).
--one-name names every event "n0000000": the same file but for the names, the baseline that
says what the names cost. PERFORMANCE.md ("Many distinct names in the views") records the peak
RSS of `/usr/bin/time -f %M tally report OUT.json [--views V] [-j N] > /dev/null`.
"""
import sys


def main():
    args = [a for a in sys.argv[1:]]
    if not args or args[0] in ("-h", "--help") or args[0].startswith("-"):
        sys.exit(__doc__)
    one = "--one-name" in args
    if one:
        args.remove("--one-name")
    kind = "range"
    if "--kind" in args:
        i = args.index("--kind")
        kind = args[i + 1]
        del args[i:i + 2]
    if not args or kind not in ("range", "op", "kernel"):
        sys.exit(__doc__)
    n = int(args[1]) if len(args) > 1 else 1000000
    cat = {"range": "", "op": '"cat":"cpu_op",', "kernel": '"cat":"kernel",'}[kind]
    tid = 7 if kind == "kernel" else 1
    with open(args[0], "w") as f:
        f.write('{"traceEvents":[\n')
        for i in range(n):
            f.write('%s{"ph":"X",%s"name":"n%07d","pid":1,"tid":%d,"ts":%d,"dur":1}\n'
                    % ("," if i else "", cat, 0 if one else i, tid, 2 * i))
        f.write("]}\n")


if __name__ == "__main__":
    main()
