#!/bin/sh
[ "$(sh greet.sh tern)" = 'hello, tern' ] && [ "$(sh greet.sh)" = 'hello, world' ] && echo ok
