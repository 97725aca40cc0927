//! tern-sandbox: run a command under an OS sandbox, and make sure nothing it
//! starts outlives it.
//!
//! A model-written shell command is untrusted code. Rules on the command text
//! are a convenience; the wall is here, enforced by the kernel (issue 15):
//!
//! - **namespaces** — a fresh user, PID, mount and IPC namespace (and a network
//!   namespace when the network is off). The command is PID 2 under a small
//!   init of ours, with its own `/proc`: it cannot see, signal or read the
//!   environment of any process outside (the host's API key in
//!   `/proc/<pid>/environ`). When the init exits, the kernel kills everything
//!   left in the namespace, so `setsid sleep 1000 &` dies with the call.
//! - **a mount view** (issue 24) — the whole filesystem re-bound read-only,
//!   `nosuid` and `nodev` except the writable roots; a private `/tmp` and a
//!   minimal `/dev` (null, zero, full, random, urandom, a private `shm`) that
//!   die with the call; with the network off, `/run`, `/var/run` and
//!   `$XDG_RUNTIME_DIR` hidden, so host unix sockets are out of reach; the
//!   paths of file deny rules covered by an empty file (see `child/view.rs`).
//! - **read-only binds** — `.git` (or, with [`GitWrites::Objects`], its
//!   control entries), `.tern/` and every `protected` path stay read-only even
//!   inside a writable root.
//! - **Landlock** — writes only inside the writable roots and the private tmp.
//! - **seccomp** — no `mount`, no new namespaces, no kernel keyrings, no BPF,
//!   module loading or `io_uring`, so the command cannot undo the above; no
//!   `chmod`/`open`/`mknod` that sets the setuid or setgid bit.
//!
//! Every layer is probed at startup ([`Support::detect`]); a layer the kernel
//! lacks is reported once as a [`Degradation`] and the rest still apply —
//! never a silent fall back to nothing.
//!
//! ```no_run
//! use tern_sandbox::{Mode, Network, Policy, Sandbox, Session, Support};
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let support = Support::detect();
//! let policy = Policy::new(Mode::WorkspaceWrite, Network::Off, vec![std::env::current_dir()?]);
//! let sandbox = Sandbox::new(policy, &support)?;
//! for warning in sandbox.degradations() {
//!     eprintln!("sandbox: {warning}");
//! }
//! let status = sandbox.run_command(std::process::Command::new("make").arg("test"), Session::Inherit)?;
//! # Ok(()) }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod child;
mod git_guard;
mod landlock_rules;
mod policy;
mod sandbox;
mod seccomp;
mod support;
mod view_plan;

pub use child::Session;
pub use git_guard::GitGuard;
pub use policy::{GIT_CONTROL_ENTRIES, GitWrites, Mode, Network, Policy, builtin_protected};
pub use sandbox::{Degradation, Sandbox, abort};
pub use support::{Support, landlock_abi};

/// Why a sandbox could not be set up or a sandboxed command not started.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Building the Landlock ruleset failed (a path could not be opened, the
    /// kernel refused the ruleset).
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(String),
    /// A path in the policy cannot be used (e.g. contains a NUL byte).
    #[error("sandbox path {path}: {reason}")]
    Path { path: String, reason: String },
    /// The command could not be started under the sandbox.
    #[error("cannot start the sandboxed command: {0}")]
    Spawn(#[from] std::io::Error),
}
