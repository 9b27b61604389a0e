"""tally.profile, tally.schedule, tally.load: the session and the results, over tally._tally.

A profile is one tally session (tally_start ... tally_stop): one per process at a time, which is
what the recorder allows. Its schedule decides which steps are recorded, with torch.profiler's
meaning; each stretch of recorded steps is a window with a file of its own, announced to
on_trace_ready as a Window. The report and the tables are computed by the same C code as the
`tally` command's, from the window's file, so `p.table("ops")` has the rows of
`tally ops FILE --format json`.
"""

import atexit
import json
import operator
import os
import sys

from . import _tally
from . import memory as _memory
from ._tally import TallyError

# The variables launchers set to a process's rank: torchrun, Open MPI, Slurm, then the rank on
# the node (a launcher that sets only LOCAL_RANK).
_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "LOCAL_RANK")

_active = None  # the running profile of this process
_said = set()  # one-line notices already printed


def _say_once(line):
    if line not in _said:
        _said.add(line)
        print(line, file=sys.stderr)


def _rank():
    for var in _RANK_VARS:
        v = os.environ.get(var, "").strip()
        if v.isdigit():
            return int(v)
    return None


# ---- schedules ---------------------------------------------------------------------------------


def _count(what, name, value):
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: {name} must be an int, not {type(value).__name__}") from None
    if n < 0:
        raise ValueError(f"{what}: {name} must be >= 0, got {n}")
    return n


def _cuda_in_use():
    """torch is imported and has a CUDA device (without initialising CUDA when it has none)."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available())
    except Exception:  # a broken CUDA install: no GPU activity, the rest goes on
        return False


class Schedule:
    """Which steps a profile records, with torch.profiler.schedule's meaning.

    The first skip_first steps are not recorded; then cycles of `wait` steps not recorded,
    `warmup` steps not recorded (the recorder is armed) and `active` steps recorded, `repeat`
    times (0: forever). Paddle's names: closed = wait, ready = warmup, record = active. All zero
    records every step. Schedule.range (Paddle's `(start, end)`) records steps start..end-1.
    Make one with tally.schedule(...) or pass a (start, end) tuple where a schedule goes.
    """

    __slots__ = ("skip_first", "wait", "warmup", "active", "repeat", "range")

    def __init__(self, skip_first=0, wait=0, warmup=0, active=0, repeat=0, range=None):
        what = "tally.schedule"
        self.skip_first = _count(what, "skip_first", skip_first)
        self.wait = _count(what, "wait (closed)", wait)
        self.warmup = _count(what, "warmup (ready)", warmup)
        self.active = _count(what, "active (record)", active)
        self.repeat = _count(what, "repeat", repeat)
        self.range = None
        if range is not None:
            self.range = _step_range(range)
            self.skip_first = self.wait = self.warmup = self.active = self.repeat = 0
        elif self.active == 0 and (self.skip_first or self.wait or self.warmup or self.repeat):
            raise ValueError(
                "tally.schedule: active (Paddle's record) must be > 0 when skip_first, wait, "
                "warmup or repeat is given (all zero records every step)"
            )

    def _settings(self):
        if self.range is not None:
            return {"range": self.range}
        return {
            "skip_first": self.skip_first,
            "wait": self.wait,
            "warmup": self.warmup,
            "active": self.active,
            "repeat": self.repeat,
        }

    def __eq__(self, other):
        return isinstance(other, Schedule) and self._settings() == other._settings()

    def __hash__(self):
        return hash(tuple(sorted(self._settings().items())))

    def __repr__(self):
        if self.range is not None:
            return f"tally.Schedule(range={self.range!r})"
        args = ", ".join(f"{k}={v}" for k, v in self._settings().items())
        return f"tally.schedule({args})"


def _step_range(value):
    what = "schedule=(start, end)"
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{what}: expected a pair of ints (Paddle's half-open step range)")
    start = _count(what, "start", value[0])
    end = _count(what, "end", value[1])
    if end <= start:
        raise ValueError(
            f"{what}: end must be > start (steps start..end-1 are recorded), got ({start}, {end})"
        )
    return (start, end)


def schedule(skip_first=0, wait=0, warmup=0, active=0, repeat=0, *, closed=None, ready=None,
             record=None):
    """torch.profiler.schedule's arguments (Paddle's make_scheduler names closed=, ready=,
    record= accepted for wait, warmup, active). Negative numbers raise ValueError."""

    def alias(name, value, paddle, pvalue):
        if pvalue is None:
            return value
        if value:
            raise ValueError(f"tally.schedule: give {name}= or Paddle's {paddle}=, not both")
        return pvalue

    return Schedule(
        skip_first=skip_first,
        wait=alias("wait", wait, "closed", closed),
        warmup=alias("warmup", warmup, "ready", ready),
        active=alias("active", active, "record", record),
        repeat=repeat,
    )


def _as_schedule(value):
    if value is None or isinstance(value, Schedule):
        return value
    if isinstance(value, (tuple, list)):
        return Schedule(range=value)
    raise TypeError(
        "tally.profile: schedule must be tally.schedule(...), a (start, end) tuple (Paddle's "
        f"half-open step range) or None, not {type(value).__name__}"
    )


# ---- results -----------------------------------------------------------------------------------


def _check_sort_top(what, sort, top):
    if sort is not None and not isinstance(sort, str):
        raise TypeError(f"{what}(sort=...): a column key such as 'total_us' (a str) or None, "
                        f"not {type(sort).__name__}")
    if isinstance(top, bool) or not isinstance(top, int):
        raise TypeError(f"{what}(top=...): the number of rows to keep (an int, 0 = all), not "
                        f"{type(top).__name__}")


class Trace:
    """A trace file of any format tally reads (.tally, PyTorch/Kineto, Paddle, Chrome JSON,
    .json.gz), loaded once; report() and table() compute views from it."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._t = _tally.Trace(self.path)

    @property
    def source(self):
        """What wrote it: "tally", "kineto", "torch_legacy", "paddle" or "chrome"."""
        return self._t.source

    @property
    def events(self):
        return self._t.events

    def report(self, views="all", sort=None, top=0):
        """The text report, as `tally report FILE --views VIEWS` prints it."""
        if not isinstance(views, str):
            views = ",".join(views)
        _check_sort_top("report", sort, top)
        return self._t.report(views, sort, top)

    def table(self, view, sort=None, top=0):
        """The rows of one table as a list of dicts, with the keys of `--format json`: a view
        name ("ops", "ranges", "kernel", ...; as `tally ops FILE --format json` or `tally
        report FILE --views VIEW --format json` gives them) or a table's key ("model_steps").
        sort: a column key (or torch's sort_by name for "ops"); top: keep the first N rows."""
        if not isinstance(view, str):
            raise TypeError(f"table(view): view must be a str, not {type(view).__name__}")
        _check_sort_top("table", sort, top)
        text, is_view = self._t.tables_json(view, sort, top)
        doc = json.loads(text)
        tab = doc.get(view)
        if not isinstance(tab, dict) and is_view:
            tab = next((t for k, t in doc.items() if k != "messages" and isinstance(t, dict)),
                       None)
            if tab is None:  # a view with nothing to show on this trace
                return []
        if not isinstance(tab, dict):
            _tally.check_views(view)  # raises the command line's message for an unknown view
            raise TallyError(f"no table '{view}' in this trace; views: "
                             + ", ".join(_tally.view_names()))
        return tab["rows"]

    def __repr__(self):
        return f"tally.Trace({self.path!r}, source={self.source!r}, events={self.events})"


