"""The test suite: one folder per layer (ir, passes, fuser, script, rnn) plus benchmarks, fuzzing,
regressions and the shared helpers and program fixtures."""
