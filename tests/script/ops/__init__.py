"""Tests of the eager op library and its generated reference."""