def load(path):
    """Load a trace file of any format tally reads: an object with report() and table()."""
    return Trace(path)


class Window:
    """A finished active window, as on_trace_ready gets it: its file and what it holds.

    path: the window's .tally file (complete and closed); steps: the steps recorded in it (a
    range); index: 0 for the session's first window; records, dropped (at the memory cap), lost
    (the file could not be written). report() and table() read the file.
    """

    __slots__ = ("index", "first_step", "last_step", "path", "records", "dropped", "lost",
                 "io_errno", "_trace")

    def __init__(self, index, first_step, last_step, path, records, dropped, lost, io_errno):
        self.index = index
        self.first_step = first_step
        self.last_step = last_step
        self.path = path
        self.records = records
        self.dropped = dropped
        self.lost = lost
        self.io_errno = io_errno
        self._trace = None

    @property
    def steps(self):
        if self.first_step < 0:
            return range(0)
        return range(self.first_step, self.last_step + 1)

    def load(self):
        if self._trace is None:
            self._trace = Trace(self.path)
        return self._trace

    def report(self, views="all", sort=None, top=0):
        return self.load().report(views, sort, top)

    def table(self, view, sort=None, top=0):
        return self.load().table(view, sort, top)

    def __repr__(self):
        s = self.steps
        steps = f"{s.start}-{s.stop - 1}" if len(s) else "none"
        return (f"tally.Window(index={self.index}, steps={steps}, path={self.path!r}, "
                f"records={self.records}, dropped={self.dropped})")


# ---- the profile -------------------------------------------------------------------------------


