"""Helpers of the launcher that Horovod's scripts and tests import."""
