"""tally.range, push/pop, mark, counter: what a program records from Python, read back from the
written trace."""

import textwrap
import threading

import pytest

import tally
from helpers import calls, events, quiet_profile, run_python, spans


def test_range_is_a_context_manager_and_ranges_nest(tmp_path):
    with quiet_profile(tmp_path) as p:
        for _ in range(3):
            with tally.range("outer"):
                with tally.range("inner") as r:
                    assert r is tally.range("inner")
            p.step()
    t = p.windows[-1].load()
    c = calls(t)
    assert c["outer"] == 3 and c["inner"] == 3
    s = spans(p.windows[-1].path, tmp_path)
    for (o0, o1, otid, _), (i0, i1, itid, _) in zip(s["outer"], s["inner"]):
        assert otid == itid and o0 <= i0 <= i1 <= o1


def test_range_as_decorator_keeps_the_function(tmp_path):
    @tally.range("decorated")
    def add(a, b=2):
        """adds"""
        return a + b

    class Model:
        @tally.range("method")
        def forward(self, x):
            return self, x

    m = Model()
    with quiet_profile(tmp_path) as p:
        assert add(1) == 3 and add(1, b=5) == 6
        assert m.forward(7) == (m, 7)
        assert Model.forward(m, 8) == (m, 8)
    assert add.__name__ == "add" and add.__doc__ == "adds" and add.__wrapped__(1) == 3
    assert Model.forward.__name__ == "forward"
    c = calls(p.windows[-1].load())
    assert c["decorated"] == 2 and c["method"] == 2


def test_range_objects_are_interned_per_name_and_category():
    a = tally.range("same")
    assert a is tally.range("same") is tally.range("same", "user")
    b = tally.range("same", category="forward")
    assert b is not a and b is tally.range(name="same", category="forward")
    assert (b.name, b.category) == ("same", "forward")
    assert repr(b) == "tally.range('same', 'forward')"


CATEGORIES = ["user", "dataloader", "forward", "backward", "optimizer", "communication",
              "operator"]


def test_categories_by_name_reach_the_trace(tmp_path):
    assert list(tally.CATEGORIES) == CATEGORIES
    with quiet_profile(tmp_path) as p:
        for i in range(2):
            for cat in CATEGORIES:
                with tally.range(f"r_{cat}", cat):
                    pass
            tally.push("pushed_fwd", "forward")
            tally.pop()
            p.step()
    s = spans(p.windows[-1].path, tmp_path)
    for cat in CATEGORIES:
        # the Chrome export names a phase in "tally category"; an operator is a "cpu_op"
        got = {a.get("tally category", a["cat"]) for (_, _, _, a) in s[f"r_{cat}"]}
        want = {"user": "user_annotation", "operator": "cpu_op"}.get(cat, cat)
        assert got == {want}, cat
        assert len(s[f"r_{cat}"]) == 2
    assert {a.get("tally category") for (_, _, _, a) in s["pushed_fwd"]} == {"forward"}
    # the model view keys on them: calls per phase
    model = {r["name"]: r["calls"] for r in p.table("model")}
    assert model["Dataloader"] == 2 and model["Backward"] == 2 and model["Optimization"] == 2
    assert model["Forward"] == 4  # r_forward and pushed_fwd


def test_unknown_category_names_the_valid_ones():
    with pytest.raises(ValueError) as e:
        tally.range("x", "fwd")
    msg = str(e.value)
    assert "'fwd'" in msg and all(c in msg for c in CATEGORIES)
    with pytest.raises(ValueError):
        tally.push("x", category="Forward ")
    with pytest.raises(TypeError):
        tally.range("x", 3)
    with pytest.raises(TypeError):
        tally.range(b"bytes")
    with pytest.raises(TypeError):
        tally.range()
    with pytest.raises(TypeError):
        tally.range("x", "user", "extra")
    with pytest.raises(TypeError):
        tally.range("x")(42)  # decorates callables only
    with pytest.raises(TypeError, match="tally.mark: the name must be a str, not int"):
        tally.mark(3)


def test_each_thread_records_on_its_own_track(tmp_path):
    tids = {}
    barrier = threading.Barrier(3)

    def work(i):
        tids[i] = threading.get_native_id()
        barrier.wait()
        for _ in range(5):
            with tally.range(f"thread{i}"):
                with tally.range("shared"):
                    pass

    with quiet_profile(tmp_path) as p:
        ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    s = spans(p.windows[-1].path, tmp_path)
    for i in range(3):
        assert len(s[f"thread{i}"]) == 5
        assert {tid for (_, _, tid, _) in s[f"thread{i}"]} == {tids[i]}
    assert len(s["shared"]) == 15
    assert {tid for (_, _, tid, _) in s["shared"]} == set(tids.values())
    assert len(set(tids.values())) == 3


