"""Tests of the frontend: the language compiles and computes what Python computes."""
