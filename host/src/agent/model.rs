//! The model adapter for a workspace's `[model]` config.

use std::sync::Arc;

use tern_model::{ModelAdapter, ResolvedModelConfig};

use crate::{error::UsageError, workspace::Workspace};

/// The adapter `[model]` selects, and the resolved settings it was built from. A provider that
/// cannot be chosen or a key that is missing is a usage error (exit 2), said before any server
/// starts.
pub fn adapter(ws: &Workspace) -> Result<(Arc<dyn ModelAdapter>, ResolvedModelConfig), UsageError> {
    let resolved = ResolvedModelConfig::resolve(&ws.config.model, &|k| ws.var(k))
        .map_err(|e| UsageError(e.to_string()))?;
    let adapter =
        tern_model::adapter_from_resolved(&resolved).map_err(|e| UsageError(e.to_string()))?;
    Ok((Arc::from(adapter), resolved))
}
