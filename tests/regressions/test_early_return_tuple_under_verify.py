"""A ``return`` inside a loop under a condition known when compiling, then one after the loop, of
tuples: without constant propagation the tuple built after the loop holds placeholders
(``prim::Uninitialized``) on the path that returned inside it, which the verifier
(``RNNSCRIPT_VERIFY=1``, on in the test suite) took for a wrong value ("computed item 0: a
NoneType where a tensor was expected"), and so an item of such a tuple (``prim::TupleIndex``,
without canonicalization). The values were right. The programs are the ones the long program
fuzzer drew (seeds 8631 and 2114), checked in every configuration as the fuzzer checks them."""

from tests.fuzz.differential import check_program
from tests.fuzz.program_types import Param, Program, ScalarT, TensorT

SOURCE = 'from typing import Dict, List, Tuple\n\nimport numpy as np\n\nfrom script import Tensor, ops\n\n\ndef main(x0: Tensor, f: float) -> Tuple[Tensor, Tensor, Tensor]:\n    for i1, r2 in enumerate(ops.unbind(x0, 0)):\n        k3 = min(i1, 1)\n        g4, g5, g6, g7 = ops.chunk((np.ones((16, 2), dtype=np.float32) * r2.mean()).astype(np.float64).astype(np.float32), 4, 0)\n    l8: List[Tensor] = []\n    for i9, r10 in enumerate(ops.unbind((x0 + float((np.ones((2,), dtype=np.float32) * x0.sum()).sum())), 0)):\n        if 0.5 < 2.0:\n            return ((np.ones((8,), dtype=np.float32) * r10.max()).reshape(4, 2) + 0.5 * np.tanh(r10).mean()), x0, (np.zeros((1,), dtype=np.float32) * float(4)).reshape((1,))\n        if f > 0.25:\n            return (((x0 @ (np.ones((2, 3), dtype=np.float32) * r10.sum())) @ (np.ones((3, 2), dtype=np.float32) * x0.sum())) + 0.5 * np.tanh(r10).mean()), (ops.chunk((np.ones((12, 2), dtype=np.float32) * x0.max()), 3, 0)[0] + 0.5 * np.tanh(r10).mean()), ((np.ones((1,), dtype=np.float32) * r10.mean()) + 0.5 * np.tanh(r10).mean())\n    if -1 > 0:\n        t11 = (np.ones((4, 2, 4), dtype=np.float32) * x0.sum())\n        t12 = ops.chunk((np.ones((1, 4), dtype=np.float32) * x0.mean()), 1, 0)[0]\n        w13 = 0\n        while w13 < 3:\n            w13 += 1\n            pass\n    else:\n        pass\n    return x0, x0, np.square(ops.relu(np.zeros((1,), dtype=np.float32)))\n'


def test_the_fuzzer_s_program_passes_every_configuration(monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "1")
    program = Program(source=SOURCE, entry="main",
                      params=(Param(name="x0", type=TensorT(shape=(4, 2))),
                              Param(name="f", type=ScalarT(name="float"))),
                      dtype="float32", returns_only_tensors=True, resets=(), updates=())
    check_program(program, 8631)


SOURCE_2114 = 'from typing import Dict, List, Tuple\n\nimport numpy as np\n\nfrom script import Tensor, ops\n\n\ndef main(x0: Tensor, f: float, b: bool, i: int) -> Tuple[Tensor, Tensor]:\n    for i1 in range(1):\n        l2 = [(f + np.full((2, 1), f, dtype=np.float32))]\n        t3 = np.concatenate(l2, axis=0).sum(axis=0)\n        g4, g5 = np.split((np.ones((4, 2, 4), dtype=np.float32) * t3.mean()), 2, axis=0)\n        t3 = ops.chunk((np.ones((3,), dtype=np.float32) * g4.sum())[..., 0:2], 2, 0)[1]\n        for i6 in range(i1, 0, -1):\n            if i6 < 0:\n                return ((x0 + 0.5 * np.tanh(g4).mean()) + 0.5 * np.tanh(g5).mean()), ((g5 + 0.5 * np.tanh(g4).mean()) + 0.5 * np.tanh(g5).mean())\n            if float(i1) > 0.25:\n                break\n            p7 = (np.sqrt(np.abs(g5)), np.zeros((3, 1), dtype=np.float32)[0:1])\n            u8, u9 = p7\n            g10, g11, g12, g13 = ops.chunk((np.ones((2, 2, 16), dtype=np.float32) * g4.sum()), 4, 2)\n    t14 = ops.stack([(np.ones((2, 2), dtype=np.float32) * x0.sum())[0:2], ops.chunk((np.ones((2, 2), dtype=np.float32) * x0.max()), 1, 1)[0], np.ones((3, 2), dtype=np.float32)[::2], (f - np.full((2, 2), f, dtype=np.float32))], 2)\n    if b:\n        pass\n    else:\n        pass\n    return (np.abs(t14) + 0.5 * np.tanh(t14).mean()), t14.reshape(2, 2, 4)\n'


def test_an_item_of_such_a_tuple(monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "1")
    program = Program(source=SOURCE_2114, entry="main",
                      params=(Param(name="x0", type=TensorT(shape=(2, 2, 4))),
                              Param(name="f", type=ScalarT(name="float")),
                              Param(name="b", type=ScalarT(name="bool")),
                              Param(name="i", type=ScalarT(name="int"))),
                      dtype="float32", returns_only_tensors=True, resets=(), updates=())
    check_program(program, 2114)
