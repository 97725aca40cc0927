#!/bin/sh
# Starts the status server.
. ./conf/defaults.sh
port="${PORT:-$DEFAULT_PORT}"
echo "listening on $port"
exec nc -l -p "$port"
