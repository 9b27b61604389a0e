"""`tally memory` and tally.memory: per-operator bytes and peaks against TensorBoard's plugin on
the shared traces, the timeline's invariants on a real trace, tally.memory.categorize on a
PyTorch training loop (what the peak holds, exactly), bad memory events, InternLM's memory.log.
"""

import collections
import gzip
import json
import os

import pytest

import tally
from helpers import REPO, cli, quiet_profile

TRACES = os.path.join(os.path.dirname(REPO), "shared", "traces")
TENSORBOARD = os.path.join(REPO, "tests", "data", "tensorboard", "memory.json")
HTA = os.path.join(TRACES, "hta_df_index_resolver.json.gz")
MB = 1024 * 1024


def memory_json(path, *args):
    """`tally memory PATH --format json` (every operator row, every timeline point): the tables
    by key."""
    p = cli("memory", "--format", "json", "--top", "100000", path, *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def rows(doc, key):
    return doc[key]["rows"] if key in doc else []


def shared_trace(name):
    path = os.path.join(TRACES, name)
    if not os.path.exists(path):
        pytest.skip(f"the shared traces are not here: {path} is missing")
    return path


# ---- TensorBoard's Memory view on the shared traces -------------------------------------------

with open(TENSORBOARD) as f:
    TB = json.load(f)["traces"]


@pytest.mark.parametrize("name", sorted(TB))
def test_operators_and_peaks_equal_tensorboard(name):
    """Every row of TensorBoard's Memory Statistics (torch_tb_profiler 0.4.3 on the same file:
    tests/tools/tensorboard_memory.py) equals tally's memory_ops row of that device and name,
    the two have the same rows, and the peaks are TensorBoard's (none where it states none)."""
    doc = memory_json(shared_trace(name))
    tb = TB[name]
    ours = {(r["device"], r["name"]): r for r in rows(doc, "memory_ops")}
    theirs = {(dev, r[0]): r[1:] for dev, rs in tb["stats"].items() for r in rs}
    assert sorted(ours) == sorted(theirs)
    keys = ("calls", "increase_bytes", "self_increase_bytes", "allocs", "self_allocs",
            "allocated_bytes", "self_allocated_bytes")
    for k, want in theirs.items():
        assert tuple(ours[k][c] for c in keys) == tuple(want), k
    peaks = {r["device"]: r["peak_allocated_bytes"] for r in rows(doc, "memory")}
    assert set(tb["stats"]) <= set(peaks)
    for dev, peak in peaks.items():
        assert peak == tb["peaks"].get(dev), dev
    assert sum(len(v) for v in tb["stats"].values()) >= 15  # not an empty comparison


# ---- the timeline of a real trace -------------------------------------------------------------


def raw_memory_events(path):
    """The trace's [memory] events as PyTorch wrote them: (ts, device, addr, bytes, total
    allocated, total reserved), in the file's order."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    out = []
    for e in doc["traceEvents"]:
        if e.get("name") != "[memory]":
            continue
        a = e["args"]
        dev = "CPU" if a["Device Type"] == 0 else "GPU%d" % a["Device Id"]
        out.append((e["ts"], dev, a["Addr"], a["Bytes"], a["Total Allocated"],
                    a["Total Reserved"]))
    return out


def test_timeline_invariants_on_a_real_trace():
    path = shared_trace("hta_df_index_resolver.json.gz")
    doc = memory_json(path)
    devices = {r["device"]: r for r in rows(doc, "memory")}
    series = collections.defaultdict(list)
    for r in rows(doc, "memory_timeline"):
        series[r["device"]].append(r)
    assert sorted(devices) == ["CPU", "GPU1"] and sorted(series) == ["CPU", "GPU1"]
    raw = raw_memory_events(path)
    for dev, d in devices.items():
        points = series[dev]
        alloc = [p["allocated_bytes"] for p in points]
        # the peak is the highest level the timeline reaches, and is reached at its time
        assert d["peak_allocated_bytes"] == max(alloc)
        assert all(a <= d["peak_allocated_bytes"] for a in alloc)
        assert [p["time_us"] for p in points if p["allocated_bytes"] == max(alloc)][0] == \
            d["peak_at_us"]
        assert points == sorted(points, key=lambda p: p["time_us"])
        assert alloc[-1] == d["allocated_end_bytes"]
        # one point per record, levels as the allocator stated them (its Total Allocated)
        mine = [e for e in raw if e[1] == dev]
        assert len(points) == len(mine)
        assert d["peak_allocated_bytes"] == max(e[4] for e in mine)
        # allocations and frees as the file has them
        assert d["allocs"] == sum(1 for e in mine if e[3] > 0)
        assert d["frees"] == sum(1 for e in mine if e[3] < 0)
        if dev.startswith("GPU"):
            # a caching allocator never has more allocated than reserved
            assert all(p["allocated_bytes"] <= p["reserved_bytes"] for p in points)
            assert d["reserved_at_peak_bytes"] >= d["peak_allocated_bytes"]
            assert d["peak_reserved_bytes"] == max(e[5] for e in mine)
        else:  # PyTorch's CPU allocator reports reserved 0: unknown, not 0
            assert all(p["reserved_bytes"] is None for p in points)
    # frees matched by address, independently of tally: every free has its allocation in the
    # file, no address is allocated twice, and tally's notes say so too
    live = collections.defaultdict(dict)
    unmatched = reused = 0
    for ts, dev, addr, b, _, _ in sorted(raw, key=lambda e: e[0]):
        if b > 0:
            reused += addr in live[dev]
            live[dev][addr] = b
        elif b < 0:
            unmatched += live[dev].pop(addr, None) is None
    assert (unmatched, reused) == (0, 0)
    notes = " ".join(doc["memory"].get("notes", []))
    assert "no allocation in the trace" not in notes
    assert "still allocated" not in notes


# ---- hand-made traces: bad events, InternLM's log ---------------------------------------------


def memory_event(ts, addr, nbytes, total, reserved=4 * MB, device=0, tid=1):
    """A Kineto [memory] instant event on the GPU `device` (Device Type 1)."""
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1,
            "tid": tid, "ts": ts,
            "args": {"Device Type": 1, "Device Id": device, "Addr": addr, "Bytes": nbytes,
                     "Total Allocated": total, "Total Reserved": reserved}}


def span(name, ts, dur, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": {}}


def write_trace(path, events, **top):
    doc = {"schemaVersion": 1, "traceEvents": events}
    doc.update(top)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def test_bad_memory_events_are_counted_not_fatal(tmp_path):
    events = [
        span("aten::foo", 100, 100),
        span("aten::bar", 300, 100),
        memory_event(50, 0xDEAD00, -64, 0),  # a free before any allocation
        memory_event(110, 0x1000, 100, 100),  # in aten::foo
        memory_event(120, 0x2000, 200, 300),
        memory_event(130, 0x1000, 50, 350),  # an allocation at a live address, before its free
        memory_event(150, 0x2000, -200, 150),
        memory_event(310, 0x3000, -30, 120),  # in aten::bar: a negative size, at no allocation
        memory_event(320, 0x4000, 1000, 1120),
        memory_event(500, 0x4000, -1000, 120),  # in no operator
    ]
    doc = memory_json(write_trace(tmp_path / "bad.json", events))
    (dev,) = rows(doc, "memory")
    assert dev["device"] == "GPU0"
    assert dev["peak_allocated_bytes"] == 1120  # the highest Total Allocated written
    assert dev["peak_at_us"] == 320 - 50  # from the trace's first event
    assert dev["allocated_start_bytes"] == 64  # before the first record: 0 after freeing 64
    assert dev["allocated_end_bytes"] == 120
    assert (dev["allocs"], dev["frees"]) == (4, 4)
    notes = doc["memory"]["notes"]
    assert "2 frees of addresses with no allocation in the trace" in " ".join(notes)
    assert "1 allocations at an address still allocated" in " ".join(notes)
    ops = {r["name"]: r for r in rows(doc, "memory_ops")}
    assert sorted(ops) == ["aten::bar", "aten::foo"]
    # what was written inside each operator's interval
    assert ops["aten::foo"]["self_allocated_bytes"] == 100 + 200 + 50
    assert ops["aten::foo"]["self_allocs"] == 3
    assert ops["aten::foo"]["self_freed_bytes"] == 200
    assert ops["aten::bar"]["self_allocated_bytes"] == 1000
    assert ops["aten::bar"]["self_freed_bytes"] == 30
    assert ops["aten::bar"]["self_increase_bytes"] == 1000 - 30
    assert all(r["calls"] == 1 for r in ops.values())
    assert "2 records belong to no operator" in doc["memory_ops"]["notes"][0]


def test_a_malformed_trace_is_one_line_and_status_1(tmp_path):
    good = write_trace(tmp_path / "good.json",
                       [span("aten::foo", 100, 100), memory_event(110, 0x1000, 100, 100)])
    data = good.read_bytes()
    for name, content in [("cut.json", data[: len(data) // 2]), ("empty.json", b""),
                          ("words.json", b"not a trace\n")]:
        path = tmp_path / name
        path.write_bytes(content)
        p = cli("memory", path)
        assert p.returncode == 1, name
        assert p.stdout == ""
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"tally memory: {path}"), p.stderr


LOG_STATE = ["Memory State:", "time: ", "---summary---", "total_memory: ", "params_memory: "]
LAYOUTS = [("params_layout", "param_mem"), ("grads_layout", "grad_mem"),
           ("os_params_layout", "os_params_mem"), ("os_state_layout", "os_state_mem"),
           ("activation_base_layout", "activations_0")]


def parse_memory_log(text):
    """InternLM's memory.log: a list of states, each {"time": s, "summary": {name: MB},
    "layout": {title: [(layer, layer_mb, total_mb)]}}; asserts every line has its form."""
    states = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        lines = block.split("\n")
        for line, head in zip(lines, LOG_STATE):
            assert line.startswith(head), (line, head)
        state = {"time": float(lines[1][len("time: "):]), "summary": {}, "layout": {}}
        for line in lines[3:5]:
            for item in line.split(", "):
                key, value = item.split(": ")
                assert value.endswith(" MB"), line
                state["summary"][key] = float(value[:-3])
        assert list(state["summary"]) == ["total_memory", "params_memory", "grads_memory",
                                          "os_params_memory", "os_state_memory",
                                          "activation_memory"]
        if len(lines) > 5:
            assert lines[5] == "---Layout---"
            title = None
            for line in lines[6:]:
                if line.endswith(":") and not line.startswith("layer: "):
                    title = line[:-1]
                    state["layout"][title] = []
                    continue
                layer, mem, total = line.split(", ")
                assert layer.startswith("layer: ") and mem.startswith("layer_mem: ") \
                    and total.startswith("total_mem: ") and mem.endswith(" MB") \
                    and total.endswith(" MB"), line
                state["layout"][title].append((layer[7:], float(mem[11:-3]),
                                               float(total[11:-3])))
            assert [(t, v[0][0]) for t, v in state["layout"].items()] == LAYOUTS
        states.append(state)
    return states


def test_memory_log_of_a_hand_made_trace(tmp_path):
    events = [
        span("ProfilerStep#0", 1000, 1000, cat="user_annotation"),
        span("ProfilerStep#1", 2000, 1000, cat="user_annotation"),
        memory_event(1100, 0x1000, 3 * MB, 3 * MB),
        memory_event(1200, 0x2000, 5 * MB, 8 * MB),  # the peak: 8 MB
        memory_event(1500, 0x2000, -5 * MB, 3 * MB),
        memory_event(2100, 0x3000, 1 * MB, 4 * MB),
        memory_event(2900, 0x1000, -3 * MB, 1 * MB),
    ]
    trace = write_trace(tmp_path / "t.json", events)
    out = tmp_path / "logs"
    p = cli("memory", trace, "--log", out)
    assert p.returncode == 0, p.stderr
    log = out / "rank0" / "memory.log"
    assert p.stderr == f"tally memory: wrote {log}\n"
    text = log.read_text()
    states = parse_memory_log(text)
    # in time order: the peak (with the layouts), then each step's end; seconds from the start
    assert [s["time"] for s in states] == pytest.approx([200e-6, 1000e-6, 2000e-6])
    assert [bool(s["layout"]) for s in states] == [True, False, False]
    for s in states:
        # nothing in a Kineto trace says what a block holds: InternLM's model state is empty
        # (tally.memory.categorize labels it in tally's own traces: the test below)
        assert s["summary"]["params_memory"] == 0.0
        assert s["summary"]["grads_memory"] == 0.0
        assert s["summary"]["os_params_memory"] == 0.0
        assert s["summary"]["os_state_memory"] == 0.0
        total = sum(v for k, v in s["summary"].items() if k != "total_memory")
        assert s["summary"]["total_memory"] == pytest.approx(total, abs=0.011)

    # --log FILE.log writes that file; the trace's rank names the folder
    p = cli("memory", trace, "--log", tmp_path / "x.log")
    assert p.returncode == 0 and (tmp_path / "x.log").read_text() == text
    ranked = write_trace(tmp_path / "r.json", events, distributedInfo={"rank": 3})
    p = cli("memory", ranked, "--log", out)
    assert p.returncode == 0 and (out / "rank3" / "memory.log").read_text() == text

    # a trace without memory events has no log to write: one line, status 1
    p = cli("memory", write_trace(tmp_path / "none.json", events[:2]), "--log", out)
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1
    assert "no memory events" in p.stderr


# ---- tally.memory.categorize on PyTorch -------------------------------------------------------


def test_categorize_outside_a_profile_does_nothing():
    class Module:
        def named_parameters(self):
            raise AssertionError("looked at the model outside a recording window")

    assert tally.memory.categorize(Module()) == 0
    assert tally.memory.categorize(None, None) == 0
    with pytest.raises(TypeError):
        tally.profile(model=object())
    with pytest.raises(TypeError):
        tally.profile(optimizer=object())


def test_label_memory_checks_its_arguments():
    from tally import _tally

    assert _tally.MEM_CATEGORIES == ("other", "parameter", "gradient", "optimizer_state",
                                     "activation", "input", "temporary")
    assert [_tally.MEM_OTHER, _tally.MEM_PARAMETER, _tally.MEM_GRADIENT,
            _tally.MEM_OPTIMIZER_STATE, _tally.MEM_ACTIVATION, _tally.MEM_INPUT,
            _tally.MEM_TEMPORARY] == list(range(7))
    assert _tally.label_memory(0x1000, 64, -1, _tally.MEM_PARAMETER, "w") is None  # no session
    assert _tally.label_memory(0x1000, 64, 0, "gradient") is None
    for args, error in [(("x", 1, 0, 1), TypeError), ((-1, 1, 0, 1), ValueError),
                        ((2**64, 1, 0, 1), ValueError), ((1, -1, 0, 1), ValueError),
                        ((1, 1, -2, 1), ValueError), ((1, 1, 0, 7), ValueError),
                        ((1, 1, 0, "weights"), ValueError), ((1, 1, 0, 1.0), TypeError),
                        ((1, 1, 0, 1, b"w"), TypeError), ((1, 1, 0), TypeError)]:
        with pytest.raises(error):
            _tally.label_memory(*args)


def torch_or_skip():
    torch = pytest.importorskip("torch")
    try:
        import tally._torch  # noqa: F401
    except ImportError as e:  # built without torch's headers: say why, never pass silently
        pytest.skip(f"tally._torch is not built: {e}")
    return torch


def test_categorize_counts_the_blocks_it_labels(tmp_path):
    """Inside a recording window: one label per tensor holding memory; empty, meta and sparse
    tensors hold none and are skipped."""
    torch = torch_or_skip()
    model = torch.nn.Module()
    model.w = torch.nn.Parameter(torch.ones(8, 4))
    model.empty = torch.nn.Parameter(torch.empty(0))
    model.meta = torch.nn.Parameter(torch.empty(3, device="meta"))
    model.w.grad = torch.zeros(8, 4)
    stray = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([model.w, stray], lr=0.1, momentum=0.9)
    opt.state[model.w] = {"momentum_buffer": torch.zeros(8, 4), "sparse": torch.eye(2).to_sparse(),
                          "count": 3}
    opt.state[stray] = {"momentum_buffer": torch.zeros(2)}
    with quiet_profile(tmp_path) as p:
        assert tally.memory.categorize(model) == 2  # w and its gradient
        assert tally.memory.categorize(model, opt) == 4  # and two momentum buffers
        assert tally.memory.categorize(None, opt) == 2
        p.step()
    assert tally.memory.categorize(model, opt) == 0  # stopped


def train_categorized(torch, tmp_path, by_hand=False):
    """An MLP and Adam, 4 steps under tally.profile(profile_memory=True) recording steps 1-3,
    labelled by tally.profile(model=, optimizer=) or, by_hand, by the loop calling
    tally.memory.categorize after optimizer.step(). Returns (the window's file, the bytes of
    the parameters, the gradients and the optimizer state)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 256))
    extra = torch.nn.Parameter(torch.randn(1000))  # optimized, not in the model: "param4"
    opt = torch.optim.Adam([{"params": model.parameters()}, {"params": [extra]}], lr=1e-3)
    x = torch.randn(64, 512)
    y = torch.randint(0, 256, (64,))
    inside = []
    # Step 0 is not recorded (wait=1): the gradients and Adam's state (exp_avg, exp_avg_sq,
    # step) are made there and, updated in place from then on (zero_grad(set_to_none=False)),
    # alive for the whole window, as the parameters are. So what the peak holds of each is all
    # of it, whenever the peak comes: exact by construction.
    labels = {} if by_hand else {"model": model, "optimizer": opt}
    with quiet_profile(tmp_path, torch=True, profile_memory=True,
                       schedule=tally.schedule(wait=1, active=3, repeat=1), **labels) as p:
        for _ in range(4):
            opt.zero_grad(set_to_none=False)
            loss = torch.nn.functional.cross_entropy(model(x), y) + extra.square().sum()
            loss.backward()
            opt.step()
            if by_hand:
                inside.append(tally.memory.categorize(model, opt))
            p.step()
    params = list(model.parameters())
    state = [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)]
    want = {
        "parameter": sum(q.storage().nbytes() for q in params),
        "gradient": sum(q.grad.storage().nbytes() for q in params),
        "optimizer_state": sum(v.storage().nbytes() for v in state),
    }
    assert len(state) == 3 * (len(params) + 1)
    if by_hand:  # in the window only: the parameters, their gradients, every state tensor
        assert inside == [0] + [2 * len(params) + len(state)] * 3
    (window,) = [w for w in p.windows if len(w.steps)]
    assert list(window.steps) == [1, 2, 3]
    return window.path, want


