"""Hugging Face Spaces entry point: check the operator settings, build the UI and launch it."""

import sys

from mrtpo_viz.settings import SettingsError, check_serving
from mrtpo_viz.ui import launch

if __name__ == "__main__":
    try:
        check_serving()  # an invalid MRTPO_* variable stops the app here with one line that names it
    except SettingsError as e:
        sys.exit(f"error: {e}")
    launch()
