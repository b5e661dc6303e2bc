"""save() / load(): one self-contained file that runs without the code that defined the model."""

import hashlib
import io
import json
import subprocess
import sys
import textwrap
import zipfile
from typing import Tuple

import numpy as np
import pytest

import ir
from ir.core import Graph
from ir.printer import print_graph
from script import LoadError, Module, Parameter, Tensor, freeze, load, ops, save, script
from script.__main__ import main as script_main
from script.artifact.serialize import FORMAT_VERSION
from tests.helpers import ROOT
from tests.programs.custom_lstms import LSTMState, random_states, script_lnlstm, script_lstm
from tests.programs.gru import StackedGRU


def _flat(tree):
    if isinstance(tree, (tuple, list)):
        return [a for item in tree for a in _flat(item)]
    return [tree]


def _assert_identical(a, b):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        np.testing.assert_array_equal(x, y)


def _lstm_args(layers=2, batch=3, input_size=6, hidden=8, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((5, batch, input_size)), random_states(layers, batch, hidden, rng)


def _members(path):
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


# -- array references in IR text -------------------------------------------------------------------
def test_large_arrays_print_as_references_into_a_constant_table():
    g = Graph()
    x = g.add_input(ir.TensorType("float32", (3, 40)), "x")
    big = np.arange(120, dtype=np.float32).reshape(3, 40)
    c = g.constant(big)
    small = g.constant(np.arange(4.0))
    g.set_outputs([g.insert("tensor::add", [x, c], [x.type]).output, small])
    table = {}
    text = print_graph(g, table)
    assert 'array(Float(3, 40), ref="c0")' in text and list(table) == ["c0"]
    assert "array(Double(4), [0.0, 1.0, 2.0, 3.0])" in text  # small arrays stay inline
    again = ir.parse(text, constants=table)
    assert print_graph(again, {}) == text
    np.testing.assert_array_equal(again.nodes()[0].attrs["value"], big)
    assert str(g) == str(again)  # without a table: elided, as before
    with pytest.raises(ir.ParseError, match="constant table"):
        ir.parse(text)
    with pytest.raises(ir.ParseError, match="Float\\(3, 40\\) but the table holds"):
        ir.parse(text, constants={"c0": np.zeros((3, 40))})


# -- round trips in this process -------------------------------------------------------------------
@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("build", [lambda: script_lstm(6, 8, 2), lambda: script_lnlstm(6, 8, 2)],
                         ids=["lstm", "lnlstm"])
def test_saved_model_loads_with_identical_results(tmp_path, build, frozen):
    module = script(build()).eval()
    model = freeze(module) if frozen else module
    args = _lstm_args()
    save(model, tmp_path / "model.rsm")
    loaded = load(tmp_path / "model.rsm")
    assert loaded.frozen is frozen
    _assert_identical(loaded(*args), model(*args))
    _assert_identical(loaded.forward(*args), model(*args))
    assert "def forward(" in loaded.code_for(*args)
    assert isinstance(loaded.graph_for(*args), Graph)


def test_unfrozen_model_keeps_parameters_by_dotted_name(tmp_path):
    module = script(script_lstm(6, 8, 2))
    save(module, tmp_path / "model.rsm")
    loaded = load(tmp_path / "model.rsm")
    original = dict(module.named_parameters())
    params = dict(loaded.named_parameters())
    assert list(params) == list(original)
    assert "layers.1.cell.weight_hh" in params
    for name, p in params.items():
        np.testing.assert_array_equal(p.data, original[name].data)
    args = _lstm_args()
    before = loaded(*args)
    loaded.get_parameter("layers.0.cell.bias_ih").data[:] = 0.0  # parameters are live inputs
    with pytest.raises(AssertionError):
        _assert_identical(loaded(*args), before)


def test_training_mode_is_recorded(tmp_path):
    module = script(script_lstm(6, 8, 2))
    save(module, tmp_path / "train.rsm")
    assert load(tmp_path / "train.rsm").training is True
    save(freeze(module), tmp_path / "frozen.rsm")
    assert load(tmp_path / "frozen.rsm").training is False


class WithDefaults(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(np.linspace(-1.0, 1.0, 12).reshape(3, 4))

    def forward(self, x: Tensor, scale: float = 0.5,
                shape: Tuple[int, int] = (1, -1)) -> Tensor:
        return ops.reshape(x @ self.weight * scale, shape)

    @script.export
    def gram(self, x: Tensor) -> Tensor:
        return x @ self.weight @ self.weight.T


def test_defaults_and_exported_methods_survive(tmp_path):
    module = script(WithDefaults())
    save(module, tmp_path / "m.rsm")
    loaded = load(tmp_path / "m.rsm")
    x = np.ones((2, 3))
    _assert_identical(loaded(x), module(x))
    _assert_identical(loaded(x, scale=2.0), module(x, 2.0))
    _assert_identical(loaded.gram(x), module.gram(x))
    assert set(loaded.methods) == {"forward", "gram"}


def test_save_to_a_file_object_and_gru(tmp_path):
    frozen = freeze(script(StackedGRU(6, 8, 2)))
    buf = io.BytesIO()
    save(frozen, buf)
    x = np.random.default_rng(0).standard_normal((5, 3, 6))
    hs = list(np.random.default_rng(1).standard_normal((2, 3, 8)))
    _assert_identical(load(io.BytesIO(buf.getvalue()))(x, hs), frozen(x, hs))


# -- the file format -----------------------------------------------------------------------------
def test_manifest_describes_the_file(tmp_path):
    save(freeze(script(script_lstm(6, 8, 2))), tmp_path / "m.rsm")
    members = _members(tmp_path / "m.rsm")
    manifest = json.loads(members["manifest.json"])
    assert manifest["format_version"] == FORMAT_VERSION
    assert manifest["package_version"] == "0.1.0"
    assert manifest["frozen"] is True
    forward = manifest["methods"]["forward"]
    assert forward["arg_names"] == ["input", "states"]
    assert forward["arg_types"] == ["Tensor", "__class__.LSTMState[]"]
    assert forward["return_type"] == "(Tensor, __class__.LSTMState[])"
    assert manifest["classes"]["LSTMState"]["fields"] == [["hx", "Tensor"], ["cx", "Tensor"]]
    assert set(manifest["members"]) == set(members) - {"manifest.json", "manifest.sha256"}
    assert members["manifest.sha256"].decode().strip() == \
        hashlib.sha256(members["manifest.json"]).hexdigest()
    for name, entry in manifest["members"].items():
        assert entry["sha256"] == hashlib.sha256(members[name]).hexdigest()
        assert entry["size"] == len(members[name])
    # the arrays are plain .npy: readable by numpy without pickle
    for entry in manifest["constants"].values():
        array = np.load(io.BytesIO(members[entry["member"]]), allow_pickle=False)
        assert array.dtype.name == entry["dtype"] and list(array.shape) == entry["shape"]
    text = members[forward["graph"]].decode()
    assert 'ref="c0"' in text and "tensor::transpose" not in text


def test_inspect_prints_methods_graph_and_arrays(tmp_path, capsys):
    save(script(script_lstm(6, 8, 2)), tmp_path / "m.rsm")
    assert script_main(["inspect", str(tmp_path / "m.rsm")]) == 0
    out = capsys.readouterr().out
    assert "forward(input: Tensor, states: __class__.LSTMState[]) -> " \
           "(Tensor, __class__.LSTMState[])" in out
    assert "NamedTuple LSTMState(hx: Tensor, cx: Tensor)" in out
    row = next(line for line in out.splitlines() if "layers.0.cell.weight_ih " in line)
    assert row.split()[2:] == ["(32,", "6)", "float64", str(32 * 6 * 8)]
    assert "graph(%input : Tensor," in out and "%layers.0.cell.weight_ih : Tensor" in out


def test_inspect_reports_a_bad_file(tmp_path, capsys):
    (tmp_path / "bad.rsm").write_bytes(b"not a zip")
    assert script_main(["inspect", str(tmp_path / "bad.rsm")]) == 1
    assert "cannot load" in capsys.readouterr().err


def test_inspect_runs_as_a_module(tmp_path):
    save(freeze(script(StackedGRU(6, 8, 1))), tmp_path / "m.rsm")
    result = subprocess.run([sys.executable, "-m", "script", "inspect", str(tmp_path / "m.rsm")],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "module StackedGRU (frozen)" in result.stdout
    assert "constant" in result.stdout  # frozen weights are listed as constants


def test_loading_onto_cuda(tmp_path):
    frozen = freeze(script(script_lstm(6, 8, 1)))
    save(frozen, tmp_path / "m.rsm")
    try:
        import cupy
        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if not has_gpu:
        with pytest.raises(LoadError, match="cuda"):
            load(tmp_path / "m.rsm", device="cuda")
        return
    loaded = load(tmp_path / "m.rsm", device="cuda")
    x, states = _lstm_args(layers=1)
    gx = cupy.asarray(x)
    gstates = [LSTMState(cupy.asarray(s.hx), cupy.asarray(s.cx)) for s in states]
    out = loaded(gx, gstates)
    np.testing.assert_allclose(cupy.asnumpy(out[0]), frozen(x, states)[0], atol=1e-9)


def test_unknown_device_is_a_load_error(tmp_path):
    save(freeze(script(script_lstm(6, 8, 1))), tmp_path / "m.rsm")
    with pytest.raises(LoadError, match="unknown device"):
        load(tmp_path / "m.rsm", device="tpu")


# -- a fresh process that cannot import the model's code -----------------------------------------
CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import importlib
    for name in ("tests.programs.custom_lstms", "custom_lstms", "tests"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        raise SystemExit(f"the model's code is importable here: {name}")
    import numpy as np
    from script import load
    data = np.load(sys.argv[3], allow_pickle=False)
    out = {}
    for tag in ("frozen", "unfrozen"):
        model = load(sys.argv[2].replace("MODEL", tag))
        State = model.classes["LSTMState"]
        states = [State(data[f"h{k}"], data[f"c{k}"]) for k in range(2)]
        output, finals = model(data["x"], states)
        assert type(finals[0]).__name__ == "LSTMState" and finals[0].hx is finals[0][0]
        out[f"{tag}_y"] = output
        for k, s in enumerate(finals):
            out[f"{tag}_h{k}"], out[f"{tag}_c{k}"] = s.hx, s.cx
    assert "tests" not in sys.modules
    np.savez(sys.argv[4], **out)
""")


def test_load_in_a_fresh_process_without_the_model_code(tmp_path):
    module = script(script_lstm(6, 8, 2)).eval()
    save(freeze(module), tmp_path / "frozen.rsm")
    save(module, tmp_path / "unfrozen.rsm")
    x, states = _lstm_args()
    np.savez(tmp_path / "inputs.npz", x=x, **{f"h{k}": s.hx for k, s in enumerate(states)},
             **{f"c{k}": s.cx for k, s in enumerate(states)})
    packages = tmp_path / "packages"  # the library only: no tests/ beside it
    packages.mkdir()
    for name in ("script", "ir", "passes", "fuser"):
        (packages / name).symlink_to(ROOT / name)
    (tmp_path / "child.py").write_text(CHILD)
    result = subprocess.run(
        [sys.executable, "-I", str(tmp_path / "child.py"), str(packages),
         str(tmp_path / "MODEL.rsm"), str(tmp_path / "inputs.npz"), str(tmp_path / "out.npz")],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = np.load(tmp_path / "out.npz")
    expected_y, finals = module(x, states)
    for tag in ("frozen", "unfrozen"):
        np.testing.assert_array_equal(out[f"{tag}_y"], expected_y)
        for k, s in enumerate(finals):
            np.testing.assert_array_equal(out[f"{tag}_h{k}"], s.hx)
            np.testing.assert_array_equal(out[f"{tag}_c{k}"], s.cx)


class WithBuffer(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(np.arange(12.0).reshape(3, 4))
        self.mask = np.array([1.0, 0.0, 1.0, 0.0])

    def forward(self, x: Tensor) -> Tensor:
        return x @ self.weight * self.mask


def test_array_attributes_are_saved_as_buffers(tmp_path):
    module = script(WithBuffer())
    x = np.ones((2, 3))
    save(module, tmp_path / "m.rsm")
    loaded = load(tmp_path / "m.rsm")
    assert [n for n, _ in loaded.named_parameters()] == ["weight"]
    assert [n for n, _ in loaded.named_buffers()] == ["mask"]
    _assert_identical(loaded(x), module(x))
    save(freeze(module), tmp_path / "f.rsm")
    frozen = load(tmp_path / "f.rsm")
    assert list(frozen.named_buffers()) == [] and list(frozen.named_parameters()) == []
    _assert_identical(frozen(x), module(x))


@script
def scaled_tanh(x: Tensor, scale: float = 2.0) -> Tensor:
    return np.tanh(x) * scale


def test_a_scripted_function_saves_as_forward(tmp_path):
    save(scaled_tanh, tmp_path / "fn.rsm")
    loaded = load(tmp_path / "fn.rsm")
    x = np.linspace(-1.0, 1.0, 5)
    _assert_identical(loaded(x), scaled_tanh(x))
    _assert_identical(loaded(x, scale=3.0), scaled_tanh(x, 3.0))


def test_saving_something_else_is_a_script_error(tmp_path):
    from script import ScriptError
    with pytest.raises(ScriptError, match="expected a scripted Module"):
        save(object(), tmp_path / "x.rsm")
    assert not (tmp_path / "x.rsm").exists()


def test_rnn_lstm_saves_with_its_parameter_names(tmp_path):
    import rnn
    module = script(rnn.LSTM(6, 8, num_layers=2, rng=0, dtype="float64"))
    save(module, tmp_path / "lstm.rsm")
    loaded = load(tmp_path / "lstm.rsm")
    assert [n for n, _ in loaded.named_parameters()] == [n for n, _ in module.named_parameters()]
    assert "weight_ih_l1" in dict(loaded.named_parameters())
    x = np.random.default_rng(0).standard_normal((5, 3, 6))
    h0 = np.random.default_rng(1).standard_normal((2, 3, 8))
    _assert_identical(loaded(x, (h0, h0)), module(x, (h0, h0)))
    save(freeze(module), tmp_path / "frozen.rsm")
    _assert_identical(load(tmp_path / "frozen.rsm")(x), module.eval()(x))
