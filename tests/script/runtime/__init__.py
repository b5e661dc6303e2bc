"""Tests of the runtime: the executor, modules, threads, memory and the sanitizer."""
