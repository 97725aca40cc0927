mod basics;
mod confinement;
mod host_limits;
mod lifecycle;
mod support;
