//! The engine-wide part of [`Engine`] for [`SqliteEngine`]: what it is,
//! closing it, wake hints, and the sweep's entry point (its work is in
//! `sweep.rs`).

use alkstore_core::queue::secs;
use alkstore_core::{Capabilities, Checked, Engine, EngineState, Result, SweepParams, SweepReport};

use crate::SqliteEngine;

impl Engine for SqliteEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "sqlite",
            multi_host: false,
            pushes_notifications: false,
        }
    }

    fn state(&self) -> &EngineState {
        &self.inner.state
    }

    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<alkstore_core::Wake> {
        self.wake_hints()
    }

    async fn sweep_if_due(&self, params: Checked<SweepParams>) -> Result<Option<SweepReport>> {
        self.sweep_if(params.every.map(secs)).await
    }
}
