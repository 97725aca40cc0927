"""An MCP server (official Python SDK) with hundreds of tools, for the deferred-tools tests.

Usage: many_tools.py [COUNT]. Tool names are `<domain>_<action>` with descriptions written
as a real server's would be; `weather_forecast` is always among them and answers with a
forecast that names the city it was asked for. Logs go to stderr.
"""

import sys

from mcp.server import MCPServer

DOMAINS = [
    ("weather", "the weather service", "city"),
    ("calendar", "the team calendar", "title"),
    ("crm", "the customer database", "customer"),
    ("billing", "the billing system", "invoice"),
    ("tickets", "the support ticket tracker", "ticket"),
    ("wiki", "the internal wiki", "page"),
    ("deploy", "the deployment pipeline", "service"),
    ("metrics", "the metrics store", "metric"),
    ("storage", "the object storage", "bucket"),
    ("chat", "the team chat", "channel"),
    ("hr", "the HR system", "employee"),
    ("inventory", "the warehouse inventory", "sku"),
    ("maps", "the maps service", "address"),
    ("search", "the document search index", "query"),
    ("email", "the mail server", "mailbox"),
]
ACTIONS = [
    ("forecast", "Get the daily forecast from"),
    ("list", "List the items of"),
    ("get", "Get one item from"),
    ("create", "Create an item in"),
    ("update", "Update an item in"),
    ("delete", "Delete an item from"),
    ("search", "Search"),
    ("export", "Export data from"),
    ("import", "Import data into"),
    ("stats", "Compute statistics over"),
    ("history", "Show the change history of"),
    ("alerts", "List the alerts raised by"),
    ("subscribe", "Subscribe to changes in"),
    ("archive", "Archive old items of"),
    ("validate", "Validate the configuration of"),
    ("sync", "Synchronise"),
    ("backup", "Back up"),
    ("restore", "Restore a backup of"),
    ("audit", "Show the audit log of"),
    ("permissions", "Show who may access"),
    ("tag", "Tag items in"),
]

count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
server = MCPServer("many-tools")


def make(domain, action, arg):
    def tool(**kwargs) -> str:
        value = kwargs.get(arg, "")
        if domain == "weather" and action == "forecast":
            return f"Forecast for {value}: sunny, 21 degrees."
        return f"{domain}_{action} done for {value}"

    return tool


made = 0
for action, verb in ACTIONS:
    for domain, system, arg in DOMAINS:
        if made >= count:
            break
        fn = make(domain, action, arg)
        # The schema comes from the signature: give the function one of its own.
        ns = {}
        exec(
            f"def {domain}_{action}({arg}: str, limit: int = 10) -> str:\n"
            f"    return impl({arg}={arg}, limit=limit)\n",
            {"impl": fn},
            ns,
        )
        server.add_tool(
            ns[f"{domain}_{action}"],
            name=f"{domain}_{action}",
            description=f"{verb} {system}. Pass the {arg} to act on; `limit` caps the results.",
        )
        made += 1

print(f"many-tools: {made} tools", file=sys.stderr)

if __name__ == "__main__":
    server.run("stdio")
