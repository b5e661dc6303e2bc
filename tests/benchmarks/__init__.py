"""Tests of the benchmark harness at tiny sizes (structure only, no timing)."""
