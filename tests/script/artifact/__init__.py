"""Tests of freeze, save and load."""
