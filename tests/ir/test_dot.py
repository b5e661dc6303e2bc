"""``graph.to_dot()``: Graphviz DOT with subgraphs and control flow as nested clusters."""

import re
import shutil
import subprocess

import numpy as np

import ir
from script import Tensor, script
from tests.programs import cells

NESTED = """graph(%x : Float(2, 3), %y : Float(2, 3)):
  %z : Float(2, 3) = prim::DifferentiableGraph_0(%x, %y)
  return (%z)
with prim::DifferentiableGraph_0 = graph(%a : Float(2, 3), %b : Float(2, 3)):
  %c : Float(2, 3) = tensor::mul(%a, %b)
  %d : Float(2, 3) = prim::FusionGroup_0(%c, %a)
  return (%d)
with prim::FusionGroup_0 = graph(%p : Float(2, 3), %q : Float(2, 3)):
  %r : Float(2, 3) = tensor::tanh(%p)
  %s : Float(2, 3) = tensor::add(%r, %q)
  return (%s)
"""


def parse_dot(text):
    """(node id -> (label, enclosing cluster labels), edges) of the DOT text we write."""
    nodes, edges, stack = {}, [], []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("subgraph "):
            stack.append(None)
        elif line == "}":
            if stack:
                stack.pop()
        elif line.startswith("label=") and stack:
            stack[-1] = re.match(r'label="(.*)";', line).group(1)
        elif m := re.match(r"(\w+) -> (\w+);", line):
            edges.append(m.groups())
        elif m := re.match(r'(\w+) \[label="((?:[^"\\]|\\.)*)"', line):
            nodes[m.group(1)] = (m.group(2), tuple(stack))
    return nodes, edges


def _check_well_formed(text):
    assert text.startswith("digraph ") and text.rstrip().endswith("}")
    assert text.count("{") == text.count("}")
    nodes, edges = parse_dot(text)
    for src, dst in edges:
        assert src in nodes and dst in nodes
    return nodes, edges


def _lstm_layer_graph():
    rng = np.random.default_rng(0)
    shapes = [(5, 3, 4), (3, 6), (3, 6), (24, 4), (24, 6), (24,), (24,)]
    args = tuple(rng.standard_normal(s).astype(np.float32) for s in shapes)
    return script(cells.lstm_layer).graph_for(*args)


def test_loops_hold_their_fusion_groups_as_nested_clusters():
    nodes, edges = _check_well_formed(_lstm_layer_graph().to_dot())
    by_label = {}
    for ident, (label, path) in nodes.items():
        by_label.setdefault(label.split("\\n")[0].split("  #")[0], []).append((ident, path))
    sigmoid_paths = {path for _, path in by_label["tensor::sigmoid"]}
    assert sigmoid_paths == {("prim::Loop", "block0", "prim::FusionGroup_0")}
    matmul_paths = sorted(path for _, path in by_label["tensor::matmul"])
    assert matmul_paths == [(), ("prim::Loop", "block0")]  # hoisted one outside, one per step
    (loop, loop_path), = by_label["prim::Loop"]
    assert loop_path == ("prim::Loop",)
    inputs = [i for i in nodes if i.startswith("input")]
    assert len(inputs) == 7
    assert all(any(src == i for src, _ in edges) for i in inputs)  # every input is used
    assert any(dst.startswith("output") for _, dst in edges)


def test_subgraph_values_connect_to_the_outer_graph():
    graph = ir.parse(NESTED)
    text = graph.to_dot()
    nodes, edges = _check_well_formed(text)
    labels = {ident: (label.split("\\n")[0], path) for ident, (label, path) in nodes.items()}
    tanh = next(i for i, (kind, _) in labels.items() if kind == "tensor::tanh")
    add = next(i for i, (kind, _) in labels.items() if kind == "tensor::add")
    mul = next(i for i, (kind, _) in labels.items() if kind == "tensor::mul")
    assert labels[tanh][1] == ("prim::DifferentiableGraph_0", "prim::FusionGroup_0")
    assert labels[mul][1] == ("prim::DifferentiableGraph_0",)
    assert (mul, tanh) in edges and ("input0", add) in edges and (add, "output0") in edges
    assert 'fillcolor="#e3f2fd"' in text and 'fillcolor="#fff3e0"' in text


def branchy(x: Tensor, flag: bool) -> Tensor:
    if flag:
        y = np.tanh(x)
    else:
        y = x * 2.0
    return y + 1.0


def test_ifs_draw_one_cluster_per_branch():
    graph = script(branchy).graph
    nodes, _ = _check_well_formed(graph.to_dot())
    paths = {label.split("\\n")[0].split("  #")[0]: path for label, path in nodes.values()}
    assert paths["tensor::tanh"] == ("prim::If", "block0")
    assert paths["tensor::mul"] == ("prim::If", "block1")
    assert paths["tensor::add"] == ()


def test_constants_are_optional_and_labels_are_escaped():
    graph = ir.parse('graph(%x : str):\n'
                     '  %q : str = prim::Constant[value="say \\"hi\\""]()\n'
                     '  %r : str[] = prim::ListConstruct(%x, %q)\n'
                     '  return (%r)\n')
    assert "prim::Constant" not in graph.to_dot()
    text = graph.to_dot(constants=True)
    nodes, edges = _check_well_formed(text)
    constant = next(i for i, (label, _) in nodes.items() if label.startswith("prim::Constant"))
    assert '\\"hi\\"' in nodes[constant][0]
    assert any(src == constant for src, _ in edges)


def test_graphviz_reads_the_dot_text():
    texts = [_lstm_layer_graph().to_dot(constants=True), ir.parse(NESTED).to_dot()]
    dot = shutil.which("dot")
    for text in texts:
        _check_well_formed(text)
        if dot is None:  # without Graphviz the structural checks above are what we have
            continue
        done = subprocess.run([dot, "-Tcanon"], input=text, text=True, capture_output=True,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert "cluster_" in done.stdout