class profile:
    """A tally session: a context manager, or start() / step() / stop().

    schedule: tally.schedule(...), a (start, end) tuple (Paddle's step range) or None (every
    step); Paddle's keyword scheduler= is accepted too. output_dir: where the .tally files go
    (created); name: the file name pattern ({host}, {pid}, {rank}, {time}), by default
    "tally-{host}-{pid}", with "-rank<N>" added when RANK, LOCAL_RANK, SLURM_PROCID or
    OMPI_COMM_WORLD_RANK is set. torch: record PyTorch's operators (None: when torch is already
    imported; True: torch must be importable; False: never), with input shapes
    (record_shapes) and CPU allocations (profile_memory). on_trace_ready(window) runs when
    each window's file is complete (instead of the default summary on stderr). timer_only: no
    trace, only the benchmark summary (reader_cost, batch_cost, ips) at stop().

    model, optimizer (with profile_memory=True and PyTorch's operators recorded): what the
    memory holds. tally.memory.categorize(model, optimizer) labels the blocks of the
    parameters, gradients and optimizer state once when the profile starts and at every step()
    call, before the step is closed (after the program's optimizer.step(), where a training
    loop calls step()), so that `tally memory` on a window's file splits the peak into
    parameters, gradients, optimizer state and activations (the rest) and names the blocks
    ("0.weight", "0.weight.exp_avg"). Ignored otherwise; in a schedule's wait and warmup steps
    it looks at no tensor.
    """

    def __init__(self, schedule=None, output_dir="tally-out", name=None, torch=None,
                 record_shapes=False, profile_memory=False, on_trace_ready=None,
                 timer_only=False, *, scheduler=None, model=None, optimizer=None):
        if scheduler is not None:
            if schedule is not None:
                raise TypeError("tally.profile: give schedule= or Paddle's scheduler=, not both")
            schedule = scheduler
        self.schedule = _as_schedule(schedule)
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError("tally.profile: on_trace_ready must be callable or None")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"tally.profile: name must be a str (a file name), not "
                            f"{type(name).__name__}")
        if name is not None and ("/" in name or not name):
            raise ValueError(f"tally.profile: name must be a file name without '/', got {name!r}")
        self.output_dir = os.path.abspath(os.fspath(output_dir))
        self.name = name
        self.torch = torch
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.on_trace_ready = on_trace_ready
        self.timer_only = bool(timer_only)
        if model is not None and not callable(getattr(model, "named_parameters", None)):
            raise TypeError("tally.profile: model must have named_parameters() (a "
                            f"torch.nn.Module), not {type(model).__name__}")
        if optimizer is not None and not (hasattr(optimizer, "state")
                                          and hasattr(optimizer, "param_groups")):
            raise TypeError("tally.profile: optimizer must have state and param_groups (a "
                            f"torch.optim.Optimizer), not {type(optimizer).__name__}")
        self.model = model
        self.optimizer = optimizer
        self.windows = []  # every finished Window, in order
        self.step_num = 0  # steps closed since start()
        self.torch_recorded = False  # PyTorch operators are being recorded
        self.gpu_recorded = False  # CUDA activity is being recorded (CUPTI)
        self._running = False
        self._shim = None
        self._categorize = False  # label the model's memory at each step

    # -- session

    def _file_name(self):
        name = self.name or "tally-{host}-{pid}"
        rank = _rank()
        if rank is not None:
            if "{rank}" in name:
                name = name.replace("{rank}", str(rank))
            else:
                name += f"-rank{rank}"
        return name

    def _torch_shim(self):
        want = self.torch
        if want is None:
            want = "torch" in sys.modules
        elif want:
            try:
                import torch  # noqa: F401
            except ImportError as e:
                raise ImportError(f"tally.profile(torch=True): torch cannot be imported: {e}") from e
        if not want or self.timer_only:
            return None
        try:
            from . import _torch
        except ImportError as e:
            _say_once(f"tally: PyTorch operators are not recorded: {e}")
            return None
        return _torch

    def _ready(self, index, first_step, last_step, path, records, dropped, lost, io_errno):
        w = Window(index, first_step, last_step, path, records, dropped, lost, io_errno)
        self.windows.append(w)
        if self.on_trace_ready is not None:
            self.on_trace_ready(w)

    def start(self):
        """Start the session; returns the profile. One profile runs at a time per process."""
        global _active
        if self._running:
            raise TallyError("tally.profile is already running: start() or `with` twice on "
                             "one profile (stop() it first)")
        if _active is not None:
            raise TallyError("another tally.profile is running in this process: one session "
                             "at a time (stop() it first)")
        if _tally.running():
            raise TallyError("a tally session is already running in this process (started "
                             "by tally run or from C): one session at a time")
        shim = self._torch_shim()
        settings = self.schedule._settings() if self.schedule is not None else {}
        if not self.timer_only and not os.environ.get("TALLY_OUTPUT_DIR"):  # else tally's
            os.makedirs(self.output_dir, exist_ok=True)
        _tally.start(output_dir=self.output_dir, name=self._file_name(),
                     timer_only=self.timer_only, on_trace_ready=self._ready,
                     print_summary=self.on_trace_ready is None, **settings)
        self._running = True
        self.step_num = 0
        _active = self
        if shim is not None:
            try:
                shim.enable(self.record_shapes, self.profile_memory)
            except BaseException:
                self.stop()
                raise
            self._shim = shim
            self.torch_recorded = True
            self._categorize = self.profile_memory and (self.model is not None
                                                        or self.optimizer is not None)
            # with CUDA, kernels too: CUPTI's launches carry the correlation id that links each
            # kernel to the operator that launched it (as torch.profiler's CUDA activity)
            if not self.timer_only and _cuda_in_use():
                self.gpu_recorded = _tally.gpu() == 0
            if self._categorize:
                try:
                    _memory.categorize(self.model, self.optimizer)
                except BaseException:
                    self.stop()
                    raise
        return self

    def step(self, samples=0, *, num_samples=None):
        """Close the current step and open the next. samples: items processed in it (batch
        size, tokens) for the throughput figures (Paddle's num_samples= accepted too)."""
        if not self._running:
            raise TallyError("tally.profile.step(): the profile is not running (start() it, or "
                             "step inside its `with` block)")
        if num_samples is not None:
            samples = num_samples
        samples = operator.index(samples)  # numpy and torch integers too
        if samples < 0:
            raise ValueError(f"tally.profile.step(): samples must be >= 0, got {samples}")
        try:
            if self._categorize:  # in the step being closed: its gradients, optimizer state
                _memory.categorize(self.model, self.optimizer)
        finally:
            try:
                _tally.step(samples)  # raises what on_trace_ready raised, the step being closed
            finally:
                self.step_num += 1

    def stop(self):
        """Stop the session: the last window's file is closed and on_trace_ready runs. Stopping
        a profile that is not running does nothing."""
        global _active
        if not self._running:
            return
        shim, self._shim = self._shim, None
        self.torch_recorded = False
        self._categorize = False
        try:
            if shim is not None:
                shim.disable()
        finally:
            self._running = False
            if _active is self:
                _active = None
            _tally.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    @property
    def running(self):
        return self._running

    def stats(self):
        """The session's counters: records, dropped, bad_pops, bad_ends, calls_outside,
        unclosed, steps, buffers_written, lost."""
        return _tally.stats()

    # -- results

    def _window(self, window):
        if self.timer_only:
            raise TallyError("timer_only=True: no trace was written (the benchmark summary is "
                             "printed at stop())")
        if not self.windows:
            raise TallyError("no window has finished yet: report() and table() read a finished "
                             "window (after stop(), or in on_trace_ready)")
        n = len(self.windows)
        if isinstance(window, bool) or not isinstance(window, int):
            raise TypeError(f"window must be an int (an index into p.windows), not "
                            f"{type(window).__name__}")
        if not -n <= window < n:
            raise IndexError(f"window {window}: this profile has {n} finished window"
                             f"{'' if n == 1 else 's'} (0..{n - 1}, or -1 for the last)")
        return self.windows[window]

    def report(self, views="all", sort=None, top=0, window=-1):
        """The text report of a finished window (the last by default), as `tally report`."""
        return self._window(window).report(views, sort, top)

    def table(self, view, sort=None, top=0, window=-1):
        """The rows of a view of a finished window (the last by default) as dicts with the keys
        of `--format json`: p.table("ops"), p.table("ranges"), p.table("kernel")..."""
        return self._window(window).table(view, sort, top)

    def __repr__(self):
        state = "running" if self._running else "stopped"
        return f"<tally.profile {state}, {len(self.windows)} windows in {self.output_dir}>"


def _at_exit():
    # A session still running is stopped while Python can still run its callback; after this,
    # the C library's own exit hook never calls back into Python.
    p = _active
    try:
        if p is not None:
            p.stop()
    except Exception as e:  # noqa: BLE001 - at exit, say it and go on
        print(f"tally: stopping the profile at exit: {e}", file=sys.stderr)
    finally:
        _tally.python_gone()


atexit.register(_at_exit)
