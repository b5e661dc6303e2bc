"""fastrnns: PyTorch's RNN benchmark harness rebuilt for rnnscript.

    python -m benchmarks.fastrnns [--seqLength 100 --miniBatch 64 --rnns ... --peers --json PATH]

Times LSTM variants (numpy eager ``py``, the scripted ``script*`` family, PyTorch peers, the GEMM
floor) forward and backward, side by side in one process, after checking each against ``py``;
measures each one's first calls and the peak memory of a forward + backward.

- ``bench``: flags, the timing loop, the run;       ``runner``: the variant table;
- ``factory``: inputs and creators (``ModelDef``);  ``cells``: the layers in the language;
- ``eager``: numpy LSTM with a hand-written backward; ``torch_models``: the PyTorch peers;
- ``checks``: correctness against the reference;    ``report``: table, JSON, environment, plot;
- ``memory``: peak memory of a forward + backward;   ``firstcall``: first calls in fresh processes;
- ``results``: regenerates ``benchmarks/RESULTS.md`` (with ``benchmarks.respecialize``);
- ``paired``: two rows timed side by side, calls alternated (the ratio targets read it);
- ``targets``: the performance targets read off a ``results`` run.
"""
