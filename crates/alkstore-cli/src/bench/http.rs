//! `alk bench http`: the HTTP API under load from keep-alive clients, with
//! the server (`alkstore-http`, as `alk serve` runs it) in this process on a
//! loopback port, each scenario on a fresh store.
//!
//! One line per scenario, machine-readable:
//! `bench peer=alkstore engine=E scenario=http_… jobs=N secs=S jobs_per_s=R`, and
//! `bench peer=alkstore engine=E scenario=http_wake_latency samples=N p50_ms_from_call=… p99_ms_from_call=…`
//! (from the enqueue request's start to the waiting claim's answer).

use std::time::{Duration, Instant};

use alkstore::{Error, Result, Store};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::support::{fill, join_err, percentile, scaled, ScenarioArgs, Target};

const SCENARIOS: &[&str] = &[
    "http_enqueue_4conns",
    "http_enqueue_batch_100",
    "http_claim100_batch_ack_4conns",
    "http_wake_latency",
];

/// One keep-alive HTTP/1.1 connection: requests one at a time, bodies by
/// Content-Length (what the server sends).
struct Conn {
    io: BufReader<TcpStream>,
    host: String,
}

fn io_err(e: std::io::Error) -> Error {
    Error::database("bench http", e)
}

impl Conn {
    async fn open(addr: std::net::SocketAddr) -> Result<Conn> {
        let stream = TcpStream::connect(addr).await.map_err(io_err)?;
        stream.set_nodelay(true).map_err(io_err)?;
        Ok(Conn {
            io: BufReader::new(stream),
            host: addr.to_string(),
        })
    }

    /// Send one request; the status and body of its answer.
    async fn call(&mut self, method: &str, path: &str, body: &str) -> Result<(u16, Vec<u8>)> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        let w = self.io.get_mut();
        w.write_all(head.as_bytes()).await.map_err(io_err)?;
        w.write_all(body.as_bytes()).await.map_err(io_err)?;
        let mut line = String::new();
        self.io.read_line(&mut line).await.map_err(io_err)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::database("bench http", format!("bad status line {line:?}")))?;
        let mut length = 0usize;
        loop {
            line.clear();
            self.io.read_line(&mut line).await.map_err(io_err)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        self.io.read_exact(&mut body).await.map_err(io_err)?;
        Ok((status, body))
    }

    /// `call`, expecting `want`; the body as JSON.
    async fn json(
        &mut self,
        method: &str,
        path: &str,
        body: &str,
        want: u16,
    ) -> Result<serde_json::Value> {
        let (status, bytes) = self.call(method, path, body).await?;
        if status != want {
            return Err(Error::database(
                "bench http",
                format!(
                    "{method} {path}: {status} {}",
                    String::from_utf8_lossy(&bytes)
                ),
            ));
        }
        serde_json::from_slice(&bytes).map_err(|e| Error::database("bench http", e))
    }
}

