"""Tests of the fuser: group formation, the backends' kernels and their safety."""
