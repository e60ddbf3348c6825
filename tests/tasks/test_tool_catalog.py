"""The built-in tool catalogue is a consistent set of JSON schemas."""

import pytest

from mrtpo_viz.tasks.tool_catalog import CLOSE_TAG, OPEN_TAG, TOOLS

TYPES = {"string": str, "number": (int, float), "integer": int, "boolean": bool}


def test_twelve_tools_named_by_their_keys():
    assert len(TOOLS) == 12 and all(name == t["name"] for name, t in TOOLS.items())
    assert (OPEN_TAG, CLOSE_TAG) == ("<tool_call>", "</tool_call>")


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_schema_is_an_object_with_known_required_keys_and_typed_enums(name):
    params = TOOLS[name]["parameters"]
    assert params["type"] == "object" and TOOLS[name]["description"]
    assert set(params["required"]) <= set(params["properties"]) and params["required"]
    for prop in params["properties"].values():
        assert prop["type"] in TYPES and prop["description"]
        assert all(isinstance(v, TYPES[prop["type"]]) for v in prop.get("enum", []))
