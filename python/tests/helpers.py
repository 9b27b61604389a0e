"""What the tally package's tests share: running `python3 -m tally`, reading a trace's events
back through `tally export`, the repository's paths."""

import json
import os
import subprocess
import sys

import tally

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TORCH_MLP = os.path.join(REPO, "tests", "data", "torch_mlp.trace.json")


def python_env(**extra):
    """The environment of a child Python that imports the same tally package."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALLY_")}
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(tally.__file__)))
    env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def run_python(args, check=False, timeout=300, **kw):
    """sys.executable ARGS with the package importable; the CompletedProcess (text)."""
    env = python_env(**kw.pop("env", {}))
    p = subprocess.run([sys.executable] + list(args), capture_output=True, text=True, env=env,
                       timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def cli(*args, **kw):
    """python3 -m tally ARGS"""
    return run_python(["-m", "tally"] + [os.fspath(a) for a in args], **kw)


def events(path, tmp_path):
    """The trace's events as `tally export` writes them (Chrome JSON), metadata left out."""
    out = os.path.join(tmp_path, os.path.basename(path) + ".json")
    cli("export", path, "-o", out, check=True)
    with open(out) as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in evs if e.get("ph") != "M"]


def spans(path, tmp_path):
    """name -> list of (start_us, end_us, tid, args) of the trace's complete events; args gets
    the event's Chrome category under "cat"."""
    d = {}
    for e in events(path, tmp_path):
        if e.get("ph") == "X":
            args = dict(e.get("args") or {}, cat=e.get("cat"))
            d.setdefault(e["name"], []).append(
                (float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["tid"], args))
    return d


def quiet_profile(tmp_path, **kw):
    """A profile into tmp_path that prints nothing (a callback replaces the summary)."""
    kw.setdefault("torch", False)
    kw.setdefault("on_trace_ready", lambda w: None)
    return tally.profile(output_dir=tmp_path, **kw)


def calls(trace):
    """name -> calls, from the ops table."""
    return {r["name"]: r["calls"] for r in trace.table("ops")}
