"""argparse types shared by the `mbd-ros` commands: checked when the command line is parsed,
before any simulation or node starts (an unusable --plot path failed only after the whole run,
and a path without .png was written as another file than the one reported; an outside audit).
Standard library only."""
from __future__ import annotations

import argparse
import os
import stat

# ROS 2 on Linux: domain ids 0..232 give valid DDS ports (0..101 are the ones clear of the
# ephemeral port range; docs.ros.org "The ROS_DOMAIN_ID")
MAX_ROS_DOMAIN_ID = 232


def png_path(value):
    """--plot FILE.png: a path ending in .png whose directory exists, not a directory, FIFO or
    device (an existing PNG is overwritten)."""
    if not value.lower().endswith(".png"):
        raise argparse.ArgumentTypeError(f"{value!r}: the plot is a PNG: give a file name "
                                          "ending in .png")
    folder = os.path.dirname(os.path.abspath(value))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{value!r}: no directory {folder!r} to write it in")
    try:
        mode = os.stat(value).st_mode
    except FileNotFoundError:
        return value
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (FIFO, device?)"
        raise argparse.ArgumentTypeError(f"{value!r} is {kind}: give a .png file to write")
    return value


def ros_domain_id(value):
    """--domain-id: an integer ROS_DOMAIN_ID in 0..MAX_ROS_DOMAIN_ID."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if not 0 <= number <= MAX_ROS_DOMAIN_ID:
        raise argparse.ArgumentTypeError(f"{number} is not a ROS_DOMAIN_ID: 0 to "
                                          f"{MAX_ROS_DOMAIN_ID} (0 to 101 on most systems)")
    return number


def number_in(low, high, unit=""):
    """An argparse type: a finite float in [low, high] (the range the nodes' parameter
    declares, checked before any node starts)."""
    def parse(value):
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        if not low <= number <= high:    # (NaN fails both)
            raise argparse.ArgumentTypeError(f"{value} is outside {low:g} to {high:g}{unit}")
        return number
    return parse


def existing_file(value):
    """A path to an existing regular file (a URDF, a YAML), named in the error otherwise."""
    if not os.path.isfile(value):
        what = "is a directory" if os.path.isdir(value) else "does not exist"
        raise argparse.ArgumentTypeError(f"{value!r} {what}: give a file")
    return value
