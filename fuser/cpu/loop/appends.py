"""What a native loop's steps appended (or stored into dicts), handed back as the Python loop
would have: ``Appends`` is ``NativeLoop``'s part that rebuilds each appended list, and stores
each stored item, from the call's buffers."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from fuser.cpu.loop.body import PY_NUMBER_OPS
from ir.core import Value


class Appends:
    """``NativeLoop``'s appended lists (``LoopProgram.appends``)."""

    prog: Any
    buffer_at: Any

    def _append(self, trip: int, free: tuple, inits: tuple, bufs: list, lists: list,
                slots: dict[int, list[np.ndarray]]) -> None:
        """Append what each step appended, in step order, to the lists: the objects the Python
        loop would have appended (``LoopProgram.kept``), the same object wherever it appended
        the same one (a value from outside, a state carried into the next step's tuple); then
        store what each step stored into dicts, in step order."""
        prog = self.prog
        call = (trip, free, inits, bufs, slots, {})
        by_list: dict[int, list[list[Any]]] = {}
        list_of = {v: lists[k] for k, v in enumerate(prog.free_lists)}
        for lst, v in prog.appends:
            by_list.setdefault(id(list_of[lst]), [list_of[lst]]).append(self._steps(v, call))
        for target, *sequences in by_list.values():
            if len(sequences) == 1:
                target.extend(sequences[0])
            else:
                target.extend(itertools.chain.from_iterable(zip(*sequences)))
        stores = [(list_of[d], self._steps(key, call), self._steps(v, call))
                  for d, key, v in prog.stores]
        for t in range(trip):  # each step's stores in body order, as the Python loop's
            for target, keys, values in stores:
                target[keys[t]] = values[t]

    def _steps(self, v: Value, call: tuple) -> list[Any]:
        """``v``'s value at each step of the call (``call``: the trip count, the free values,
        the initial carried values, the buffers, the slot views handed out and the values
        found so far). A method, not a closure: a closure calling itself is a reference cycle
        that would keep the call's buffers from the workspace until the garbage collector
        runs."""
        trip, free, inits, bufs, slots, found = call
        if v in found:
            return found[v]
        prog = self.prog
        how, *args = prog.kept[v]
        if how == "made":
            out = self._slots(args[0], bufs, slots)
        elif how == "carried":
            j = args[0]
            source, k = prog.sources[j]
            if source == "made":
                out = [inits[j], *self._slots(k, bufs, slots)[:trip - 1]]
            elif source == "same":
                out = [inits[j]] * trip
            else:
                out = [inits[j]] + [free[k]] * (trip - 1)
        elif how == "free":
            out = [free[args[0]]] * trip
        elif how == "constant":
            out = [args[0]] * trip
        elif how == "counter":
            out = list(range(trip))
        elif how == "op":
            kind, a, b = args
            out = list(map(PY_NUMBER_OPS[kind], self._steps(a, call), self._steps(b, call)))
        elif how == "select":
            x, axis, idx = args
            out = [a[(slice(None),) * (axis % a.ndim) + (i,)]
                   for a, i in zip(self._steps(x, call), self._steps(idx, call))]
        else:  # a tuple
            items = [self._steps(item, call) for item in args[0]]
            out = list(zip(*items)) if items else [()] * trip
        found[v] = out
        return out

    def _slots(self, k: int, bufs: list, slots: dict[int, list[np.ndarray]]) -> list[np.ndarray]:
        """The views of made value k's slots, one object per step for every use."""
        at = self.buffer_at[k]
        if at not in slots:
            slots[at] = list(bufs[at])
        return slots[at]
