//! `alk serve`: the HTTP API, `/openapi.json` and `/metrics` (crate
//! `alkstore-http`) on one address, until SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::time::Duration;

use alkstore::{Error, Result, Store};
use clap::Args;

use crate::commands::text::parse_duration;

/// Arguments of `alk serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on. Anything but a loopback address needs
    /// `--token`.
    #[arg(long, default_value = "127.0.0.1:7878")]
    listen: SocketAddr,
    /// A bearer token (16 characters or more) every request must carry.
    #[arg(long, env = "ALK_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The largest request body accepted, in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    max_body_bytes: usize,
    /// The longest a claim or read may wait for work (a request's
    /// `wait_ms` must not exceed it): `30s` (the most), `500ms`, or plain
    /// seconds.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    max_wait: Duration,
    /// `--max-wait` in milliseconds (the flag's earlier form, kept for
    /// scripts).
    #[arg(long, hide = true, conflicts_with = "max_wait")]
    max_wait_ms: Option<u64>,
    /// Print the API's OpenAPI document and exit (it is kept in the
    /// repository as crates/alkstore-http/openapi.json).
    #[arg(long)]
    print_openapi: bool,
}

/// Serve `db` until a shutdown signal.
pub(crate) async fn run(db: &str, args: ServeArgs) -> Result<()> {
    if args.print_openapi {
        println!("{}", alkstore_http::openapi_json());
        return Ok(());
    }
    alkstore_http::check_bind(args.listen, args.token.as_deref())
        .map_err(|e| Error::invalid("--listen/--token", e.to_string()))?;
    // The runtime's counters and the store's gauges share one recorder.
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| Error::database("serve: install the metrics recorder", e))?;
    let store = Store::open(db).await?;
    let flush_on_exit = store.clone();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| Error::database("serve: listen", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::database("serve: listen", e))?;
    let app = alkstore_http::router(
        store,
        alkstore_http::ServeOptions {
            token: args.token,
            max_body_bytes: args.max_body_bytes,
            max_wait_ms: args
                .max_wait_ms
                .unwrap_or_else(|| u64::try_from(args.max_wait.as_millis()).unwrap_or(u64::MAX)),
            prometheus: Some(prometheus),
            store_url: Some(db.to_string()),
        },
    );
    println!("alk serve: http://{addr}/ (API /api/v1, OpenAPI /openapi.json, Prometheus /metrics)");
    axum::serve(listener, app)
        .with_graceful_shutdown(alkstore::shutdown_signal())
        .await
        .map_err(|e| Error::database("serve", e))?;
    // The last requests' wake-ups (see `Store::flush`).
    flush_on_exit.flush().await;
    Ok(())
}
