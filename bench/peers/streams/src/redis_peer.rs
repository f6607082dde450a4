//! Redis Streams through the `redis` crate (tokio, multiplexed connection).
//!
//! The server at REDIS_URL (default redis://127.0.0.1:6379/) is used as it
//! runs; its persistence settings are printed, not changed.
//!
//! - publish: `XADD key * k<i%64> <payload>`; the 4 tasks share one
//!   multiplexed connection (the crate's recommended way: it pipelines
//!   concurrent requests on one socket).
//! - batch: a pipeline of 100 XADDs, one round trip.
//! - batch from 4 tasks: each task sends its batches as above, awaiting each
//!   pipeline's replies before the next, on clones of the one multiplexed
//!   connection (up to 4 pipelines in flight on its socket).
//! - replay: `XRANGE key <start> + COUNT PAGE` from the beginning, the
//!   next start being the exclusive `(<last id>`.
//! - live: `XREAD BLOCK ... STREAMS key $` on its own connection (a blocking
//!   read would stall every other request on a multiplexed one), then from
//!   the last id seen.
//!
//! Each scenario uses its own stream key, deleted at the end.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client};

use crate::{finish, key, payload, seq_of, Counts, Reporter, Res, BATCH, PREFILL_BATCH, TASKS};

/// Entries per XRANGE call.
const PAGE: usize = 1000;

const R: Reporter = Reporter { peer: "redis", engine: "redis" };

/// XRANGE reply: [(id, [field, value, ...])].
type Entries = Vec<(String, Vec<Vec<u8>>)>;
/// XREAD reply: [(stream key, entries)], nil on timeout.
type ReadReply = Option<Vec<(String, Entries)>>;

async fn connect(client: &Client) -> Res<MultiplexedConnection> {
    // No response timeout: the crate's default (500 ms) is meant for
    // interactive use and would cut a long pipeline or a blocking read.
    let cfg = AsyncConnectionConfig::new().set_response_timeout(None);
    Ok(client.get_multiplexed_async_connection_with_config(&cfg).await?)
}

fn xadd(seq: u64, stream: &str) -> redis::Cmd {
    let mut c = redis::cmd("XADD");
    c.arg(stream).arg("*").arg(key(seq)).arg(payload(seq));
    c
}

async fn xlen(con: &mut MultiplexedConnection, stream: &str) -> Res<u64> {
    Ok(redis::cmd("XLEN").arg(stream).query_async::<u64>(con).await?)
}

async fn check(con: &mut MultiplexedConnection, stream: &str, want: u64) -> Res<()> {
    let got = xlen(con, stream).await?;
    if got != want {
        return Err(format!("expected {want} entries, found {got}").into());
    }
    Ok(())
}

/// XADD events `start..end` in one pipeline.
async fn pipeline(con: &mut MultiplexedConnection, stream: &str, start: u64, end: u64) -> Res<()> {
    let mut p = redis::pipe();
    for seq in start..end {
        p.add_command(xadd(seq, stream));
    }
    let ids: Vec<String> = p.query_async(con).await?;
    if ids.len() as u64 != end - start {
        return Err(format!("pipeline returned {} ids for {} XADDs", ids.len(), end - start).into());
    }
    Ok(())
}

async fn publish_batched(
    con: &mut MultiplexedConnection,
    stream: &str,
    n: u64,
    batch: u64,
) -> Res<()> {
    let mut i = 0;
    while i < n {
        let end = (i + batch).min(n);
        pipeline(con, stream, i, end).await?;
        i = end;
    }
    Ok(())
}

