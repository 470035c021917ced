"""Test support: builders for extensions and archives, an in-process CLI runner."""
