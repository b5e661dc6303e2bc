"""Tests of the profiler, strict compilation and explain."""
