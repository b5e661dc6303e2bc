"""Tests of the script package, one folder per role (frontend, runtime, ops, artifact, tools)."""
