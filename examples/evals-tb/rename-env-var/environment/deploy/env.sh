export APP_PORT=80