def test_an_exception_inside_a_range_closes_it(tmp_path):
    @tally.range("raising")
    def fails():
        raise KeyError("k")

    with quiet_profile(tmp_path) as p:
        with pytest.raises(ZeroDivisionError):
            with tally.range("boom"):
                1 / 0
        with pytest.raises(KeyError):
            fails()
        with tally.range("after"):
            pass
        stats = p.stats()
    assert stats["unclosed"] == 0 and stats["bad_pops"] == 0
    s = spans(p.windows[-1].path, tmp_path)
    (b0, b1, _, _), = s["boom"]
    (r0, r1, _, _), = s["raising"]
    (a0, a1, _, _), = s["after"]
    assert b1 <= r0 and r1 <= a0  # one after the other, none left open around the next
    assert "never closed" not in p.report()


def test_pop_with_nothing_pushed_is_counted_and_reported(tmp_path):
    with quiet_profile(tmp_path) as p:
        tally.pop()
        with tally.range("fine"):
            pass
        tally.pop()
        stats = p.stats()
    assert stats["bad_pops"] == 2
    assert "warning: 2 pops without a matching push" in p.report()
    assert calls(p.windows[-1].load())["fine"] == 1


def test_marks_and_counters(tmp_path):
    with quiet_profile(tmp_path) as p:
        for i in range(3):
            tally.mark("checkpoint")
            tally.counter("loss", 1.5 * i)
            p.step()
    evs = events(p.windows[-1].path, tmp_path)
    marks = [e for e in evs if e["name"] == "checkpoint" and e["ph"] == "i"]
    counts = [e["args"]["loss"] for e in evs if e["name"] == "loss" and e["ph"] == "C"]
    assert len(marks) == 3 and counts == [0.0, 1.5, 3.0]
    with pytest.raises(TypeError):
        tally.counter("loss", "high")
    with pytest.raises(TypeError):
        tally.counter("loss")


def test_ranges_outside_a_profile_do_nothing_harmful(tmp_path):
    with tally.range("nobody listens"):
        pass
    tally.push("x")
    tally.pop()
    with quiet_profile(tmp_path) as p:
        with tally.range("listened"):
            pass
    c = calls(p.windows[-1].load())
    assert "listened" in c and "nobody listens" not in c


def test_names_past_the_interning_cap_are_copied(tmp_path):
    # in a child: the cap is per process, and this test fills it
    prog = tmp_path / "many_names.py"
    prog.write_text(textwrap.dedent("""
        import sys, tally
        from tally import _tally
        for i in range(_tally.MAX_SITES):
            tally.range(f"name {i}")
        late = tally.range("late name", "forward")
        assert late is not tally.range("late name", "forward")  # not interned any more
        with tally.profile(output_dir=sys.argv[1], torch=False,
                           on_trace_ready=lambda w: print(w.path)) as p:
            for _ in range(3):
                with tally.range("late name", "forward"):
                    pass
                with tally.range("name 7"):  # interned before the cap
                    pass
            tally.mark("late mark")
    """))
    p = run_python([str(prog), str(tmp_path / "out")], check=True)
    t = tally.load(p.stdout.split()[-1])
    c = calls(t)
    assert c["late name"] == 3 and c["name 7"] == 3
    assert {r["name"]: r["calls"] for r in t.table("model")}["Forward"] == 3


class Str(str):
    pass


def test_a_str_subclass_names_a_range(tmp_path):
    with quiet_profile(tmp_path) as p:
        for i in range(4):
            with tally.range(Str(f"sub{i % 2}")):
                pass
    c = calls(p.windows[-1].load())
    assert c["sub0"] == 2 and c["sub1"] == 2


def test_a_range_in_an_exit_stack(tmp_path):
    import contextlib

    with quiet_profile(tmp_path) as p:
        with contextlib.ExitStack() as stack:
            r = stack.enter_context(tally.range("stacked"))
            assert r is tally.range("stacked")
            with tally.range("inside"):
                pass
        r.__enter__()
        r.__exit__(None, None, None)
    c = calls(p.windows[-1].load())
    assert c["stacked"] == 2 and c["inside"] == 1
    assert p.stats()["bad_pops"] == 0
