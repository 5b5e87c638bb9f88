"""Tests of the kennel image (kennel/Dockerfile, forwarder.js, build.py)."""
