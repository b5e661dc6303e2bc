"""Mantas Lukoševičius' minimal Echo State Network, ``minimalESN.py``
(https://mantas.info/code/simple_esn/, (c) 2012-2020 Mantas Lukoševičius, MIT License): a
leaky reservoir driven by a scalar series, its states collected into a design matrix with
``np.vstack((1, u, x))``, a ridge-regression readout (``linalg.solve``, or the "direct
equations from texts" variant with ``linalg.inv``), then the trained network run in
generative mode (its output fed back as the next input) and in predictive mode.

Changes: annotations; the script's top-level phases are functions whose parameters are the
globals each phase read (``harvest``, ``train``, ``train_inv``, ``generate``, ``predict``,
``mse``, and ``whole`` chaining them); the data file, the plots and the prints are dropped;
``from scipy import linalg`` falls back to numpy's ``linalg`` (the same LAPACK solvers) where
scipy is not installed.
"""

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor

try:
    from scipy import linalg
except ImportError:  # scipy is not a dependency: numpy.linalg computes the same
    from numpy import linalg


def harvest(data: Tensor, Win: Tensor, W: Tensor, a: float, trainLen: int, initLen: int,
            inSize: int, resSize: int):
    # allocated memory for the design (collected states) matrix
    X = np.zeros((1+inSize+resSize,trainLen-initLen))
    # set the corresponding target matrix directly
    Yt = data[None,initLen+1:trainLen+1]

    # run the reservoir with the data and collect X
    x = np.zeros((resSize,1))
    for t in range(trainLen):
        u = data[t]
        x = (1-a)*x + a*np.tanh( np.dot( Win, np.vstack((1,u)) ) + np.dot( W, x ) )
        if t >= initLen:
            X[:,t-initLen] = np.vstack((1,u,x))[:,0]
    return X, Yt, x


def train(X: Tensor, Yt: Tensor, reg: float, inSize: int, resSize: int):
    # train the output by ridge regression
    Wout = linalg.solve( np.dot(X,X.T) + reg*np.eye(1+inSize+resSize),
        np.dot(X,Yt.T) ).T
    return Wout


def train_inv(X: Tensor, Yt: Tensor, reg: float, inSize: int, resSize: int):
    # using the direct equations from texts
    X_T = X.T
    Wout = np.dot( np.dot(Yt,X_T), linalg.inv( np.dot(X,X_T) + \
        reg*np.eye(1+inSize+resSize) ) )
    return Wout


def generate(data: Tensor, Win: Tensor, W: Tensor, Wout: Tensor, x: Tensor, a: float,
             trainLen: int, testLen: int, outSize: int):
    # run the trained ESN in a generative mode. no need to initialize here,
    # because x is initialized with training data and we continue from there.
    Y = np.zeros((outSize,testLen))
    u = data[trainLen]
    for t in range(testLen):
        x = (1-a)*x + a*np.tanh( np.dot( Win, np.vstack((1,u)) ) + np.dot( W, x ) )
        y = np.dot( Wout, np.vstack((1,u,x)) )
        Y[:,t] = y
        # generative mode:
        u = y
    return Y


def predict(data: Tensor, Win: Tensor, W: Tensor, Wout: Tensor, x: Tensor, a: float,
            trainLen: int, testLen: int, outSize: int):
    # this would be a predictive mode:
    Y = np.zeros((outSize,testLen))
    u = data[trainLen]
    for t in range(testLen):
        x = (1-a)*x + a*np.tanh( np.dot( Win, np.vstack((1,u)) ) + np.dot( W, x ) )
        y = np.dot( Wout, np.vstack((1,u,x)) )
        Y[:,t] = y
        u = data[trainLen+t+1]
    return Y


def mse(data: Tensor, Y: Tensor, trainLen: int, errorLen: int):
    # compute MSE for the first errorLen time steps
    return sum( np.square( data[trainLen+1:trainLen+errorLen+1] -
        Y[0,0:errorLen] ) ) / errorLen


def whole(data: Tensor, Win: Tensor, W: Tensor, a: float, trainLen: int, testLen: int,
          initLen: int, reg: float):
    inSize = outSize = 1
    resSize = W.shape[0]
    X, Yt, x = harvest(data, Win, W, a, trainLen, initLen, inSize, resSize)
    Wout = train(X, Yt, reg, inSize, resSize)
    Y = generate(data, Win, W, Wout, x, a, trainLen, testLen, outSize)
    return Y, mse(data, Y, trainLen, 10)


SIZES = {"test": (20, 12, 5, 8), "bench": (1000, 200, 100, 100)}
"""trainLen, testLen, initLen, resSize (the script's: 2000, 2000, 100, 1000)."""


def _series(dtype: str, size: str) -> tuple:
    trainLen, testLen, _, resSize = SIZES[size]
    t = np.arange(trainLen + testLen + 2)
    data = (np.sin(0.3 * t) + 0.1 * np.random.default_rng(7).standard_normal(t.shape))
    Win, W = arrays(dtype, 8, (resSize, 2), (resSize, resSize), scale=1.0)
    W = W * (1.25 / np.max(np.abs(np.linalg.eigvals(W))))  # the script's spectral radius
    return data.astype(dtype), (Win * 0.5).astype(dtype), W.astype(dtype)


def harvest_args(dtype: str, size: str) -> tuple:
    trainLen, _, initLen, resSize = SIZES[size]
    data, Win, W = _series(dtype, size)
    return data, Win, W, 0.3, trainLen, initLen, 1, resSize


def train_args(dtype: str, size: str) -> tuple:
    X, Yt, _ = harvest(*harvest_args(dtype, size))
    return X, Yt, 1e-2, 1, SIZES[size][3]


def run_args(dtype: str, size: str) -> tuple:
    trainLen, testLen, _, _ = SIZES[size]
    data, Win, W = _series(dtype, size)
    _, _, x = harvest(*harvest_args(dtype, size))
    Wout = train(*train_args(dtype, size)).astype(dtype)
    return data, Win, W, Wout, x.astype(dtype), 0.3, trainLen, testLen, 1


def whole_args(dtype: str, size: str) -> tuple:
    trainLen, testLen, initLen, _ = SIZES[size]
    data, Win, W = _series(dtype, size)
    return data, Win, W, 0.3, trainLen, testLen, initLen, 1e-2


_SOLVED = (1e-5, 1e-5, 1e-7)
"""the finite differences of the readout: the solve amplifies a step's rounding (cond(X X^T +
reg I) about 6e3 at the test sizes)."""

CASES = {
    "harvest": Case(harvest, harvest_args, grad=True),
    "train": Case(train, train_args, grad=True, fd=_SOLVED),
    "train_inv": Case(train_inv, train_args, grad=True, fd=_SOLVED),
    "generate": Case(generate, run_args, grad=True),
    "predict": Case(predict, run_args, grad=True),
    "whole": Case(whole, whole_args, grad=True, fd=_SOLVED),
}
BENCH = "whole"
