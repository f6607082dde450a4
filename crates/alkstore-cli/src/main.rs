//! `alk`: manage, inspect and benchmark an alkstore store. This crate is glue:
//! argument parsing here, one module per command group in `commands/`.

mod bench;
mod commands;
mod testworker;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = commands::Cli::parse();
    match commands::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("alk: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::from(1)
        }
    }
}
