"""Imported only by the run fork server's preload in tests/test_run_launcher.py: a run that finds it in
sys.modules was forked from the warm server, not started fresh."""

LOADED = True
