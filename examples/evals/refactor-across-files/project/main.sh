#!/bin/sh
. ./lib.sh
greet_user "${1:-world}"
