//! The engine-wide part of [`Engine`] for [`PgEngine`]: what it is,
//! closing it, wake hints, and the maintenance entry points (their work is
//! in `sweep.rs`).

use alkstore_core::queue::secs;
use alkstore_core::{
    Capabilities, Checked, Engine, Limits, Result, SweepParams, SweepReport, WakeHub,
};

use crate::PgEngine;

impl Engine for PgEngine {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "postgres",
            multi_host: true,
            pushes_notifications: true,
        }
    }

    fn limits(&self) -> &Limits {
        &self.inner.opts.limits
    }

    fn wake_hub(&self) -> &WakeHub {
        &self.inner.wake
    }

    async fn flush(&self) {
        self.inner.announce.flush().await;
    }

    fn close(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.pool.close();
        if let Some(pool) = &self.inner.relaxed_pool {
            pool.close();
        }
    }

    fn is_closed(&self) -> bool {
        self.inner.closed.load(std::sync::atomic::Ordering::SeqCst)
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