/// Run `alk bench http`.
pub(crate) async fn run(args: ScenarioArgs) -> Result<()> {
    let (target, wanted) = args.resolve(SCENARIOS)?;
    println!(
        "# alkstore {} engine={} server=alkstore-http in-process, clients=keep-alive HTTP/1.1 on loopback",
        env!("CARGO_PKG_VERSION"),
        target.name()
    );
    for (i, name) in wanted.into_iter().enumerate() {
        // A store of its own per scenario (SQLite: one file per number).
        let fresh = target.fresh(200 + i).await?;
        let store = Store::from_engine(fresh.engine.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(io_err)?;
        let addr = listener.local_addr().map_err(io_err)?;
        let app = alkstore_http::router(store, alkstore_http::ServeOptions::default());
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let line = scenario(name, &target, &fresh.engine, addr, args.scale).await;
        server.abort();
        println!("{}", line?);
        fresh.cleanup().await?;
    }
    Ok(())
}

async fn scenario(
    name: &str,
    target: &Target,
    engine: &alkstore::AnyEngine,
    addr: std::net::SocketAddr,
    scale: f64,
) -> Result<String> {
    let engine_name = target.name();
    let rate = |n: usize, secs: f64| {
        format!(
            "bench peer=alkstore engine={engine_name} scenario={name} jobs={n} secs={secs:.3} jobs_per_s={:.0}",
            n as f64 / secs
        )
    };
    match name {
        "http_enqueue_4conns" => {
            let n = scaled(8_000, scale);
            let started = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..4 {
                tasks.push(tokio::spawn(async move {
                    let mut c = Conn::open(addr).await?;
                    for i in (t..n).step_by(4) {
                        c.json(
                            "POST",
                            "/api/v1/queues/bench/jobs",
                            &format!(r#"{{"payload":{{"i":{i}}}}}"#),
                            201,
                        )
                        .await?;
                    }
                    Ok::<_, Error>(())
                }));
            }
            for t in tasks {
                t.await.map_err(join_err)??;
            }
            Ok(rate(n, started.elapsed().as_secs_f64()))
        }
        "http_enqueue_batch_100" => {
            let n = scaled(50_000, scale);
            let mut c = Conn::open(addr).await?;
            let started = Instant::now();
            let mut i = 0;
            while i < n {
                let end = (i + 100).min(n);
                let jobs: Vec<String> = (i..end)
                    .map(|j| format!(r#"{{"payload":{{"i":{j}}}}}"#))
                    .collect();
                c.json(
                    "POST",
                    "/api/v1/queues/bench/jobs/batch",
                    &format!(r#"{{"jobs":[{}]}}"#, jobs.join(",")),
                    201,
                )
                .await?;
                i = end;
            }
            Ok(rate(n, started.elapsed().as_secs_f64()))
        }
        "http_claim100_batch_ack_4conns" => {
            let n = scaled(20_000, scale);
            fill(engine, n).await?;
            let started = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..4 {
                tasks.push(tokio::spawn(async move {
                    let mut c = Conn::open(addr).await?;
                    let worker = format!("h{t}");
                    let mut done = 0usize;
                    loop {
                        let got = c
                            .json(
                                "POST",
                                "/api/v1/queues/bench/claim",
                                &format!(r#"{{"worker":"{worker}","limit":100}}"#),
                                200,
                            )
                            .await?;
                        let jobs = got["jobs"].as_array().cloned().unwrap_or_default();
                        if jobs.is_empty() {
                            return Ok::<_, Error>(done);
                        }
                        let claims: Vec<String> = jobs
                            .iter()
                            .map(|j| {
                                format!(
                                    r#"{{"id":{},"worker":"{worker}","token":{}}}"#,
                                    j["id"], j["token"]
                                )
                            })
                            .collect();
                        let acked = c
                            .json(
                                "POST",
                                "/api/v1/jobs/ack",
                                &format!(r#"{{"claims":[{}]}}"#, claims.join(",")),
                                200,
                            )
                            .await?;
                        done += acked["done"].as_array().map_or(0, |d| {
                            d.iter().filter(|f| **f == serde_json::json!(true)).count()
                        });
                    }
                }));
            }
            let mut done = 0;
            for t in tasks {
                done += t.await.map_err(join_err)??;
            }
            if done != n {
                return Err(Error::database(
                    "bench http",
                    format!("acked {done} of {n}"),
                ));
            }
            Ok(rate(n, started.elapsed().as_secs_f64()))
        }
        _ => {
            // http_wake_latency: a claim waits on one connection; another
            // enqueues; from the enqueue's start to the claim's answer.
            let samples = scaled(200, scale).max(1);
            let mut enqueuer = Conn::open(addr).await?;
            let mut lat = Vec::with_capacity(samples);
            for i in 0..samples {
                let waiter = tokio::spawn(async move {
                    let mut c = Conn::open(addr).await?;
                    let got = c
                        .json(
                            "POST",
                            "/api/v1/queues/wake/claim",
                            r#"{"worker":"w","wait_ms":5000}"#,
                            200,
                        )
                        .await?;
                    Ok::<_, Error>((Instant::now(), got))
                });
                // Let the claim reach its wait.
                tokio::time::sleep(Duration::from_millis(5)).await;
                let t0 = Instant::now();
                enqueuer
                    .json(
                        "POST",
                        "/api/v1/queues/wake/jobs",
                        &format!(r#"{{"payload":{i}}}"#),
                        201,
                    )
                    .await?;
                let (answered, got) = waiter.await.map_err(join_err)??;
                let jobs = got["jobs"].as_array().cloned().unwrap_or_default();
                if jobs.len() != 1 {
                    return Err(Error::database(
                        "bench http",
                        format!("the waiting claim got {got}"),
                    ));
                }
                // Settle it, so the next sample starts from an empty queue.
                enqueuer
                    .json(
                        "POST",
                        &format!("/api/v1/jobs/{}/ack", jobs[0]["id"]),
                        &format!(r#"{{"worker":"w","token":{}}}"#, jobs[0]["token"]),
                        200,
                    )
                    .await?;
                lat.push(answered.saturating_duration_since(t0).as_secs_f64() * 1e3);
            }
            lat.sort_by(f64::total_cmp);
            Ok(format!(
                "bench peer=alkstore engine={engine_name} scenario=http_wake_latency samples={samples} p50_ms_from_call={:.3} p99_ms_from_call={:.3}",
                percentile(&lat, 0.5),
                percentile(&lat, 0.99)
            ))
        }
    }
}
