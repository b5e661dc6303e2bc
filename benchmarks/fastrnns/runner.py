"""The variant table: name -> creator, group and who it is (upstream's ``nn_runners``).

Upstream names map to ours: ``jit*`` -> ``script*``, ``cudnn``/``aten`` -> ``torch_lstm``,
``vl_jit`` -> ``vl_script``. ``py`` runs first: it is the reference the other LSTM rows are
checked against.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.fastrnns import cells, factory, frontend_rows
from benchmarks.fastrnns.factory import ModelDef, RNNInputs


@dataclass(frozen=True)
class Runner:
    """One row of the benchmark."""

    name: str
    creator: Callable[[RNNInputs], ModelDef] | str
    """a creator, or ``"torch:<function>"`` for a creator in ``torch_models`` (imported late)"""
    group: str = "lstm"
    """``lstm`` or ``vl_lstm`` (variable-length inputs)"""
    doc: str = ""

    @property
    def is_peer(self) -> bool:
        return isinstance(self.creator, str)

    @property
    def is_scripted(self) -> bool:
        """An rnnscript row: its first call compiles (``--first-call fresh`` measures those)."""
        return self.name.startswith(("script", "vl_script", "rnn_"))

    def create(self, inputs: RNNInputs) -> ModelDef:
        if not isinstance(self.creator, str):
            return self.creator(inputs)
        module = importlib.import_module("benchmarks.fastrnns.torch_models")
        return getattr(module, self.creator.split(":", 1)[1])(inputs)


_DROPOUT = factory.whole_stack_creator(cells.dropout_lstm, (True,), check_extra=(False,))

RUNNERS = {r.name: r for r in [
    Runner("py", factory.py_creator, doc="numpy eager, hand-written backward"),
    Runner("script", factory.lstm_creator(cells.lstm_layer), doc="scripted cell + loop"),
    Runner("script_all_grads", factory.lstm_creator(cells.lstm_layer, input_gradient=True),
           doc="script, also differentiating the input sequence"),
    Runner("script_premul", factory.lstm_creator(cells.lstm_layer_premul),
           doc="input projection as one matmul before the loop"),
    Runner("script_premul_bias", factory.lstm_creator(cells.lstm_layer_premul_bias),
           doc="... and b_ih added once, 2-D matmul"),
    Runner("script_simple", factory.simple_creator, doc="flat states, no output list"),
    Runner("script_multilayer", factory.whole_stack_creator(cells.multilayer_lstm),
           doc="the layers loop inside the script"),
    Runner("script_layernorm", factory.self_checked_creator(
        cells.layernorm_lstm_layer, factory.layernorm_weights), doc="layer-norm LSTM"),
    Runner("script_layernorm_decom", factory.self_checked_creator(
        cells.layernorm_decom_lstm_layer, factory.layernorm_weights),
        doc="layer norm as mean/std ops"),
    Runner("script_dropout", _DROPOUT, doc="dropout 0.4 between layers"),
    Runner("script_gru", factory.self_checked_creator(cells.gru_layer, factory.gru_weights, 1),
           doc="GRU layer"),
    Runner("floor", factory.floor_creator, doc="the GEMMs alone"),
    Runner("rnn_lstm", frontend_rows.front_end_creator("lstm"),
           doc="rnn.LSTM as users call it (twins: script, torch_lstm)"),
    Runner("rnn_lstm_2l", frontend_rows.front_end_creator("lstm_2l"), doc="rnn.LSTM, 2 layers"),
    Runner("script_lstm_2l", frontend_rows.hand_creator("lstm_2l"),
           doc="scripted cell + loop, 2 layers"),
    Runner("rnn_lstm_bidir", frontend_rows.front_end_creator("lstm_bidir"),
           doc="rnn.LSTM, bidirectional"),
    Runner("script_lstm_bidir", frontend_rows.hand_creator("lstm_bidir"),
           doc="scripted cell + loop, both directions"),
    Runner("rnn_gru", frontend_rows.front_end_creator("gru"),
           doc="rnn.GRU as users call it (twins: script_gru, torch_gru)"),
    Runner("torch_lstm", "torch:lstm_creator", doc="torch.nn.LSTM"),
    Runner("torch_script", "torch:script_creator", doc="custom LSTM, torch.jit.script"),
    Runner("torch_eager", "torch:eager_creator", doc="custom LSTM, torch eager"),
    Runner("torch_compile", "torch:compile_creator", doc="custom LSTM, torch.compile"),
    Runner("torch_layernorm", "torch:layernorm_creator", doc="layer-norm LSTM, torch eager"),
    Runner("torch_lstm_2l", "torch:lstm_2l_creator", doc="torch.nn.LSTM, 2 layers"),
    Runner("torch_lstm_bidir", "torch:lstm_bidir_creator", doc="torch.nn.LSTM, bidirectional"),
    Runner("torch_gru", "torch:gru_creator", doc="torch.nn.GRU"),
    Runner("vl_py", factory.vl_py_creator, "vl_lstm", doc="per-sequence numpy eager"),
    Runner("vl_script", factory.vl_script_creator, "vl_lstm", doc="per-sequence loop, scripted"),
]}

FRONT_END_RNNS = ["rnn_lstm", "rnn_lstm_2l", "script_lstm_2l", "rnn_lstm_bidir",
                  "script_lstm_bidir", "rnn_gru", "script_gru"]
"""The front ends as users call them (``frontend_rows``) and their hand-written twins."""

DEFAULT_RNNS = ["py", "script", "script_all_grads", "script_premul", "script_premul_bias",
                "script_simple", "script_multilayer", "floor", *FRONT_END_RNNS]
"""Upstream's default list (``cudnn aten jit jit_premul jit_premul_bias jit_simple jit_multilayer
py``) in our names, plus the floor, ``script_all_grads`` (``script`` differentiating the input
sequence too: the saving of differentiating only what training needs, in the same run) and the
front-end rows."""

PEER_RNNS = ["torch_lstm", "torch_script", "torch_eager"]
"""Added by ``--peers`` (``torch_compile`` is opt-in: name it in ``--rnns``)."""

PEERS_OF = {"script_layernorm": "torch_layernorm", "script_layernorm_decom": "torch_layernorm",
            "rnn_lstm_2l": "torch_lstm_2l", "rnn_lstm_bidir": "torch_lstm_bidir",
            "rnn_gru": "torch_gru"}
"""Rows whose cell has a torch eager twin: ``--peers`` adds the twin when the row is run, and the
table's ``x_peer`` column divides the row's times by the twin's."""

EXTRA_RNNS = ["script_layernorm", "script_layernorm_decom", "script_dropout"]
"""Opt-in, as upstream's layernorm/dropout variants; ``--rnns all`` includes them."""

VL_RNNS = ["vl_py", "vl_script"]
"""Added by ``--variable-lstms``."""


def select(rnns: list[str] | None, peers: bool, variable_lstms: bool) -> list[str]:
    """The variant names to run, in table order, without duplicates."""
    names = list(DEFAULT_RNNS) if not rnns else list(rnns)
    if "all" in names:
        names.remove("all")
        names += DEFAULT_RNNS + EXTRA_RNNS
    if peers:
        names += PEER_RNNS + [PEERS_OF[n] for n in names if n in PEERS_OF]
    if variable_lstms:
        names += VL_RNNS
    unique = list(dict.fromkeys(names))
    unknown = [n for n in unique if n not in RUNNERS]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(RUNNERS)} or all")
    return unique


def torch_available() -> str | None:
    """None when torch imports; else the reason it does not."""
    try:
        importlib.import_module("torch")
    except Exception as e:  # noqa: BLE001 - a broken install is as good as none here
        return f"{type(e).__name__}: {e}"
    return None
