"""Tests of the optimization passes: FileCheck cases, cleanup, RNN and layout passes."""
