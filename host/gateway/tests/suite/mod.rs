mod harness;

mod calls;
mod permissions;
mod safety;
