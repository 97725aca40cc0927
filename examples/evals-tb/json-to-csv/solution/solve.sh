#!/bin/bash
# The reference solution (`tern eval --oracle`).
set -e
cd /app
python3 - <<'EOF'
import csv, json
users = sorted((u for u in json.load(open("users.json")) if u["active"]), key=lambda u: u["id"])
with open("users.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["id", "name", "email"])
    for u in users:
        w.writerow([u["id"], u["name"], u["email"]])
EOF
