"""The `jitcache` command of a module installed with pip: runs the jitcache tool built with it
(jitcache/bin/jitcache, which setup.py puts there; the Debian packages ship /usr/bin/jitcache)."""

import os
import sys


def main():
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "jitcache")
    if not os.access(tool, os.X_OK):
        sys.exit(f"jitcache: the tool is not installed with this module ({tool})")
    os.execv(tool, [tool] + sys.argv[1:])
