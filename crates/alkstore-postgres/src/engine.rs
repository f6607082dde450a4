//! The engine-wide part of [`Engine`] for [`PgEngine`]: what it is,
//! closing it, wake hints, and the maintenance entry points (their work is
//! in `sweep.rs`).

use alkstore_core::queue::secs;
use alkstore_core::{Capabilities, Checked, Engine, EngineState, Result, SweepParams, SweepReport};

use crate::PgEngine;

impl Engine for PgEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "postgres",
            multi_host: true,
            pushes_notifications: true,
        }
    }

    fn state(&self) -> &EngineState {
        &self.inner.state
    }

    async fn flush(&self) {
        self.inner.announce.flush().await;
    }

    fn close(&self) {
        self.inner.state.mark_closed();
        self.inner.pool.close();
    }

    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<alkstore_core::Wake> {
        self.wake_hints()
    }

    async fn sweep_if_due(&self, params: Checked<SweepParams>) -> Result<Option<SweepReport>> {
        self.sweep_if(params.every.map(secs)).await
    }

    async fn reclaim(&self) -> Result<u64> {
        self.vacuum_job_table_if_bloated().await
    }
}
