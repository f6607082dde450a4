//! The wrapper, checked against a driver that records what reaches it: bad
//! input and empty batches never do, and the wrapper (not the driver) sends
//! the wake hints.

use crate::queue::JobFailParams;
use crate::queue::JobSnoozeParams;
use std::sync::Mutex;

// Not `QueueDriver`: its methods share the public traits' names, so the
// calls below resolve to the wrapper. The impl names it in full.
use crate::queue::{
    DeadCountParams, DeadPurgeParams, DeadRequeueParams, EnqueuedClaimed, JobAckParams,
    JobCancelParams, JobCancelRequestsParams, JobEnqueueClaimedParams, JobEnqueueParams,
    JobGetParams, JobHeartbeatParams, JobReleaseParams, JobSettleParams, JobUnclaimParams,
    QueuePauseParams, QueueStatsParams, QueueThroughput, QueueThroughputParams, THROUGHPUT_HISTORY,
};
use crate::{
    CancelOutcome, Capabilities, Checked, Claim, DeadListParams, DeadSelect, Engine, EngineState,
    Enqueued, ErrorKind, Job, JobClaimParams, JobInfo, JobListParams, JobRetryParams, NewJob,
    QueueAdmin, QueueEngine, QueueStats, Result, RetryOutcome, Settled, Settlement, SweepParams,
    SweepReport, Wake, Writes,
};
use std::time::Duration;

/// A driver with no database: it records each call that reaches it and
/// answers with fixed outcomes.
#[derive(Debug, Default)]
struct Recorder {
    calls: Mutex<Vec<&'static str>>,
    state: EngineState,
    /// What `job_settle` answers.
    settlement: Settlement,
}

impl Recorder {
    fn reached(&self, call: &'static str) {
        self.calls.lock().expect("calls").push(call);
    }

    fn calls(&self) -> Vec<&'static str> {
        self.calls.lock().expect("calls").clone()
    }
}

impl Engine for Recorder {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: "recorder",
            multi_host: false,
            pushes_notifications: false,
        }
    }

    fn state(&self) -> &EngineState {
        &self.state
    }

    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<Wake> {
        self.state.wake_hub().subscribe()
    }

    async fn sweep_if_due(&self, _: Checked<SweepParams>) -> Result<Option<SweepReport>> {
        self.reached("sweep");
        Ok(Some(SweepReport {
            rescued: 1,
            ..SweepReport::default()
        }))
    }
}

impl crate::TxConn for Recorder {
    type Conn<'c> = ();
}

impl crate::Drive<JobEnqueueParams> for Recorder {
    async fn drive(&self, _: crate::At<()>, p: Checked<JobEnqueueParams>) -> Result<Vec<Enqueued>> {
        self.reached("job_enqueue");
        Ok(p.jobs.iter().map(|_| Enqueued::Inserted(1)).collect())
    }
}

impl crate::Drive<JobAckParams> for Recorder {
    async fn drive(&self, _: crate::At<()>, p: Checked<JobAckParams>) -> Result<Vec<bool>> {
        self.reached("job_ack");
        Ok(vec![true; p.claims.len()])
    }
}

impl crate::Drive<JobSettleParams> for Recorder {
    async fn drive(&self, _: crate::At<()>, _: Checked<JobSettleParams>) -> Result<Settlement> {
        self.reached("job_settle");
        Ok(self.settlement.clone())
    }
}

impl crate::queue::QueueDriver for Recorder {
    async fn job_enqueue_claimed(
        &self,
        _: Checked<JobEnqueueClaimedParams>,
    ) -> Result<EnqueuedClaimed> {
        self.reached("job_enqueue_claimed");
        Ok(EnqueuedClaimed {
            enqueued: Enqueued::Inserted(1),
            claimed: None,
        })
    }

    async fn job_claim(&self, _: Checked<JobClaimParams>) -> Result<Vec<Job>> {
        self.reached("job_claim");
        Ok(Vec::new())
    }

    async fn job_heartbeat(&self, _: Checked<JobHeartbeatParams>) -> Result<Option<i64>> {
        self.reached("job_heartbeat");
        Ok(None)
    }

    async fn job_release(&self, _: Checked<JobReleaseParams>) -> Result<bool> {
        self.reached("job_release");
        Ok(true)
    }

