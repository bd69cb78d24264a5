//! `--resume ID`: the stored experiment, checked to be of the kind that is
//! resuming it and not complete, and its configuration read back.

use iolab_results::ExperimentKind;
use iolab_store::{ExperimentId, Status, Store};
use iolab_sys::UsageError;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ExperimentError;

/// A stored experiment to continue.
pub(super) struct Resumed<C> {
    pub id: ExperimentId,
    /// The kind's configuration.
    pub config: C,
    /// The whole stored configuration (other keys: sizing, prefetch list).
    pub stored: Value,
}

/// Experiment `id` if it is a `kind` experiment that can be resumed; the
/// refusal of another kind names the command that resumes it.
pub(super) fn load<C: DeserializeOwned>(
    store: &Store,
    id: ExperimentId,
    kind: &ExperimentKind,
    upgrade: fn(Value) -> Result<Value, serde_json::Error>,
) -> Result<Resumed<C>, ExperimentError> {
    let exp = store.experiment(id)?;
    if exp.kind != *kind {
        let how = exp
            .kind
            .resume_command()
            .map_or_else(|| "a newer iolab".to_string(), |c| format!("`{c}`"));
        return Err(UsageError::new(format!(
            "experiment {id} is a {} experiment, not a {kind}: resume it with {how}",
            exp.kind
        ))
        .into());
    }
    if exp.status == Status::Done {
        return Err(UsageError::new(format!(
            "experiment {id} is already complete: nothing to resume"
        ))
        .into());
    }
    let key = kind.config_key().ok_or_else(|| {
        UsageError::new(format!(
            "{kind} experiments cannot be resumed by this iolab"
        ))
    })?;
    let raw = exp.config.get(key).cloned().ok_or_else(|| {
        UsageError::new(format!(
            "experiment {id} has no stored `{key}` configuration: it cannot be resumed"
        ))
    })?;
    let config = upgrade(raw).and_then(serde_json::from_value).map_err(|e| {
        UsageError::new(format!(
            "experiment {id} was stored by another iolab version and cannot be resumed: {e}"
        ))
    })?;
    Ok(Resumed {
        id,
        config,
        stored: exp.config,
    })
}
