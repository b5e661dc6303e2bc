"""Clemens Korndörfer's pyESN, "Echo State Networks in Python" (https://github.com/cknd/pyESN,
``pyESN.py``, MIT License): ``ESN._update`` (the reservoir step with teacher forcing and noise),
the state harvesting loop of ``ESN.fit`` (``states[n, :] = self._update(states[n - 1],
inputs_scaled[n, :], teachers_scaled[n - 1, :])`` into ``np.zeros``) and ``ESN.predict``
(``np.vstack`` of the last state and zeros, then ``states[n, :]`` and ``outputs[n, :]`` written
per step, the readout over ``np.concatenate([states[n, :], inputs[n, :]])``).

Changes: annotations; each method is a function taking what it read from ``self`` (``W``,
``W_in``, ``W_feedb``, ``W_out``, ``noise``, ``teacher_forcing``, ``n_reservoir``, ...) as
parameters; the noise draw ``self.random_state_.rand(self.n_reservoir)`` of each step is read
from ``rand``, an array of the draws (``rand[n]`` at step n), so that the compiled and the plain
program see the same draws; ``out_activation`` and ``_scale_inputs`` / ``_unscale_teacher`` are
the defaults (identity, no scaling); ``fit`` stops after harvesting the states (the readout is
``np.linalg.pinv``, outside the op library).
"""

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor


def _update(state: Tensor, input_pattern: Tensor, output_pattern: Tensor, W: Tensor,
            W_in: Tensor, W_feedb: Tensor, noise: float, teacher_forcing: bool,
            rand: Tensor) -> Tensor:
    """performs one update step.

    i.e., computes the next network state by applying the recurrent weights
    to the last state & and feeding in the current input and output patterns
    """
    if teacher_forcing:
        preactivation = (np.dot(W, state)
                         + np.dot(W_in, input_pattern)
                         + np.dot(W_feedb, output_pattern))
    else:
        preactivation = (np.dot(W, state)
                         + np.dot(W_in, input_pattern))
    return (np.tanh(preactivation)
            + noise * (rand - 0.5))


def harvest_states(inputs_scaled: Tensor, teachers_scaled: Tensor, n_reservoir: int, W: Tensor,
                   W_in: Tensor, W_feedb: Tensor, noise: float, teacher_forcing: bool,
                   rand: Tensor) -> Tensor:
    # step the reservoir through the given input,output pairs:
    states = np.zeros((inputs_scaled.shape[0], n_reservoir))
    for n in range(1, inputs_scaled.shape[0]):
        states[n, :] = _update(states[n-1], inputs_scaled[n, :], teachers_scaled[n-1, :], W,
                               W_in, W_feedb, noise, teacher_forcing, rand[n])
    return states


def predict(inputs: Tensor, n_reservoir: int, n_inputs: int, n_outputs: int, W: Tensor,
            W_in: Tensor, W_feedb: Tensor, W_out: Tensor, noise: float, teacher_forcing: bool,
            rand: Tensor) -> Tensor:
    if inputs.ndim < 2:
        inputs = np.reshape(inputs, (len(inputs), -1))
    n_samples = inputs.shape[0]

    laststate = np.zeros(n_reservoir)
    lastinput = np.zeros(n_inputs)
    lastoutput = np.zeros(n_outputs)

    inputs = np.vstack([lastinput, inputs])
    states = np.vstack([laststate, np.zeros((n_samples, n_reservoir))])
    outputs = np.vstack([lastoutput, np.zeros((n_samples, n_outputs))])

    for n in range(1, n_samples):
        states[n, :] = _update(states[n - 1, :], inputs[n, :], outputs[n - 1, :], W, W_in,
                               W_feedb, noise, teacher_forcing, rand[n])
        outputs[n, :] = np.dot(W_out, np.concatenate([states[n, :], inputs[n, :]]))

    return outputs[1:]


SIZES = {"test": (6, 2, 1, 8), "bench": (200, 3, 2, 300)}  # n_reservoir, n_in, n_out, samples


def _weights(dtype: str, size: str) -> tuple:
    n_res, n_in, n_out, _ = SIZES[size]
    W, W_in, W_feedb = arrays(dtype, 41, (n_res, n_res), (n_res, n_in), (n_res, n_out))
    return W * (0.95 / np.max(np.abs(np.linalg.eigvals(W)))), W_in, W_feedb


def harvest_args(dtype: str, size: str) -> tuple:
    n_res, n_in, n_out, T = SIZES[size]
    inputs, teachers = arrays(dtype, 42, (T, n_in), (T, n_out), scale=1.0)
    rand = np.random.default_rng(43).random((T, n_res)).astype(dtype)
    return (inputs, teachers, n_res, *_weights(dtype, size), 0.001, True, rand)


def predict_args(dtype: str, size: str) -> tuple:
    n_res, n_in, n_out, T = SIZES[size]
    (inputs, W_out) = arrays(dtype, 44, (T, n_in), (n_out, n_res + n_in), scale=0.3)
    rand = np.random.default_rng(45).random((T + 1, n_res)).astype(dtype)
    W, W_in, W_feedb = _weights(dtype, size)
    return inputs, n_res, n_in, n_out, W, W_in, W_feedb, W_out, 0.001, True, rand


CASES = {
    "harvest_states": Case(harvest_states, harvest_args, grad=True),
    "predict": Case(predict, predict_args, grad=True),
}
BENCH = "harvest_states"