    async fn job_cancel_requests(&self, _: Checked<JobCancelRequestsParams>) -> Result<Vec<i64>> {
        self.reached("job_cancel_requests");
        Ok(Vec::new())
    }

    async fn job_get(&self, _: Checked<JobGetParams>) -> Result<Option<JobInfo>> {
        self.reached("job_get");
        Ok(None)
    }

    async fn job_list(&self, _: Checked<JobListParams>) -> Result<Vec<JobInfo>> {
        self.reached("job_list");
        Ok(Vec::new())
    }

    async fn job_cancel(&self, _: Checked<JobCancelParams>) -> Result<CancelOutcome> {
        self.reached("job_cancel");
        Ok(CancelOutcome::NotFound)
    }

    async fn job_unclaim(&self, _: Checked<JobUnclaimParams>) -> Result<bool> {
        self.reached("job_unclaim");
        Ok(false)
    }

    async fn job_run_now(&self, _: Checked<crate::queue::JobRunNowParams>) -> Result<u64> {
        self.reached("job_run_now");
        Ok(0)
    }

    async fn queue_depth_history(
        &self,
        _: Checked<crate::queue::QueueDepthParams>,
    ) -> Result<Vec<crate::queue::QueueDepthSample>> {
        self.reached("queue_depth_history");
        Ok(Vec::new())
    }

    async fn job_delete(&self, _: Checked<crate::queue::JobDeleteParams>) -> Result<u64> {
        self.reached("job_delete");
        Ok(0)
    }

    async fn queue_stats(&self, _: Checked<QueueStatsParams>) -> Result<QueueStats> {
        self.reached("queue_stats");
        Ok(QueueStats::default())
    }

    async fn queue_throughput(&self, _: Checked<QueueThroughputParams>) -> Result<QueueThroughput> {
        self.reached("queue_throughput");
        Ok(QueueThroughput::default())
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        self.reached("queue_list");
        Ok(Vec::new())
    }

    async fn queue_stats_all(&self) -> Result<Vec<QueueStats>> {
        self.reached("queue_stats_all");
        Ok(Vec::new())
    }

    async fn queue_set_paused(
        &self,
        _: Checked<QueuePauseParams>,
        _: crate::PauseState,
    ) -> Result<bool> {
        self.reached("queue_set_paused");
        Ok(false)
    }

    async fn queue_paused(&self) -> Result<Vec<String>> {
        self.reached("queue_paused");
        Ok(Vec::new())
    }

    async fn dead_list(&self, _: Checked<DeadListParams>) -> Result<Vec<JobInfo>> {
        self.reached("dead_list");
        Ok(Vec::new())
    }

    async fn dead_requeue(&self, _: Checked<DeadRequeueParams>) -> Result<u64> {
        self.reached("dead_requeue");
        Ok(2)
    }

    async fn dead_purge(&self, _: Checked<DeadPurgeParams>) -> Result<u64> {
        self.reached("dead_purge");
        Ok(0)
    }

