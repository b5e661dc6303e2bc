"""An ``if`` whose branches both bind a name to one value made before the ``if``.

When both branches gave a variable the same IR value (``c = v1`` in each, or the outer value of
another variable), the frontend saw nothing to merge and kept the variable's value from before
the ``if``: the assignment was lost (found by the program fuzzer). Each form below compares the
compiled function with the plain one, and the first with its gradient; the last two (one branch
assigns, a loop body assigns) were right before and keep their neighbours honest.
"""

import numpy as np
import pytest

from script import Tensor, script, vjp


def both_branches_one_value(a: Tensor, c: Tensor, k: float) -> Tensor:
    v1 = a + 1.0
    if k > 0.0:
        c = v1
    else:
        c = v1
    return c * 2.0


def both_branches_outer_value(a: Tensor, b: Tensor, c: Tensor, k: float) -> Tensor:
    if k > 0.0:
        c = b
    else:
        c = b
    return c * 2.0 + a


def nested_ifs(a: Tensor, c: Tensor, k: float) -> Tensor:
    v1 = a + 1.0
    if k > 0.0:
        if k > 1.0:
            c = v1
        else:
            c = v1
    return c * 2.0


def elif_chain(a: Tensor, c: Tensor, k: float) -> Tensor:
    v1 = a + 1.0
    if k > 1.0:
        c = v1
    elif k > 0.0:
        c = v1
    else:
        c = v1
    return c * 2.0


def tuple_unpacking(a: Tensor, c: Tensor, d: Tensor, k: float) -> Tensor:
    v1 = a + 1.0
    if k > 0.0:
        c, d = v1, v1
    else:
        c, d = v1, v1
    return c * 2.0 + d


def swap_in_both_branches(a: Tensor, b: Tensor, k: float) -> Tensor:
    if k > 0.0:
        a, b = b, a
    else:
        a, b = b, a
    return a * 2.0 + b


def in_a_loop_body(a: Tensor, c: Tensor, k: float) -> Tensor:
    v1 = a + 1.0
    acc = a
    for _ in range(3):
        if k > 0.0:
            c = v1
        else:
            c = v1
        acc = acc + c
    return acc


def loop_carried_invariant_in_branches(a: Tensor, c: Tensor, n: int) -> Tensor:
    v1 = a + 1.0
    for i in range(n):
        if i > 0:
            c = v1
        else:
            c = v1
    return c * 2.0


def one_branch_assigns_outer(a: Tensor, c: Tensor, k: float) -> Tensor:
    if k > 0.0:
        c = a
    return c * 2.0


def loop_assigns_invariant(a: Tensor, c: Tensor, n: int) -> Tensor:
    v1 = a + 1.0
    for _ in range(n):
        c = v1
    return c * 2.0


FORMS = [both_branches_one_value, both_branches_outer_value, nested_ifs, elif_chain,
         tuple_unpacking, swap_in_both_branches, in_a_loop_body,
         loop_carried_invariant_in_branches, one_branch_assigns_outer, loop_assigns_invariant]


def _arguments(fn, k: float) -> list:
    """Distinct arrays for the tensor parameters, ``k`` for a float one, ``2`` for an int one."""
    rng = np.random.default_rng(0)
    args = []
    for name, annotation in fn.__annotations__.items():
        if name == "return":
            continue
        if annotation is Tensor:
            args.append(rng.standard_normal(3))
        else:
            args.append(k if annotation is float else 2)
    return args


@pytest.mark.parametrize("k", [-1.0, 0.5, 2.0])
@pytest.mark.parametrize("fn", FORMS, ids=lambda f: f.__name__)
def test_compiled_equals_python(fn, k):
    args = _arguments(fn, k)
    np.testing.assert_allclose(script(fn)(*args), fn(*args))


def test_gradient_flows_to_the_value_both_branches_bind():
    a, c = np.arange(3.0), np.full(3, 5.0)
    out, backward = vjp(script(both_branches_one_value), a, c, 1.0)
    np.testing.assert_allclose(out, (a + 1.0) * 2.0)
    ga, gc, _ = backward(np.ones(3))
    np.testing.assert_allclose(ga, np.full(3, 2.0))
    np.testing.assert_allclose(gc, np.zeros(3))


IF_YIELDING_ONE_VALUE = """graph(%a : Double(3),
      %c : Double(3),
      %k : float):
  %0 : float = prim::Constant[value=0.0]()
  %1 : bool = tensor::gt(%k, %0)
  %c.1 : Double(3) = prim::If(%1)
    block0():
      -> (%a)
    block1():
      -> (%a)
  %2 : float = prim::Constant[value=2.0]()
  %3 : Double(3) = tensor::mul(%c.1, %2)
  return (%3)
"""


def test_the_pipeline_keeps_an_if_output_both_blocks_yield():
    """A pass may drop such an output only by replacing its uses with the value itself."""
    import ir
    from script.runtime.codegen import generate
    from script.runtime.pipelines import FORWARD_PIPELINE, run_pipeline

    graph = ir.parse(IF_YIELDING_ONE_VALUE)
    run_pipeline(graph, FORWARD_PIPELINE)
    fn, _ = generate(graph)
    a, c = np.arange(3.0), np.full(3, 5.0)
    for k in (-1.0, 1.0):
        np.testing.assert_allclose(fn(a, c, k), a * 2.0)