async fn publish_single_4tasks(con: &MultiplexedConnection, stream: &str, c: Counts) -> Res<()> {
    let per = c.single_per_task;
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let mut con = con.clone();
            let stream = stream.to_string();
            tokio::spawn(async move {
                for seq in t * per..(t + 1) * per {
                    xadd(seq, &stream).query_async::<String>(&mut con).await?;
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    let el = t0.elapsed();
    check(&mut con.clone(), stream, per * TASKS).await?;
    R.throughput("publish_single_4tasks", per * TASKS, el);
    Ok(())
}

async fn publish_batch_100(con: &MultiplexedConnection, stream: &str, c: Counts) -> Res<()> {
    let mut con = con.clone();
    let t0 = Instant::now();
    publish_batched(&mut con, stream, c.batch, BATCH).await?;
    let el = t0.elapsed();
    check(&mut con, stream, c.batch).await?;
    R.throughput("publish_batch_100", c.batch, el);
    Ok(())
}

async fn publish_batch_100_4tasks(con: &MultiplexedConnection, stream: &str, c: Counts) -> Res<()> {
    let n = c.batch;
    let batches = n.div_ceil(BATCH);
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let mut con = con.clone();
            let stream = stream.to_string();
            tokio::spawn(async move {
                for b in (t..batches).step_by(TASKS as usize) {
                    let start = b * BATCH;
                    pipeline(&mut con, &stream, start, (start + BATCH).min(n)).await?;
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    let el = t0.elapsed();
    check(&mut con.clone(), stream, n).await?;
    R.throughput("publish_batch_100_4tasks", n, el);
    Ok(())
}

async fn replay_1m(con: &MultiplexedConnection, stream: &str, c: Counts) -> Res<()> {
    let mut con = con.clone();
    let n = c.replay;
    eprintln!("stream-peers: redis: pre-filling {n} entries");
    publish_batched(&mut con, stream, n, PREFILL_BATCH).await?;

    let t0 = Instant::now();
    let mut start = "-".to_string();
    let mut got = 0u64;
    let mut bytes = 0usize;
    loop {
        let page: Entries = redis::cmd("XRANGE")
            .arg(stream)
            .arg(&start)
            .arg("+")
            .arg("COUNT")
            .arg(PAGE)
            .query_async(&mut con)
            .await?;
        let Some((last, _)) = page.last() else { break };
        start = format!("({last}");
        got += page.len() as u64;
        bytes += page.iter().map(|(_, f)| f.iter().map(Vec::len).sum::<usize>()).sum::<usize>();
        if page.len() < PAGE {
            break;
        }
    }
    let el = t0.elapsed();
    if got != n {
        return Err(format!("replayed {got} of {n} entries").into());
    }
    eprintln!("stream-peers: redis: replayed {got} entries, {bytes} field+value bytes");
    R.throughput("replay_1m", n, el);
    Ok(())
}

async fn live_latency(client: &Client, con: &MultiplexedConnection, stream: &str, c: Counts) -> Res<()> {
    let n = c.live;
    let mut sub = connect(client).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, Instant)>();
    let sub_stream = stream.to_string();
    let reader = tokio::spawn(async move {
        let mut last = "$".to_string();
        let mut seen = 0u64;
        while seen < n {
            let reply: ReadReply = redis::cmd("XREAD")
                .arg("BLOCK")
                .arg(1000)
                .arg("STREAMS")
                .arg(&sub_stream)
                .arg(&last)
                .query_async(&mut sub)
                .await?;
            let at = Instant::now();
            for (_, entries) in reply.unwrap_or_default() {
                for (id, fields) in entries {
                    let value = fields.get(1).ok_or("entry without a value")?;
                    let _ = tx.send((seq_of(value)?, at));
                    last = id;
                    seen += 1;
                }
            }
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    // Let the first XREAD (from `$`) reach the server before publishing.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut con = con.clone();
    let mut published = Vec::with_capacity(n as usize);
    for seq in 0..n {
        xadd(seq, stream).query_async::<String>(&mut con).await?;
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

async fn print_settings(con: &mut MultiplexedConnection) -> Res<()> {
    let info: String = redis::cmd("INFO").arg("server").query_async(con).await?;
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_string();
    let get = |name: &'static str| {
        let mut con = con.clone();
        async move {
            let kv: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query_async(&mut con).await?;
            Ok::<_, redis::RedisError>(kv.get(1).cloned().unwrap_or_default())
        }
    };
    let save = get("save").await?;
    let aof = get("appendonly").await?;
    let on_disk = if save.trim().is_empty() && aof == "no" {
        "in memory, no AOF/RDB — nothing on disk".to_string()
    } else {
        format!("persistence: save={save:?} appendonly={aof} (not fsynced per write unless appendfsync=always)")
    };
    println!("# redis {version}: {on_disk}");
    println!("# redis: redis crate, tokio multiplexed connection; batch = pipeline of {BATCH} XADDs (from {TASKS} tasks: one pipeline in flight per task); replay = XRANGE COUNT {PAGE}; live = XREAD BLOCK from $");
    Ok(())
}

pub async fn run(scenarios: &[&'static str], c: Counts) -> Res<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_string());
    let client = Client::open(url.as_str())?;
    let mut con = connect(&client).await?;
    print_settings(&mut con).await?;
    let run = crate::run_id();
    let mut failures = Vec::new();
    for &s in scenarios {
        eprintln!("stream-peers: redis: running {s}");
        let stream = format!("stream-peers:{run}:{s}");
        let r = match s {
            "publish_single_4tasks" => publish_single_4tasks(&con, &stream, c).await,
            "publish_batch_100" => publish_batch_100(&con, &stream, c).await,
            "publish_batch_100_4tasks" => publish_batch_100_4tasks(&con, &stream, c).await,
            "replay_1m" => replay_1m(&con, &stream, c).await,
            "live_latency" => live_latency(&client, &con, &stream, c).await,
            _ => unreachable!(),
        };
        if let Err(e) = redis::cmd("DEL").arg(&stream).query_async::<u64>(&mut con).await {
            eprintln!("stream-peers: redis: DEL {stream}: {e}");
        }
        if let Err(e) = r {
            failures.push((s, e.to_string()));
        }
    }
    finish("redis", failures)
}