    async fn dead_count(&self, _: Checked<DeadCountParams>) -> Result<u64> {
        self.reached("dead_count");
        Ok(0)
    }
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn claim() -> Claim {
    Claim {
        id: 1,
        worker: "w".into(),
        token: 1,
    }
}

/// Drain every hint sent so far.
fn hints(rx: &mut tokio::sync::broadcast::Receiver<Wake>) -> Vec<Wake> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

#[test]
fn bad_input_never_reaches_the_driver() {
    let d = Recorder::default();
    run(async {
        let errs = [
            d.job_claim(JobClaimParams::new("q", "w", 0)).await,
            d.job_claim(JobClaimParams::new("", "w", 1)).await,
        ];
        for e in errs {
            assert_eq!(e.expect_err("invalid").kind(), ErrorKind::InvalidInput);
        }
        let e = d.job_enqueue(vec![NewJob::new("", b"x".to_vec())]).await;
        assert_eq!(e.expect_err("empty queue").kind(), ErrorKind::InvalidInput);
        let mut bad = claim();
        bad.worker = String::new();
        assert!(d.job_ack(vec![claim(), bad.clone()]).await.is_err());
        assert!(d
            .job_fail(JobFailParams::new(bad.clone(), "e".to_string()))
            .await
            .is_err());
        assert!(d.queue_stats("a\0b").await.is_err());
        for window in [Duration::ZERO, THROUGHPUT_HISTORY + Duration::from_secs(1)] {
            let e = d
                .queue_throughput(QueueThroughputParams::every_queue(window))
                .await;
            assert_eq!(e.expect_err("bad window").kind(), ErrorKind::InvalidInput);
        }
        let e = d
            .queue_throughput(QueueThroughputParams::queue("", Duration::from_secs(60)))
            .await;
        assert_eq!(e.expect_err("bad queue").kind(), ErrorKind::InvalidInput);
        assert!(d.sweep_due(std::time::Duration::MAX).await.is_err());
    });
    assert_eq!(d.calls(), Vec::<&str>::new(), "nothing reached the driver");
}

#[test]
fn empty_batches_never_reach_the_driver() {
    let d = Recorder::default();
    run(async {
        assert!(d.job_enqueue(Vec::new()).await.expect("ok").is_empty());
        assert!(d.job_ack(Vec::new()).await.expect("ok").is_empty());
        assert!(d.job_settle(Vec::new()).await.expect("ok").is_empty());
        assert!(d
            .job_cancel_requests(Vec::new())
            .await
            .expect("ok")
            .is_empty());
    });
    assert_eq!(d.calls(), Vec::<&str>::new());
}

#[test]
fn the_wrapper_sends_the_hints() {
    let d = Recorder {
        settlement: Settlement {
            outcomes: vec![Settled::Retried(RetryOutcome::Scheduled(0))],
            claimable_now: true,
        },
        ..Recorder::default()
    };
    let mut rx = d.wake_subscribe();
    run(async {
        d.job_enqueue(vec![
            NewJob::new("a", b"1".to_vec()),
            NewJob::new("b", b"2".to_vec()),
            NewJob::new("a", b"3".to_vec()),
        ])
        .await
        .expect("enqueue");
        let mut got = hints(&mut rx);
        got.sort_by_key(|w| format!("{w:?}"));
        assert_eq!(got, vec![Wake::Queue("a".into()), Wake::Queue("b".into())]);

        // A retry due now (as the driver reports), a release, a requeue and
        // a sweep that rescued claims each wake this process's workers.
        let retried = d
            .job_retry(JobRetryParams {
                claim: claim(),
                error: "e".into(),
                delay: None,
            })
            .await
            .expect("retry");
        assert_eq!(retried, RetryOutcome::Scheduled(0));
        assert_eq!(hints(&mut rx), vec![Wake::All], "retry due now");
        assert!(d.job_release(claim()).await.expect("release"));
        assert_eq!(hints(&mut rx), vec![Wake::All], "release");
        assert_eq!(d.dead_requeue(DeadSelect::queue("a")).await.expect("n"), 2);
        assert_eq!(hints(&mut rx), vec![Wake::All], "requeue");
        assert_eq!(d.sweep().await.expect("sweep").rescued, 1);
        assert_eq!(hints(&mut rx), vec![Wake::All], "sweep");

        // What makes nothing claimable sends nothing.
        assert!(!d.job_unclaim(7).await.expect("unclaim"));
        d.job_claim(JobClaimParams::new("a", "w", 1))
            .await
            .expect("claim");
        assert_eq!(hints(&mut rx), Vec::<Wake>::new());
    });
    assert_eq!(
        d.calls(),
        [
            "job_enqueue",
            "job_settle",
            "job_release",
            "dead_requeue",
            "sweep",
            "job_unclaim",
            "job_claim"
        ]
    );
}

#[test]
fn a_single_settle_answered_with_another_kind_is_an_error() {
    let d = Recorder {
        settlement: Settlement {
            outcomes: vec![Settled::Failed(true)],
            claimable_now: false,
        },
        ..Recorder::default()
    };
    let got = run(d.job_snooze(JobSnoozeParams::new(claim(), std::time::Duration::ZERO)));
    assert_eq!(got.expect_err("mismatch").kind(), ErrorKind::Database);
}

#[test]
fn calls_after_close_never_reach_the_driver() {
    let d = Recorder::default();
    d.close();
    run(async {
        let e = d.job_claim(JobClaimParams::new("q", "w", 1)).await;
        assert_eq!(e.expect_err("closed").kind(), ErrorKind::Closed);
        assert_eq!(
            d.sweep().await.expect_err("closed").kind(),
            ErrorKind::Closed
        );
    });
    assert_eq!(d.calls(), Vec::<&str>::new());
}
