"""A fork inside a profiled program: the child records into a file of its own, which holds
none of its parent's records, and the parent's file none of the child's."""

import os
import textwrap

import tally
from helpers import calls, run_python

PROGRAM = textwrap.dedent("""
    import os, sys, tally

    out = sys.argv[1]
    def ready(w):
        print("WINDOW", os.getpid(), w.path, flush=True)

    with tally.profile(output_dir=out, torch=False, on_trace_ready=ready) as p:
        with tally.range("parent before"):
            pass
        p.step()
        pid = os.fork()
        if pid == 0:
            for _ in range(3):
                with tally.range("child work"):
                    pass
                p.step()
        else:
            with tally.range("parent after"):
                pass
            _, status = os.waitpid(pid, 0)
            assert status == 0, status
            p.step()
    print("PID", os.getpid(), "CHILD" if pid == 0 else "PARENT", flush=True)
""")


def test_a_forked_child_records_into_its_own_file(tmp_path):
    prog = tmp_path / "fork_prog.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "out"
    p = run_python([str(prog), str(out)], check=True)
    pids = dict(reversed(ln.split()[1:3]) for ln in p.stdout.splitlines() if ln.startswith("PID"))
    windows = {int(ln.split()[1]): ln.split()[2] for ln in p.stdout.splitlines()
               if ln.startswith("WINDOW")}
    parent, child = int(pids["PARENT"]), int(pids["CHILD"])
    assert set(windows) == {parent, child}
    assert windows[parent] != windows[child]
    assert str(child) in os.path.basename(windows[child])
    assert sorted(os.listdir(out)) == sorted(os.path.basename(w) for w in windows.values())

    c = calls(tally.load(windows[child]))
    assert c["child work"] == 3
    assert "parent before" not in c and "parent after" not in c
    pc = calls(tally.load(windows[parent]))
    assert pc["parent before"] == 1 and pc["parent after"] == 1 and "child work" not in pc
