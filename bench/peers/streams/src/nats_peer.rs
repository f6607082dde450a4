//! NATS JetStream through `async-nats`.
//!
//! Each scenario creates its own stream (file storage, 1 replica, subjects
//! `sp<run>_<n>.>`) and deletes it at the end. Events go to the subject
//! `<prefix>.k<i%64>`.
//!
//! - publish: `jetstream.publish(subject, payload).await?.await?` — the
//!   second await waits for the stream's ack (the event is stored).
//! - batch: 100 publishes, then the 100 acks awaited (async publish, the
//!   client's documented fast path).
//! - batch from 4 tasks: each task sends its batches as above (100 async
//!   publishes, then their acks) on the one shared client.
//! - replay: an ordered pull consumer from the start (`DeliverPolicy::All`),
//!   the client's recommended way to read a stream in order; it pulls in
//!   batches of 500 (async-nats's ordered-consumer batch).
//! - live: an ordered pull consumer with `DeliverPolicy::New`, waiting;
//!   latency from the publish ack to the consumer receiving the message.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;

use crate::{finish, key, payload, seq_of, Counts, Reporter, Res, BATCH, PREFILL_BATCH, TASKS};

const R: Reporter = Reporter { peer: "nats", engine: "nats" };

struct Target {
    stream: stream::Stream,
    prefix: String,
}

impl Target {
    fn subject(&self, seq: u64) -> String {
        format!("{}.{}", self.prefix, key(seq))
    }
}

async fn stored(t: &mut Target) -> Res<u64> {
    Ok(t.stream.info().await?.state.messages)
}

async fn check(t: &mut Target, want: u64) -> Res<()> {
    let got = stored(t).await?;
    if got != want {
        return Err(format!("expected {want} messages, found {got}").into());
    }
    Ok(())
}

/// Publish `(seq, subject)` pairs: all of them, then await their acks.
async fn publish_acked(js: &jetstream::Context, events: impl Iterator<Item = (u64, String)>) -> Res<()> {
    let mut acks = Vec::new();
    for (seq, subject) in events {
        acks.push(js.publish(subject, payload(seq).into()).await?);
    }
    for ack in acks {
        ack.await?;
    }
    Ok(())
}

/// Publish events `0..n`: `batch` publishes, then their acks.
async fn publish_batched(js: &jetstream::Context, t: &Target, n: u64, batch: u64) -> Res<()> {
    let mut i = 0;
    while i < n {
        let end = (i + batch).min(n);
        publish_acked(js, (i..end).map(|seq| (seq, t.subject(seq)))).await?;
        i = end;
    }
    Ok(())
}

