//! `alk`: manage, inspect and benchmark an alkstore store. This crate is glue:
//! argument parsing and dispatch in `commands/mod.rs`, the larger command
//! groups (`enqueue`, `job`, `dead`) and output formatting in modules beside
//! it, benchmarks in `bench.rs`.

mod bench;
mod bench_group;
mod bench_http;
mod bench_lock;
mod bench_soak;
mod bench_stream;
mod bench_tx;
mod commands;
mod demo;
mod exec_worker;
mod serve;
mod testworker;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = commands::Cli::parse();
    let db = cli.db().to_string();
    match commands::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Whatever an error echoes, the store URL's password is masked.
            let redact = |text: String| commands::text::redact(&text, &db);
            eprintln!("alk: {}", redact(e.to_string()));
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                eprintln!("  caused by: {}", redact(s.to_string()));
                source = s.source();
            }
            ExitCode::from(1)
        }
    }
}
