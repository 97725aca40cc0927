mod basics;
mod confinement;
mod git_config;
mod host_limits;
mod lifecycle;
mod python_sdk;
mod sandbox;
mod support;
