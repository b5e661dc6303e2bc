"""The executor: caching, graph_for, code_for, signature errors, threads, RNNSCRIPT_DISABLE."""

import os
import subprocess
import sys
import threading
from typing import List, Tuple

import numpy as np
import pytest

import ir
from script import ScriptError, SignatureError, Tensor, ops, script


def cell(x: Tensor, h: Tensor, w: Tensor, scale: float = 1.0) -> Tensor:
    return np.tanh(x @ w.T + h) * scale


def pair(x: Tensor, n: int) -> Tuple[Tensor, int]:
    return x + float(n), n + 1


def takes_list(xs: List[Tensor]) -> Tensor:
    return ops.stack(xs, 0)


def _args(rng, batch=3, inp=5, hid=4, dtype=np.float32):
    return (rng.standard_normal((batch, inp)).astype(dtype),
            rng.standard_normal((batch, hid)).astype(dtype),
            rng.standard_normal((hid, inp)).astype(dtype))


def test_defaults_and_keywords():
    f = script(cell)
    x, h, w = _args(np.random.default_rng(0))
    np.testing.assert_allclose(f(x, h, w), cell(x, h, w), rtol=1e-6)
    np.testing.assert_allclose(f(x, h, w=w, scale=2.0), cell(x, h, w, 2.0), rtol=1e-6)
    np.testing.assert_allclose(f(x, h, w, scale=3), cell(x, h, w, 3), rtol=1e-6)


def test_graph_for_is_specialized_without_running():
    f = script(cell)
    x, h, w = _args(np.random.default_rng(0))
    g = f.graph_for(x, h, w)
    assert isinstance(g, ir.Graph)
    assert "Float(3, 4)" in str(g)
    assert "Tensor" in str(f.graph)  # the graph as written is not specialized
    assert f.compiled_signatures == 1
    f(x, h, w)
    assert f.compiled_signatures == 1


def test_code_for_is_readable_python():
    f = script(cell)
    code = f.code_for(*_args(np.random.default_rng(0)))
    assert code.startswith("def cell(x, h, w, scale):")
    assert "x @ (w.T)" in code and "_kernel(" in code  # the matmul, then the fused tanh * scale
    compile(code, "<test>", "exec")
    import fuser
    with fuser.disabled():
        unfused = script(cell).code_for(*_args(np.random.default_rng(0)))
    assert "np.tanh(" in unfused and "_kernel" not in unfused


def test_tuple_results_and_scalars():
    f = script(pair)
    x = np.arange(3.0)
    out, m = f(x, 4)
    np.testing.assert_array_equal(out, x + 4.0)
    assert m == 5 and type(m) is int


def test_lists_cross_the_boundary():
    f = script(takes_list)
    xs = [np.ones(2), np.zeros(2)]
    np.testing.assert_array_equal(f(xs), np.stack(xs))


@pytest.mark.parametrize("call, match", [
    (lambda f, x, h, w: f(x, h), "missing required argument 'w'"),
    (lambda f, x, h, w: f(x, h, w, 1.0, 5), "takes 4 arguments"),
    (lambda f, x, h, w: f(x, h, w, bogus=1), "unexpected keyword argument 'bogus'"),
    (lambda f, x, h, w: f(x, h, w, x=x), "multiple values for argument 'x'"),
    (lambda f, x, h, w: f([1, 2], h, w), "argument 'x'"),
    (lambda f, x, h, w: f(x, h, w, "big"), "argument 'scale'"),
    (lambda f, x, h, w: f(x, h, w[:, :2]), "cannot be accepted"),
    (lambda f, x, h, w: f(x, h[:, :3], w), "cannot be accepted"),
])
def test_signature_errors(call, match):
    f = script(cell)
    x, h, w = _args(np.random.default_rng(0))
    with pytest.raises(SignatureError, match=match):
        call(f, x, h, w)


def test_signature_error_for_unsupported_dtype():
    f = script(cell)
    x, h, w = _args(np.random.default_rng(0))
    with pytest.raises(SignatureError, match="argument 'x'"):
        f(x.astype(np.complex64), h, w)


def test_concurrent_first_calls_compile_once():
    f = script(cell)
    rng = np.random.default_rng(0)
    arg_sets = [_args(rng, batch=b) for b in (1, 2, 3)] * 4
    results: list = [None] * len(arg_sets)
    barrier = threading.Barrier(len(arg_sets))

    def worker(k):
        barrier.wait()
        results[k] = f(*arg_sets[k])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(arg_sets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.compiled_signatures == 3
    for args, got in zip(arg_sets, results):
        np.testing.assert_allclose(got, cell(*args), rtol=1e-6)


def test_assert_raises_at_run_time():
    from tests.programs.language import globals_and_asserts
    f = script(globals_and_asserts)
    with pytest.raises(AssertionError, match="empty input"):
        f(np.zeros((0, 2)))


def test_disable_env_runs_plain_python():
    code = ("import os; os.environ['RNNSCRIPT_DISABLE'] = '1'\n"
            "from script import script\n"
            "from tests.script.runtime.test_executor import cell\n"
            "assert script(cell) is cell\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_uncompilable_function_raises_script_error_on_use():
    def bad(x: Tensor) -> Tensor:
        return lambda: x  # noqa: E731

    f = script(bad)
    with pytest.raises(ScriptError, match="lambda"):
        f(np.zeros(2))
