#!/bin/sh
. ./lib/config.sh
echo "listening on $(port)"
