"""Tests of the IR: values, nodes, graphs, types, text, the verifier and the op registry."""