async fn publish_single_4tasks(js: &jetstream::Context, t: &mut Target, c: Counts) -> Res<()> {
    let per = c.single_per_task;
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|k| {
            let js = js.clone();
            let subjects: Vec<(u64, String)> = (k * per..(k + 1) * per).map(|s| (s, t.subject(s))).collect();
            tokio::spawn(async move {
                for (seq, subject) in subjects {
                    js.publish(subject, payload(seq).into()).await?.await?;
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let el = t0.elapsed();
    check(t, per * TASKS).await?;
    R.throughput("publish_single_4tasks", per * TASKS, el);
    Ok(())
}

async fn publish_batch_100(js: &jetstream::Context, t: &mut Target, c: Counts) -> Res<()> {
    let t0 = Instant::now();
    publish_batched(js, t, c.batch, BATCH).await?;
    let el = t0.elapsed();
    check(t, c.batch).await?;
    R.throughput("publish_batch_100", c.batch, el);
    Ok(())
}

async fn publish_batch_100_4tasks(js: &jetstream::Context, t: &mut Target, c: Counts) -> Res<()> {
    let n = c.batch;
    let batches = n.div_ceil(BATCH);
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|k| {
            let js = js.clone();
            let prefix = t.prefix.clone();
            tokio::spawn(async move {
                for b in (k..batches).step_by(TASKS as usize) {
                    let start = b * BATCH;
                    let batch = (start..(start + BATCH).min(n)).map(|seq| (seq, format!("{prefix}.{}", key(seq))));
                    publish_acked(&js, batch).await?;
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let el = t0.elapsed();
    check(t, n).await?;
    R.throughput("publish_batch_100_4tasks", n, el);
    Ok(())
}

async fn replay_1m(js: &jetstream::Context, t: &mut Target, c: Counts) -> Res<()> {
    let n = c.replay;
    eprintln!("stream-peers: nats: pre-filling {n} messages");
    publish_batched(js, t, n, PREFILL_BATCH).await?;
    check(t, n).await?;

    let t0 = Instant::now();
    let cons = t
        .stream
        .create_consumer(consumer::pull::OrderedConfig {
            deliver_policy: consumer::DeliverPolicy::All,
            ..Default::default()
        })
        .await?;
    let mut messages = cons.messages().await?;
    let mut got = 0u64;
    let mut bytes = 0usize;
    while got < n {
        let m = tokio::time::timeout(Duration::from_secs(30), messages.next())
            .await
            .map_err(|_| format!("replay stalled after {got} messages"))?
            .ok_or("consumer ended")??;
        bytes += m.payload.len();
        got += 1;
    }
    let el = t0.elapsed();
    drop(messages);
    eprintln!("stream-peers: nats: replayed {got} messages, {bytes} payload bytes");
    R.throughput("replay_1m", n, el);
    Ok(())
}

async fn live_latency(js: &jetstream::Context, t: &mut Target, c: Counts) -> Res<()> {
    let n = c.live;
    let cons = t
        .stream
        .create_consumer(consumer::pull::OrderedConfig {
            deliver_policy: consumer::DeliverPolicy::New,
            ..Default::default()
        })
        .await?;
    let mut messages = cons.messages().await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, Instant)>();
    let reader = tokio::spawn(async move {
        for _ in 0..n {
            let m = messages.next().await.ok_or("consumer ended")??;
            let at = Instant::now();
            let _ = tx.send((seq_of(&m.payload)?, at));
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    // Let the consumer's pull request reach the server before publishing.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut published = Vec::with_capacity(n as usize);
    for seq in 0..n {
        js.publish(t.subject(seq), payload(seq).into()).await?.await?;
        published.push(Instant::now());
        tokio::time::sleep(crate::LIVE_GAP).await;
    }
    let mut received = Vec::with_capacity(n as usize);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while (received.len() as u64) < n {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(r)) => received.push(r),
            _ => break,
        }
    }
    if reader.is_finished() {
        reader.await??;
    } else {
        reader.abort();
    }
    R.latency(&published, &received)
}

pub async fn run(scenarios: &[&'static str], c: Counts) -> Res<()> {
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "127.0.0.1:4222".to_string());
    let client = async_nats::connect(url.as_str()).await?;
    let js = jetstream::new(client.clone());
    let info = client.server_info();
    println!(
        "# nats-server {}: JetStream, file storage, 1 replica; a publish is acked once written to the stream's file store, not fsynced: the server fsyncs every sync_interval (default 2 min)",
        info.version
    );
    println!("# nats: async-nats, one connection; batch = {BATCH} async publishes then their acks (from {TASKS} tasks: one batch in flight per task); replay = ordered pull consumer (500 per pull); live = ordered pull consumer, DeliverPolicy::New");
    let run = crate::run_id();
    let mut failures = Vec::new();
    for (i, &s) in scenarios.iter().enumerate() {
        eprintln!("stream-peers: nats: running {s}");
        let name = format!("sp{run}_{i}");
        let stream = js
            .create_stream(stream::Config {
                name: name.clone(),
                subjects: vec![format!("{name}.>")],
                storage: stream::StorageType::File,
                num_replicas: 1,
                ..Default::default()
            })
            .await?;
        let mut t = Target { stream, prefix: name.clone() };
        let r = match s {
            "publish_single_4tasks" => publish_single_4tasks(&js, &mut t, c).await,
            "publish_batch_100" => publish_batch_100(&js, &mut t, c).await,
            "publish_batch_100_4tasks" => publish_batch_100_4tasks(&js, &mut t, c).await,
            "replay_1m" => replay_1m(&js, &mut t, c).await,
            "live_latency" => live_latency(&js, &mut t, c).await,
            _ => unreachable!(),
        };
        if let Err(e) = js.delete_stream(&name).await {
            eprintln!("stream-peers: nats: delete stream {name}: {e}");
        }
        if let Err(e) = r {
            failures.push((s, e.to_string()));
        }
    }
    finish("nats", failures)
}
