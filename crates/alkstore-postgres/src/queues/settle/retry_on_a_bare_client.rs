//! A retry on a bare client (`within` outside a transaction): its select
//! and its write are separate autocommits, and a job rescued and claimed
//! anew between them must keep its new claim.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alkstore_core::prelude::*;
use alkstore_core::{
    Job, JobClaimParams, JobRetryParams, JobState, ManualClock, NewJob, QueueOpts, RetryOutcome,
    Settle, Settled,
};
use futures_util::future::{BoxFuture, FutureExt};

use super::{retry_in, settle_all_in};
use crate::conn::{Exec, How, On, Params, Row};
use crate::{testing, PgEngine, PgOptions};

/// The application's bare client, with `between` run once right after
/// the statement `after` (as another worker's claim could land there).
struct Interleaved<'a> {
    client: &'a tokio_postgres::Client,
    after: &'a str,
    between: Mutex<Option<BoxFuture<'static, ()>>>,
}

impl Exec for Interleaved<'_> {
    fn fetch<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, alkstore_core::Result<Vec<Row>>> {
        async move {
            let rows = On::app(self.client, How::Prepared)
                .fetch(op, text, params)
                .await?;
            if text == self.after {
                let between = self.between.lock().expect("between").take();
                if let Some(between) = between {
                    between.await;
                }
            }
            Ok(rows)
        }
        .boxed()
    }

    fn exec<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, alkstore_core::Result<u64>> {
        async move {
            On::app(self.client, How::Prepared)
                .exec(op, text, params)
                .await
        }
        .boxed()
    }
}

/// An engine on `clock` with `n` jobs of queue `q` claimed by worker
/// `a` (a 30 s visibility timeout), a bare client of the application,
/// and what `drop_schema` needs.
async fn claimed_by_a(
    clock: &ManualClock,
    n: u32,
) -> (PgEngine, Vec<Job>, tokio_postgres::Client, String, String) {
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("test database");
    let schema = testing::unique_schema("bareretry");
    let opts = PgOptions::new(url.clone(), schema.clone()).clock(Arc::new(clock.clone()));
    let engine = PgEngine::open(opts).await.expect("open");
    let queue_opts = QueueOpts {
        visibility_timeout: Duration::from_secs(30),
        ..QueueOpts::default()
    };
    let jobs: Vec<NewJob> = (0..n)
        .map(|_| NewJob::new("q", b"x".to_vec()).with_queue_opts(queue_opts.clone()))
        .collect();
    engine.job_enqueue(jobs).await.expect("enqueue");
    let held = engine
        .job_claim(JobClaimParams::new("q", "a", n))
        .await
        .expect("claim");
    assert_eq!(held.len(), n as usize);
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("the application's connection");
    tokio::spawn(conn);
    (engine, held, client, url, schema)
}

/// Worker `b`'s claims of every job of `q`, once `a`'s claims expired.
fn b_claims_them(engine: &PgEngine, clock: &ManualClock, n: u32) -> BoxFuture<'static, ()> {
    let (engine, clock) = (engine.clone(), clock.clone());
    async move {
        clock.advance(Duration::from_secs(31));
        let got = engine
            .job_claim(JobClaimParams::new("q", "b", n))
            .await
            .expect("b's claim");
        assert_eq!(got.len(), n as usize, "b claims the rescued jobs");
    }
    .boxed()
}

/// Each of `jobs` is still b's, and b's ack works.
async fn still_bs(engine: &PgEngine, jobs: &[Job]) {
    let mut claims = Vec::new();
    for j in jobs {
        let info = engine.job_get(j.id).await.expect("get").expect("live");
        assert_eq!(
            (info.state, info.worker.as_deref(), info.attempts),
            (JobState::Processing, Some("b"), 2),
            "job {} keeps b's claim: {info:?}",
            j.id
        );
        claims.push(alkstore_core::Claim {
            id: j.id,
            worker: "b".into(),
            token: j.claim_token + 1,
        });
    }
    let acked = engine.job_ack(claims).await.expect("ack");
    assert!(acked.iter().all(|a| *a), "b's acks: {acked:?}");
}

fn retry(job: &Job) -> JobRetryParams {
    JobRetryParams::new(job.claim(), "late").delay(Duration::ZERO)
}

/// A lone retry: `retry_select` finds a's claim held, b claims the job
/// before `retry_update` runs, which then changes nothing.
#[tokio::test]
async fn a_lone_retry_leaves_a_claim_taken_since_its_select() {
    let clock = ManualClock::starting_now();
    let (engine, jobs, client, url, schema) = claimed_by_a(&clock, 1).await;
    let sql = &engine.inner.sql;
    let bare = Interleaved {
        client: &client,
        after: &sql.retry_select,
        between: Mutex::new(Some(b_claims_them(&engine, &clock, 1))),
    };
    let now = engine.now_override();
    let (outcome, _) = retry_in(&bare, sql, now, retry(&jobs[0]), None)
        .await
        .expect("retry");
    assert_eq!(outcome, RetryOutcome::NotHeld);
    still_bs(&engine, &jobs).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}

/// A batch of retries: `retry_many_select` finds a's claims held, b
/// claims the jobs before `retry_many_update` runs, which then changes
/// nothing.
#[tokio::test]
async fn a_batch_of_retries_leaves_claims_taken_since_its_select() {
    let clock = ManualClock::starting_now();
    let (engine, jobs, client, url, schema) = claimed_by_a(&clock, 2).await;
    let sql = &engine.inner.sql;
    let bare = Interleaved {
        client: &client,
        after: &sql.retry_many_select,
        between: Mutex::new(Some(b_claims_them(&engine, &clock, 2))),
    };
    let batch = jobs.iter().map(|j| Settle::Retry(retry(j))).collect();
    let now = engine.now_override();
    let settled = settle_all_in(&bare, sql, now, batch, None)
        .await
        .expect("settle");
    let outcomes: Vec<Settled> = settled.into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        outcomes,
        vec![Settled::Retried(RetryOutcome::NotHeld); 2],
        "neither claim is a's any more"
    );
    still_bs(&engine, &jobs).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}
