"""Test package (a package so that spawned ranks can import ``tests.launch_targets``)."""
