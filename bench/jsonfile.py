"""A JSON file the bench wrote, or None when a run left none (or a torn one): the report scripts
show a missing run as '-' rather than failing the whole report."""
import json


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
