"""Hugging Face Spaces entry point: build the UI and launch it."""
from mrtpo_viz.ui import launch

if __name__ == "__main__":
    launch()
