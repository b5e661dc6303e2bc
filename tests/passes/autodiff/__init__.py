"""Tests of autodiff: every VJP rule and program gradients against finite differences."""
