"""Erik Linder-Norén's ML-From-Scratch, "Machine Learning From Scratch: bare bones NumPy
implementations of machine learning models and algorithms"
(https://github.com/eriklindernoren/ML-From-Scratch, ``mlfromscratch/deep_learning/layers.py``
class ``RNN`` and the ``TanH`` of ``mlfromscratch/deep_learning/activation_functions.py``; MIT
License, the repository's LICENSE file).

A batch-major vanilla RNN layer with a hand-written backward pass through truncated time:
``forward_pass`` preallocates ``np.zeros`` for the state inputs, the states (one step more, so
that ``self.states[:, t-1]`` at ``t = 0`` reads the zero row ``self.states[:, -1]``) and the
outputs, and writes each step with ``self.state_input[:, t] = X[:, t].dot(self.U.T) + ...``;
``backward_pass`` walks ``reversed(range(timesteps))``, writes ``accum_grad_next[:, t]`` and
runs an inner loop ``for t_ in reversed(np.arange(max(0, t - self.bptt_trunc), t+1))`` that
accumulates ``grad_U += grad_wrt_state.T.dot(...)`` and steps ``grad_wrt_state`` back through
``states[:, t_-1]``. (``accum_grad_next[:, t]`` takes only step ``t``'s direct term, as in the
source: the input gradient is not the full one, the weight gradients are exact when
``bptt_trunc`` covers the sequence.)

Changes: annotations; each method is a function taking what it read from ``self``
(``U``, ``V``, ``W``, ``n_units``, ``bptt_trunc``, and the ``layer_input``, ``state_input`` and
``states`` the forward pass stored) and returning what it stored there (``self.outputs``,
``self.state_input``, ``self.states``, ``self.layer_input``); the activation object's methods
are functions: ``self.activation(x)`` (``TanH.__call__``) is ``tanh_call(x)`` and
``self.activation.gradient(x)`` is ``tanh_gradient(x)``, whose ``self.__call__(x)`` is
``tanh_call(x)``; the backward pass returns the gradients ``grad_U, grad_V, grad_W`` with
``accum_grad_next`` instead of handing them to the layer's optimizers
(``self.U = self.U_opt.update(self.U, grad_U)``).
"""

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor


# activation_functions.py: class TanH
def tanh_call(x: Tensor) -> Tensor:
    return 2 / (1 + np.exp(-2*x)) - 1


def tanh_gradient(x: Tensor) -> Tensor:
    return 1 - np.power(tanh_call(x), 2)


def forward_pass(X: Tensor, U: Tensor, V: Tensor, W: Tensor, n_units: int,
                 training: bool = True):
    layer_input = X
    batch_size, timesteps, input_dim = X.shape

    # Save these values for use in backprop.
    state_input = np.zeros((batch_size, timesteps, n_units))
    states = np.zeros((batch_size, timesteps+1, n_units))
    outputs = np.zeros((batch_size, timesteps, input_dim))

    # Set last time step to zero for calculation of the state_input at time step zero
    states[:, -1] = np.zeros((batch_size, n_units))
    for t in range(timesteps):
        # Input to state_t is the current input and output of previous states
        state_input[:, t] = X[:, t].dot(U.T) + states[:, t-1].dot(W.T)
        states[:, t] = tanh_call(state_input[:, t])
        outputs[:, t] = states[:, t].dot(V.T)

    return outputs, state_input, states, layer_input


def backward_pass(accum_grad: Tensor, layer_input: Tensor, state_input: Tensor, states: Tensor,
                  U: Tensor, V: Tensor, W: Tensor, bptt_trunc: int):
    _, timesteps, _ = accum_grad.shape

    # Variables where we save the accumulated gradient w.r.t each parameter
    grad_U = np.zeros_like(U)
    grad_V = np.zeros_like(V)
    grad_W = np.zeros_like(W)
    # The gradient w.r.t the layer input.
    # Will be passed on to the previous layer in the network
    accum_grad_next = np.zeros_like(accum_grad)

    # Back Propagation Through Time
    for t in reversed(range(timesteps)):
        # Update gradient w.r.t V at time step t
        grad_V += accum_grad[:, t].T.dot(states[:, t])
        # Calculate the gradient w.r.t the state input
        grad_wrt_state = accum_grad[:, t].dot(V) * tanh_gradient(state_input[:, t])
        # Gradient w.r.t the layer input
        accum_grad_next[:, t] = grad_wrt_state.dot(U)
        # Update gradient w.r.t W and U by backprop. from time step t for at most
        # self.bptt_trunc number of time steps
        for t_ in reversed(np.arange(max(0, t - bptt_trunc), t+1)):
            grad_U += grad_wrt_state.T.dot(layer_input[:, t_])
            grad_W += grad_wrt_state.T.dot(states[:, t_-1])
            # Calculate gradient w.r.t previous state
            grad_wrt_state = grad_wrt_state.dot(W) * tanh_gradient(state_input[:, t_-1])

    return grad_U, grad_V, grad_W, accum_grad_next


def forward_outputs(X: Tensor, U: Tensor, V: Tensor, W: Tensor, n_units: int) -> Tensor:
    """The layer's output ``forward_pass`` returns (for the hand-written backward's check)."""
    outputs, _, _, _ = forward_pass(X, U, V, W, n_units)
    return outputs


# batch_size, timesteps, input_dim, n_units, bptt_trunc; "bench" as the repository's
# examples/recurrent_neural_network.py: RNN(10, bptt_trunc=5, input_shape=(10, 61)), batch 512
SIZES = {"test": (3, 6, 4, 5, 2), "bench": (512, 10, 61, 10, 5)}


def weights(dtype: str, size: str) -> tuple:
    """``X, U, V, W`` (``initialize``'s shapes: ``U`` (n_units, input_dim), ``V`` (input_dim,
    n_units), ``W`` (n_units, n_units))."""
    N, T, D, H, _ = SIZES[size]
    return arrays(dtype, 41, (N, T, D), (H, D), (D, H), (H, H))


def forward_args(dtype: str, size: str) -> tuple:
    X, U, V, W = weights(dtype, size)
    return X, U, V, W, SIZES[size][3]


def backward_args(dtype: str, size: str) -> tuple:
    X, U, V, W = weights(dtype, size)
    _, state_input, states, layer_input = forward_pass(X, U, V, W, SIZES[size][3])
    accum_grad, = arrays(dtype, 42, X.shape)
    return accum_grad, layer_input, state_input, states, U, V, W, SIZES[size][4]


CASES = {
    "forward_pass": Case(forward_pass, forward_args, grad=True),
    "backward_pass": Case(backward_pass, backward_args, grad=True),
}
BENCH = "backward_pass"
