//! `tern trust`: trusts the project config of the working directory.

use crate::{error::ConfigFailure, workspace::Workspace};

/// Runs `tern trust`.
pub fn run(ws: &Workspace, out: &mut dyn std::io::Write) -> anyhow::Result<i32> {
    let Some(project) = ws.paths.project_dir.clone() else {
        anyhow::bail!(
            "no .tern/config.toml found from {} upward: nothing to trust",
            ws.cwd.display()
        );
    };
    let store = tern_config::TrustStore::for_paths(&ws.paths);
    let hash = store.trust(&project).map_err(ConfigFailure)?;
    writeln!(
        out,
        "trusted {} (config sha256 {}); any change to it needs `tern trust` again",
        project.join(tern_config::PROJECT_CONFIG).display(),
        &hash[..hash.len().min(12)]
    )?;
    Ok(0)
}
