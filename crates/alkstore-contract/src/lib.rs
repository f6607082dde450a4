//! The alkstore contract suite: every behaviour an engine promises, written
//! once and run against each engine.
//!
//! An engine's `tests/contract.rs` provides a factory that builds a fresh,
//! isolated [`Harness`] (its own file, schema or database, and a
//! `ManualClock`), then calls
//! [`contract_suite!`] once. The macro expands to one named `#[tokio::test]`
//! per contract row, grouped in modules by area (`queues`, …).
//!
//! ```ignore
//! async fn harness(name: &'static str) -> MyHarness { /* fresh store */ }
//! alkstore_contract::contract_suite!(crate::harness);
//! ```

use std::future::Future;

use alkstore_core::{ManualClock, NewJob, QueueAdmin, QueueEngine, Result};

pub mod queues;

/// One isolated store under test.
pub trait Harness: Send + Sync + Sized + 'static {
    /// The engine under test.
    type Engine: QueueEngine + QueueAdmin + Clone;

    /// The engine, opened with [`Harness::clock`] as its clock.
    fn engine(&self) -> &Self::Engine;

    /// The clock the engine reads; tests move it instead of sleeping.
    fn clock(&self) -> &ManualClock;

    /// On the engine's own driver, open a transaction, write a business row,
    /// enqueue `job` inside the same transaction, then commit or roll back.
    fn outbox_enqueue(&self, job: NewJob, commit: bool) -> impl Future<Output = Result<()>> + Send;

    /// Whether the engine relays another connection's commits as hints that
    /// name their queue (PostgreSQL's NOTIFY), announcing its listener with
    /// one [`Wake::All`](alkstore_core::Wake::All) when it is ready, rather
    /// than as bare "something changed" hints (SQLite's `data_version`).
    fn foreign_hints_name_queue(&self) -> bool {
        false
    }

    /// Drop whatever the harness created.
    fn teardown(self) -> impl Future<Output = ()> + Send;
}

/// Expand to one `#[tokio::test]` per contract row for the harness factory
/// `$factory` (an absolute path to `async fn(&'static str) -> impl Harness`;
/// the argument is the test's unique name).
#[macro_export]
macro_rules! contract_suite {
    ($factory:path) => {
        $crate::__contract_area!($factory; queues;
            enqueue_then_get,
            payload_bytes_are_kept_exactly,
            batch_enqueue_is_all_or_nothing,
            bad_input_is_rejected_and_writes_nothing,
            claim_order_is_priority_then_run_at_then_id,
            delayed_job_waits_until_due,
            claim_respects_limit_and_queue,
            ack_deletes_only_while_claim_is_valid,
            stale_ack_after_reclaim_returns_false,
            batch_ack_reports_each_claim,
            retry_backs_off_with_jitter,
            retry_on_last_attempt_goes_dead,
            fail_goes_straight_to_dead,
            heartbeat_extends_a_valid_claim,
            release_hands_job_back_without_using_an_attempt,
            cancel_pending_job_is_recorded,
            cancel_running_job_is_cooperative,
            claim_tokens_never_repeat,
            snooze_runs_later_without_using_an_attempt,
            nul_bytes_are_rejected,
            expired_pending_jobs_are_never_ready,
            every_delay_has_one_limit,
            sweep_rescues_expired_claims_on_every_queue,
            completed_jobs_are_kept_when_opted_in,
            every_attempt_error_is_kept,
            dead_letters_in_bounded_batches,
            crash_loop_ends_in_dead,
            expired_jobs_are_swept_to_dead,
            unique_key_allows_one_live_job,
            stats_count_each_state,
            dead_letters_list_requeue_purge,
            dead_letter_retention_sweep,
            outbox_commits_and_rolls_back_with_caller,
            concurrent_claimers_never_share_a_job,
            queue_list_names_queues,
            job_list_filters_and_pages,
            wake_hints_follow_commits,
            batch_stamps_every_option,
        );
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __contract_area {
    ($factory:path; $area:ident; $($name:ident),* $(,)?) => {
        mod $area {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let h = $factory(concat!(stringify!($area), "_", stringify!($name))).await;
                    $crate::$area::$name(&h).await;
                    $crate::Harness::teardown(h).await;
                }
            )*
        }
    };
}
