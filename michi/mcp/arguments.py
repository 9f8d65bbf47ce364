"""Tool arguments taken exactly as their input schema types them, never coerced (ADR 0011).

The SDK validates a call's arguments in pydantic's lax mode, after "pre-parsing" strings that look like
JSON: `{"claim": "yes"}` claimed a task while `"off"` did not, `"if_version": true` checked version 1,
`"ttl": "60"` was a 60 s lease, a list given as the string '["a"]' was taken, and a description that
happened to read as JSON ('[1]') was refused. An agent that sends a wrong type has misread the schema:
it gets a usage error naming the argument and nothing is done, as the CLI refuses a bad option.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

_NAMES = {
    "string": "a string",
    "boolean": "a boolean (true or false)",
    "integer": "an integer",
    "number": "a number",
    "array": "an array",
    "null": "null",
}


# Arguments given in seconds: a wait or a claim's lease. The CLI's --wait and --ttl refuse more than ten
# years as their usage error; over MCP the same values reached the config and came back `bad_config`
# ("option --wait: lock_wait = 1e+308"), as if .michi.toml held them, or named the CLI's flag.
SECONDS = ("ttl", "wait")


def problem(name: str, value: Any, schema: dict[str, Any]) -> str | None:
    """What is wrong with `value` for the argument `name`, or None when its schema types it so."""
    if not fits(value, schema):
        return f"{name}: expected {_expected(schema)}, got {_got(value)}"
    if name in SECONDS and _number(value):
        from michi.config import MAX_TTL

        if not 0 <= value <= MAX_TTL:  # NaN too (`1e999` arrives as infinity)
            return f"{name}: expected a number of seconds from 0 to {MAX_TTL} (ten years), got {_got(value)}"
    lone = _lone_surrogate(value)
    if lone is not None:  # no task file may hold it (ADR 0006): named here, not a parse error (`wire`)
        return f"{name}: holds a lone surrogate ({lone}), which is no character: send text as UTF-8"
    return None


def _lone_surrogate(value: Any) -> str | None:
    """The escape of the first lone surrogate in a string argument (or a list of strings), else None."""
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str) and not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"\\u{ord(text[exc.start]):04x}"
    return None


def fits(value: Any, schema: dict[str, Any]) -> bool:
    if "anyOf" in schema:
        return any(fits(value, option) for option in schema["anyOf"])
    match schema.get("type"):
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "integer":  # JSON Schema's: a number without a fraction (1.0 too), never a boolean
            # An int is one as it is: a float of it would overflow for hundreds of digits.
            whole = isinstance(value, int) and not isinstance(value, bool)
            return whole or (isinstance(value, float) and value.is_integer())
        case "number":
            return _number(value)
        case "null":
            return value is None
        case "array":
            items = schema.get("items", {})
            return isinstance(value, list) and all(fits(item, items) for item in value)
        case _:
            return True  # a schema michi's tools do not use: the SDK's validation judges it


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _expected(schema: dict[str, Any]) -> str:
    options = schema.get("anyOf", [schema])
    names = []
    for option in options:
        name = _NAMES.get(option.get("type", ""), "a value")
        if option.get("type") == "array":
            name = f"an array of {_expected(option.get('items', {})).removeprefix('a ').removeprefix('an ')}s"
        names.append(name)
    return " or ".join(names)


def _got(value: Any) -> str:
    import json

    if value is None or isinstance(value, list | dict):
        return "null" if value is None else ("an array" if isinstance(value, list) else "an object")
    kind = "boolean" if isinstance(value, bool) else "string" if isinstance(value, str) else "number"
    text = json.dumps(value, ensure_ascii=False)
    return f"the {kind} {text if len(text) <= 40 else text[:37] + '...'}"


class AsSent(FuncMetadata):
    """The SDK's argument handling less its pre-parsing of strings as JSON: the arguments have been
    checked against the schema already (`problem`), and a string is a string."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data
