"""Strictly validate the input schemas in a py_client.py report (read on stdin).

Each tool's inputSchema must be a valid JSON Schema 2020-12 document (checked
with the `jsonschema` package's metaschema validation) and portable: no
`null` in a `type`, no `default: null`, and only formats the 2020-12 spec
defines. Prints one line per problem and exits 1 if there is any.
"""

import json
import sys

from jsonschema import Draft202012Validator

STANDARD_FORMATS = {
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname",
    "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference",
    "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex",
}


def walk(node, path, problems):
    if isinstance(node, dict):
        t = node.get("type")
        if t == "null" or (isinstance(t, list) and "null" in t):
            problems.append(f"{path}: nullable type {t!r}")
        if "default" in node and node["default"] is None:
            problems.append(f"{path}: default null")
        fmt = node.get("format")
        if fmt is not None and fmt not in STANDARD_FORMATS:
            problems.append(f"{path}: non-standard format {fmt!r}")
        for key, value in node.items():
            walk(value, f"{path}/{key}", problems)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            walk(value, f"{path}/{i}", problems)


def main():
    report = json.load(sys.stdin)
    problems = []
    for tool in report["tools"]:
        schema = tool["inputSchema"]
        try:
            Draft202012Validator.check_schema(schema)
        except Exception as e:  # noqa: BLE001 - report any metaschema failure
            problems.append(f"{tool['name']}: invalid JSON Schema 2020-12: {e}")
        walk(schema, tool["name"], problems)
        # The schema must also accept a minimal valid call and reject a bad one.
        validator = Draft202012Validator(schema)
        if tool["name"] == "run":
            if list(validator.iter_errors({"command": "true"})):
                problems.append("run: rejects a minimal call")
            if not list(validator.iter_errors({"command": "true", "timeout_sec": None})):
                problems.append("run: accepts timeout_sec null")
    for p in problems:
        print(p)
    print(f"{len(report['tools'])} tool schemas checked, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
