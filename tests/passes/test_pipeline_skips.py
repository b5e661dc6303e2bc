"""``run_pipeline`` skips a settled pass (``SETTLED_PASSES``) that changed nothing when it last
ran while no pass has changed the graph since; and a pass reports every change it makes, so the
skip hides none (shape propagation dropping a branch that holds no value says so)."""

import ir
import passes
from passes import registry, shape_prop

BRANCH = """
graph(%x : Float(3), %l : Float(3)[], %k : int):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %c : bool = tensor::ge(%two, %three)
   = prim::If(%c)
    block0():
       = prim::ListAppend(%l, %x)
      -> ()
    block1():
      -> ()
  %dead : int = tensor::add(%k, %two)
  return (%l)
"""


def _counting(monkeypatch, name):
    calls = []
    fn = registry.PASSES[name]

    def counted(graph):
        calls.append(name)
        return fn(graph)
    monkeypatch.setitem(registry.PASSES, name, counted)
    return calls


def test_shape_prop_reports_a_dropped_branch_that_holds_no_value():
    graph = ir.parse(BRANCH)
    assert shape_prop.run(graph)  # (no value's type changed: the If had none)
    assert "prim::If" not in str(graph) and "ListAppend" not in str(graph)
    assert not shape_prop.run(graph)


def test_a_settled_pass_runs_again_only_after_a_change(monkeypatch):
    calls = _counting(monkeypatch, "cse")
    graph = ir.parse(BRANCH)
    passes.run_pipeline(graph, "shape-prop,cse,dce,cse")  # dce drops %dead: cse runs again
    assert calls == ["cse", "cse"]
    calls.clear()
    passes.run_pipeline(graph, "cse,dce,cse,shape-prop,cse")  # nothing left to change
    assert calls == ["cse"]


def test_a_pass_that_changed_the_graph_runs_again(monkeypatch):
    """A settled pass is skipped only after a run that changed nothing."""
    calls = _counting(monkeypatch, "shape-prop")
    graph = ir.parse(BRANCH)
    passes.run_pipeline(graph, "shape-prop,shape-prop,shape-prop")
    assert calls == ["shape-prop", "shape-prop"]
