#!/bin/sh
[ "$(sh main.sh tern)" = "Hello, tern!" ] || { echo "FAIL main.sh"; exit 1; }
[ "$(sh report.sh | tail -n 1)" = "2 users greeted" ] || { echo "FAIL report.sh"; exit 1; }
[ "$(sh report.sh | head -n 1)" = "Hello, ada!" ] || { echo "FAIL report.sh"; exit 1; }
echo "all passed"
