//! `alk`: manage, inspect and benchmark an alkstore store. This crate is glue:
//! argument parsing and dispatch in `commands/mod.rs`, with one module
//! beside it per command group (jobs: `enqueue`, `job`; `dead` letters,
//! `queues` (pause, resume), `streams`, `groups`, `schedules`, `locks`) and
//! the output formatting they share (`output`, `text`). The larger commands
//! have modules of their own: `serve` (the HTTP API and dashboard), `demo`,
//! `exec_worker` (`alk worker`, a command per job), the benchmarks under
//! `bench/` (`alk bench …`), and `testworker` (the hidden workers the tests
//! and benchmarks start).

mod bench;
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
