#!/bin/sh
. ./lib.sh
for name in ada grace; do
  greet_user "$name"
done
echo "2 users greeted"
