"""The optimizers of "Deep Learning from Scratch 2" (https://github.com/oreilly-japan/
deep-learning-from-scratch-2, ``common/optimizer.py``, MIT License): SGD, Momentum, Nesterov,
AdaGrad, RMSprop and Adam, each ``update(params, grads)`` updating the model's parameter arrays
in place (``params[i] -= ...``) and its own state lists (``self.m[i] += ...``, read back after),
made on its first call. The training loop calls one once per step.

Changes: none (the classes as written; ``from common.np import *`` is ``import numpy as np``).
The cases call ``update`` on an optimizer whose state a first plain call made, with the
parameter shapes of the book's LSTM language model (``ch06/rnnlm.py``: vocabulary 10000,
word vectors and hidden state 100); ``first call`` cases start from no state.
"""

import numpy as np

from benchmarks.realworld_programs import Case, arrays


class SGD:
    '''
    確率的勾配降下法（Stochastic Gradient Descent）
    '''
    def __init__(self, lr=0.01):
        self.lr = lr

    def update(self, params, grads):
        for i in range(len(params)):
            params[i] -= self.lr * grads[i]


class Momentum:
    '''
    Momentum SGD
    '''
    def __init__(self, lr=0.01, momentum=0.9):
        self.lr = lr
        self.momentum = momentum
        self.v = None

    def update(self, params, grads):
        if self.v is None:
            self.v = []
            for param in params:
                self.v.append(np.zeros_like(param))

        for i in range(len(params)):
            self.v[i] = self.momentum * self.v[i] - self.lr * grads[i]
            params[i] += self.v[i]


class Nesterov:
    '''
    Nesterov's Accelerated Gradient (http://arxiv.org/abs/1212.0901)
    '''
    def __init__(self, lr=0.01, momentum=0.9):
        self.lr = lr
        self.momentum = momentum
        self.v = None

    def update(self, params, grads):
        if self.v is None:
            self.v = []
            for param in params:
                self.v.append(np.zeros_like(param))

        for i in range(len(params)):
            self.v[i] *= self.momentum
            self.v[i] -= self.lr * grads[i]
            params[i] += self.momentum * self.momentum * self.v[i]
            params[i] -= (1 + self.momentum) * self.lr * grads[i]


class AdaGrad:
    '''
    AdaGrad
    '''
    def __init__(self, lr=0.01):
        self.lr = lr
        self.h = None

    def update(self, params, grads):
        if self.h is None:
            self.h = []
            for param in params:
                self.h.append(np.zeros_like(param))

        for i in range(len(params)):
            self.h[i] += grads[i] * grads[i]
            params[i] -= self.lr * grads[i] / (np.sqrt(self.h[i]) + 1e-7)


class RMSprop:
    '''
    RMSprop
    '''
    def __init__(self, lr=0.01, decay_rate = 0.99):
        self.lr = lr
        self.decay_rate = decay_rate
        self.h = None

    def update(self, params, grads):
        if self.h is None:
            self.h = []
            for param in params:
                self.h.append(np.zeros_like(param))

        for i in range(len(params)):
            self.h[i] *= self.decay_rate
            self.h[i] += (1 - self.decay_rate) * grads[i] * grads[i]
            params[i] -= self.lr * grads[i] / (np.sqrt(self.h[i]) + 1e-7)


class Adam:
    '''
    Adam (http://arxiv.org/abs/1412.6980v8)
    '''
    def __init__(self, lr=0.001, beta1=0.9, beta2=0.999):
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.iter = 0
        self.m = None
        self.v = None

    def update(self, params, grads):
        if self.m is None:
            self.m, self.v = [], []
            for param in params:
                self.m.append(np.zeros_like(param))
                self.v.append(np.zeros_like(param))

        self.iter += 1
        lr_t = self.lr * np.sqrt(1.0 - self.beta2**self.iter) / (1.0 - self.beta1**self.iter)

        for i in range(len(params)):
            self.m[i] += (1 - self.beta1) * (grads[i] - self.m[i])
            self.v[i] += (1 - self.beta2) * (grads[i]**2 - self.v[i])

            params[i] -= lr_t * self.m[i] / (np.sqrt(self.v[i]) + 1e-7)


SIZES = {"test": (7, 3, 4), "bench": (10000, 100, 100)}  # V, D, H


def _params_and_grads(dtype: str, size: str) -> tuple:
    V, D, H = SIZES[size]
    shapes = [(V, D), (D, 4 * H), (H, 4 * H), (4 * H,), (H, V), (V,)]  # embedding, LSTM, affine
    params = list(arrays(dtype, 21, *shapes))
    grads = list(arrays(dtype, 22, *shapes, scale=0.01))
    return params, grads


def _args(cls: type, first: bool):
    def make(dtype: str, size: str) -> tuple:
        params, grads = _params_and_grads(dtype, size)
        optimizer = cls()
        if not first:
            cls.update(optimizer, [p.copy() for p in params], grads)  # its state, made
        return optimizer, params, grads
    return make


_OPTIMIZERS = (SGD, Momentum, Nesterov, AdaGrad, RMSprop, Adam)
CASES = {f"{cls.__name__}.update": Case(cls.update, _args(cls, False)) for cls in _OPTIMIZERS}
CASES.update({f"{cls.__name__}.update first call": Case(cls.update, _args(cls, True))
              for cls in _OPTIMIZERS if cls is not SGD})
BENCH = "Adam.update"
BENCH_DTYPE = "float32"  # the book's weights are astype('f')
