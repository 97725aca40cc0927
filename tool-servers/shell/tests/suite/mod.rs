mod basics;
mod confinement;
mod lifecycle;
mod support;
