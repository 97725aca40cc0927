# Defaults for serve.sh; every one can be overridden from the environment.
BASE_PORT=8400
DEFAULT_PORT=$((BASE_PORT + 21))
LOG_LEVEL=info