def test_categorize_splits_the_peak_exactly(tmp_path):
    torch = torch_or_skip()
    path, want = train_categorized(torch, tmp_path)
    doc = memory_json(path)
    peak = {r["category"]: r["bytes"] for r in rows(doc, "memory_peak") if r["device"] == "CPU"}
    for category, nbytes in want.items():
        assert peak.get(category) == nbytes, (category, peak)
    # what is not labelled counts as activations (the extra parameter and its gradient, the
    # forward's outputs, Adam's temporaries): no block is left as "other"
    assert peak.get("activation", 0) > 0 and "other" not in peak
    layout = {r["layer"]: r for r in rows(doc, "memory_layout") if r["device"] == "CPU"}
    assert layout["parameter.0.weight"]["layer_bytes"] == 1024 * 512 * 4
    assert layout["parameter.2.bias"]["layer_bytes"] == 256 * 4
    assert layout["parameter"]["total_bytes"] == want["parameter"]
    assert layout["gradient.0.weight"]["layer_bytes"] == 1024 * 512 * 4
    assert layout["optimizer_state.0.weight.exp_avg_sq"]["layer_bytes"] == 1024 * 512 * 4
    assert layout["optimizer_state.param4.exp_avg"]["layer_bytes"] == 1000 * 4
    assert layout["optimizer_state"]["total_bytes"] == want["optimizer_state"]
    assert "parameter.param4" not in layout  # only the model's parameters are parameters


def test_memory_log_of_a_categorized_profile(tmp_path):
    torch = torch_or_skip()
    path, want = train_categorized(torch, tmp_path, by_hand=True)
    p = cli("memory", path, "--device", "cpu", "--log", tmp_path / "m.log")
    assert p.returncode == 0, p.stderr
    states = parse_memory_log((tmp_path / "m.log").read_text())
    assert len(states) == 4  # the peak and the three steps' ends
    mb = {k: float(f"{v / MB:.2f}") for k, v in want.items()}  # as the log prints them
    for s in states:
        assert s["summary"]["params_memory"] == mb["parameter"]
        assert s["summary"]["grads_memory"] == mb["gradient"]
        assert s["summary"]["os_state_memory"] == mb["optimizer_state"]
        assert s["summary"]["os_params_memory"] == 0.0
    (peak,) = [s for s in states if s["layout"]]
    layers = {layer: (m, t) for v in peak["layout"].values() for layer, m, t in v}
    assert layers["param_mem"] == (0.0, mb["parameter"])
    assert layers["param_mem.0.weight"] == (2.0, 2.0)
    assert layers["grad_mem.0.weight"] == (2.0, 2.0)
    assert layers["os_state_mem.0.weight.exp_avg"] == (2.0, 2.0)
