"""A worker process that dies (a native crash, the OOM killer) costs the run one input, not
the run: the pool is restarted, the inputs that were in flight run again one at a time, and
the one that kills its worker again becomes an `internal` failure row."""

from __future__ import annotations

import sys

from hsrtcp.scale.discover import discover
from hsrtcp.scale.pool import run_local
from hsrtcp.scale.tasks import read_record

KILLER = '''
import os
from hsrtcp.scale.tasks import analyze_input

def task(inp, *args):
    if inp.id == "trip2--zero_window.server.pcap":
        os._exit(9)  # the worker dies as in a segfault: no exception, no result
    return analyze_input(inp, *args)
'''


def test_a_dying_worker_costs_one_input(corpus, tmp_path, monkeypatch):
    (tmp_path / "killer_mod.py").write_text(KILLER)
    monkeypatch.syspath_prepend(str(tmp_path))  # forkserver children get this sys.path
    import killer_mod

    results = tmp_path / "res"
    (results / ".staging").mkdir(parents=True)
    inputs = discover(str(corpus))
    tasks = [(i, str(results), 30.0, {"input": i.id}) for i in inputs]
    got: dict[str, dict] = {}
    run_local(tasks, lambda inp, res: got.__setitem__(inp.id, res), workers=2, mode="processes", fn=killer_mod.task)
    assert set(got) == {i.id for i in inputs}
    failed = {k: v for k, v in got.items() if v["status"] != "done"}
    assert list(failed) == ["trip2--zero_window.server.pcap"], failed
    assert failed["trip2--zero_window.server.pcap"]["kind"] == "internal"
    assert "worker process died" in failed["trip2--zero_window.server.pcap"]["reason"]
    for k in got:
        assert (read_record(str(results), k) is not None) == (k not in failed)
    sys.modules.pop("killer_mod", None)
