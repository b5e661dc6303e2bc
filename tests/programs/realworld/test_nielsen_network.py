"""Michael Nielsen's "Neural Networks and Deep Learning" network (https://github.com/mnielsen/
neural-networks-and-deep-learning, ``src/network.py``, MIT License): ``Network.feedforward``,
its hand-written ``backprop`` and ``cost_derivative``, ``sigmoid`` and ``sigmoid_prime``.

Changes: ``self: "Network"`` and ``Tensor`` annotations; ``xrange`` is ``range`` (the source is
Python 2); ``__init__`` draws from a numpy ``Generator``. ``quadratic_cost`` is added: the cost
whose gradient ``backprop`` computes by hand.
"""

import numpy as np

from script import Tensor, script, vjp


class Network(object):  # noqa: UP004 -- as the source writes it

    def __init__(self, sizes, rng):
        self.num_layers = len(sizes)
        self.sizes = sizes
        self.biases = [rng.standard_normal((y, 1)) for y in sizes[1:]]
        self.weights = [rng.standard_normal((y, x))
                        for x, y in zip(sizes[:-1], sizes[1:])]

    def feedforward(self: "Network", a: Tensor):
        """Return the output of the network if ``a`` is input."""
        for b, w in zip(self.biases, self.weights):
            a = sigmoid(np.dot(w, a)+b)
        return a

    def backprop(self: "Network", x: Tensor, y: Tensor):
        nabla_b = [np.zeros(b.shape) for b in self.biases]
        nabla_w = [np.zeros(w.shape) for w in self.weights]
        # feedforward
        activation = x
        activations = [x]  # list to store all the activations, layer by layer
        zs = []  # list to store all the z vectors, layer by layer
        for b, w in zip(self.biases, self.weights):
            z = np.dot(w, activation)+b
            zs.append(z)
            activation = sigmoid(z)
            activations.append(activation)
        # backward pass
        delta = self.cost_derivative(activations[-1], y) * \
            sigmoid_prime(zs[-1])
        nabla_b[-1] = delta
        nabla_w[-1] = np.dot(delta, activations[-2].transpose())
        for l in range(2, self.num_layers):  # noqa: E741
            z = zs[-l]
            sp = sigmoid_prime(z)
            delta = np.dot(self.weights[-l+1].transpose(), delta) * sp
            nabla_b[-l] = delta
            nabla_w[-l] = np.dot(delta, activations[-l-1].transpose())
        return (nabla_b, nabla_w)

    def cost_derivative(self: "Network", output_activations: Tensor, y: Tensor):
        return (output_activations-y)


def sigmoid(z: Tensor):
    return 1.0/(1.0+np.exp(-z))


def sigmoid_prime(z: Tensor):
    return sigmoid(z)*(1-sigmoid(z))


def quadratic_cost(net: Network, x: Tensor, y: Tensor):
    return 0.5 * np.sum((net.feedforward(x) - y) ** 2)


def test_feedforward_and_backprop_compile_unchanged():
    rng = np.random.default_rng(0)
    net = Network([4, 5, 6, 3], rng)
    x, y = rng.standard_normal((4, 1)), rng.standard_normal((3, 1))
    np.testing.assert_array_equal(script(Network.feedforward)(net, x), net.feedforward(x))
    got, want = script(Network.backprop)(net, x, y), net.backprop(x, y)
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


def test_the_derived_gradient_is_the_hand_written_backprop():
    rng = np.random.default_rng(1)
    net = Network([4, 5, 6, 3], rng)
    x, y = rng.standard_normal((4, 1)), rng.standard_normal((3, 1))
    _, backward = vjp(script(quadratic_cost), net, x, y)
    g_net = backward(1.0)[0]
    nabla_b, nabla_w = net.backprop(x, y)
    for g, w in zip(g_net.biases + g_net.weights, nabla_b + nabla_w):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
