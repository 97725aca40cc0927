mod basics;
mod confinement;
mod host_limits;
mod lifecycle;
mod python_sdk;
mod sandbox;
mod support;
