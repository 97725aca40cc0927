//! `/model NAME`: the rest of the run talks to another model of the same provider. The adapter
//! is rebuilt from the run's resolved `[model]` settings with only the name changed (same
//! endpoint, key, retries), so the engine stays free of any terminal and the next request is
//! the first to carry the new name. A name the catalog does not know is passed through: the
//! provider is the judge of which models it serves.

use std::sync::Arc;

use tern_protocol::Event;

use super::Engine;

/// Why the model cannot be changed.
#[derive(Debug, thiserror::Error)]
pub enum ModelSwapError {
    #[error("a model name is needed\nhint: /model NAME (e.g. /model claude-sonnet-4-5)")]
    Empty,
    #[error(
        "this run's model was given by its caller (a replay) and cannot be changed\nhint: start \
         tern with -m NAME instead"
    )]
    Fixed,
    #[error("cannot build an adapter for `{name}`: {reason}")]
    Adapter { name: String, reason: String },
}

/// What [`Engine::set_model`] changes, kept so a one-turn model (a custom command's `model:`)
/// can be taken back exactly — the window a local server reported included, which the
/// catalog could not give again.
pub(crate) struct ModelSnapshot {
    model: Arc<dyn tern_model::ModelAdapter>,
    resolved: Option<tern_model::ResolvedModelConfig>,
    price: Option<tern_protocol::Price>,
    window: Option<u64>,
}

impl Engine {
    /// The model as it is now, for [`Self::restore_model`].
    pub(crate) fn model_snapshot(&self) -> ModelSnapshot {
        ModelSnapshot {
            model: self.agent.model.clone(),
            resolved: self.resolved.clone(),
            price: self.price,
            window: self.conv.budget.limits().window,
        }
    }

    /// Back to the model of `snapshot` from the next request on.
    pub(crate) fn restore_model(&mut self, snapshot: ModelSnapshot) {
        let name = snapshot.model.name().to_string();
        self.agent.model = snapshot.model;
        self.resolved = snapshot.resolved;
        self.price = snapshot.price;
        self.conv.budget.restore_window(snapshot.window);
        self.bus.emit(Event::Notice {
            message: format!("model: {name} again (the command's turn is over)"),
        });
    }

    /// The model the next request goes to.
    pub fn model_name(&self) -> &str {
        self.agent.model.name()
    }

    /// Talks to `name` from the next request on. The price follows the model (unless
    /// `[model.price]` set one), and so does the context window when `[model]` did not set it
    /// and the catalog knows the new model; a notice records the change in the events.
    pub fn set_model(&mut self, name: &str) -> Result<(), ModelSwapError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(ModelSwapError::Empty);
        }
        let Some(resolved) = self.resolved.as_mut() else {
            return Err(ModelSwapError::Fixed);
        };
        let mut next = resolved.clone();
        next.model = name.to_string();
        let adapter =
            tern_model::adapter_from_resolved(&next).map_err(|e| ModelSwapError::Adapter {
                name: name.to_string(),
                reason: e.to_string(),
            })?;
        let configured_window = next.context_window.is_some();
        *resolved = next;
        self.agent.model = Arc::from(adapter);
        let known = tern_model::catalog::lookup(name);
        self.price = self.configured_price.or(known.and_then(|k| k.price));
        if !configured_window && let Some(k) = known {
            self.conv.budget.set_window(u64::from(k.context_window));
        }
        self.bus.emit(Event::Notice {
            message: format!("model: {name} (from the next request)"),
        });
        Ok(())
    }
}
