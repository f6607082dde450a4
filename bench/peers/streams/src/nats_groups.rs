//! NATS JetStream pull consumers shared by several workers, for comparison
//! with `alk bench group`.
//!
//! - consume_Nw: 1,000,000 messages pre-filled (untimed); one durable pull
//!   consumer (explicit acks, ack wait 2 s, up to 20,000 unacked); N tasks
//!   of this process, each on its own connection, fetch batches of 500 and
//!   ack each message; timed from the workers' start until all are acked.
//! - failover: worker `a` fetches a batch and never acks (it died); worker
//!   `b` keeps fetching; time from a's fetch until b receives the batch
//!   again (the server redelivers after the 2 s ack wait).
//! - rebalance: a pull consumer has no partitions to hand over: a joining
//!   worker fetches at once. Time from b's start until its first message,
//!   while a consumes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;

use crate::{key, payload, Reporter, Res};

const R: Reporter = Reporter { peer: "nats", engine: "nats" };
const BATCH: usize = 500;

async fn prefill(js: &jetstream::Context, prefix: &str, n: u64) -> Res<()> {
    let mut acks = Vec::with_capacity(1000);
    let mut i = 0;
    while i < n {
        let end = (i + 1000).min(n);
        for seq in i..end {
            acks.push(js.publish(format!("{prefix}.{}", key(seq)), payload(seq).into()).await?);
        }
        for a in acks.drain(..) {
            a.await?;
        }
        i = end;
    }
    Ok(())
}

async fn durable(s: &stream::Stream) -> Res<consumer::PullConsumer> {
    Ok(s.create_consumer(consumer::pull::Config {
        durable_name: Some("g".into()),
        ack_policy: consumer::AckPolicy::Explicit,
        ack_wait: Duration::from_secs(2),
        max_ack_pending: 20_000,
        ..Default::default()
    })
    .await?)
}

/// A worker's own connection to the consumer.
async fn worker(url: &str, stream: &str) -> Res<consumer::PullConsumer> {
    let js = jetstream::new(async_nats::connect(url).await?);
    Ok(js.get_stream(stream).await?.get_consumer("g").await?)
}

async fn consume(url: &str, s: &stream::Stream, name: &str, workers: u64, n: u64) -> Res<()> {
    durable(s).await?;
    let acked = Arc::new(AtomicU64::new(0));
    let mut consumers = Vec::new();
    for _ in 0..workers {
        consumers.push(worker(url, name).await?);
    }
    let t0 = Instant::now();
    let tasks: Vec<_> = consumers
        .into_iter()
        .map(|c| {
            let acked = acked.clone();
            tokio::spawn(async move {
                while acked.load(Ordering::Relaxed) < n {
                    let mut batch = c
                        .fetch()
                        .max_messages(BATCH)
                        .expires(Duration::from_millis(100))
                        .messages()
                        .await?;
                    while let Some(m) = batch.next().await {
                        m?.ack().await?;
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    R.throughput(&format!("consume_{workers}w"), n, t0.elapsed());
    Ok(())
}

async fn failover(url: &str, s: &stream::Stream, name: &str) -> Res<()> {
    durable(s).await?;
    let a = worker(url, name).await?;
    let mut taken = 0;
    let mut batch = a.fetch().max_messages(BATCH).messages().await?;
    while let Some(m) = batch.next().await {
        m?;
        taken += 1;
    }
    let died = Instant::now();
    let b = worker(url, name).await?;
    let mut got = 0;
    while got < taken {
        let mut batch = b
            .fetch()
            .max_messages(BATCH)
            .expires(Duration::from_millis(500))
            .messages()
            .await?;
        while let Some(m) = batch.next().await {
            m?.ack().await?;
            got += 1;
        }
    }
    println!("bench peer=nats engine=nats scenario=failover ms={:.0}", died.elapsed().as_secs_f64() * 1e3);
    Ok(())
}

async fn rebalance(url: &str, s: &stream::Stream, name: &str) -> Res<()> {
    durable(s).await?;
    let stop = Arc::new(AtomicU64::new(0));
    let a = {
        let (c, stop) = (worker(url, name).await?, stop.clone());
        tokio::spawn(async move {
            while stop.load(Ordering::Relaxed) == 0 {
                let mut batch = c
                    .fetch()
                    .max_messages(BATCH)
                    .expires(Duration::from_millis(100))
                    .messages()
                    .await?;
                while let Some(m) = batch.next().await {
                    m?.ack().await?;
                }
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    let joined = Instant::now();
    let b = worker(url, name).await?;
    let mut first = b.fetch().max_messages(1).messages().await?;
    first.next().await.ok_or("no message")??.ack().await?;
    let took = joined.elapsed();
    stop.store(1, Ordering::Relaxed);
    a.await??;
    println!("bench peer=nats engine=nats scenario=rebalance ms={:.1}", took.as_secs_f64() * 1e3);
    Ok(())
}

pub async fn run(scenarios: &[&'static str], events: u64) -> Res<()> {
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "127.0.0.1:4222".to_string());
    let js = jetstream::new(async_nats::connect(url.as_str()).await?);
    println!("# nats groups: one durable pull consumer (explicit acks, ack wait 2 s), fetch {BATCH} per pull, one connection per worker task; failover = redelivery after the ack wait; no partitions, so a joining worker fetches at once");
    let run = crate::run_id();
    let mut failures = Vec::new();
    for (i, &s) in scenarios.iter().enumerate() {
        eprintln!("stream-peers: nats-groups: running {s}");
        let name = format!("spg{run}_{i}");
        let st = js
            .create_stream(stream::Config {
                name: name.clone(),
                subjects: vec![format!("{name}.>")],
                storage: stream::StorageType::File,
                num_replicas: 1,
                ..Default::default()
            })
            .await?;
        let filled = match s {
            "consume_1w" | "consume_2w" | "consume_4w" => prefill(&js, &name, events).await,
            // Exactly one batch: b can only receive what a took, redelivered.
            "failover" => prefill(&js, &name, BATCH as u64).await,
            _ => prefill(&js, &name, 50_000).await,
        };
        let r = match filled {
            Err(e) => Err(e),
            Ok(()) => match s {
                "consume_1w" => consume(&url, &st, &name, 1, events).await,
                "consume_2w" => consume(&url, &st, &name, 2, events).await,
                "consume_4w" => consume(&url, &st, &name, 4, events).await,
                "failover" => failover(&url, &st, &name).await,
                "rebalance" => rebalance(&url, &st, &name).await,
                _ => unreachable!(),
            },
        };
        let _ = js.delete_stream(&name).await;
        if let Err(e) = r {
            failures.push((s, e.to_string()));
        }
    }
    crate::finish("nats-groups", failures)
}
