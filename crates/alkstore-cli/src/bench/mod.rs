//! `alk bench`: the benchmarks, one module per subcommand (`queue`,
//! `worker`, `stream`, `group`, `lock` with `schedule`, `soak`, `scale`, `http`),
//! plus `tx` (the transactional-handler scenarios of `worker` and
//! `group`) and `group_workers` (the worker processes the group scenarios
//! drive). What they all share is in `support`, a leaf. Each prints one
//! machine-readable line per scenario; the subcommand and the dispatch
//! are here.

mod group;
mod group_workers;
mod http;
mod lock;
mod queue;
mod scale;
mod soak;
mod stream;
pub(crate) mod support;
mod tx;
mod worker;

use alkstore::Result;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Queue throughput scenarios on fresh databases.
    Queue(queue::QueueBenchArgs),
    /// Worker runtime: wake latency and end-to-end throughput.
    Worker(worker::WorkerBenchArgs),
    /// Streams: publish (single and batched), replay, live latency.
    Stream(stream::StreamBenchArgs),
    /// Consumer groups of worker processes: throughput with 1, 2 and 4
    /// workers, failover after SIGKILL, rebalance when a worker joins.
    Group(group::GroupBenchArgs),
    /// Locks: acquire+release cycles per second, alone and with 8
    /// contenders for one lock.
    Lock(lock::LockBenchArgs),
    /// Schedules: how long after its boundary a job is enqueued.
    Schedule(lock::LockBenchArgs),
    /// Steady enqueue and work for N minutes: throughput per minute and
    /// the job table's size, to show decay.
    Soak(soak::SoakArgs),
    /// Throughput and latency as the backlog, the queue count and the
    /// worker processes grow, one fresh store per point.
    Scale(scale::ScaleArgs),
    /// The HTTP API from keep-alive clients: enqueue, claim+ack, long-poll
    /// wake latency.
    Http(support::ScenarioArgs),
}

/// Run `alk bench …`.
pub(crate) async fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Queue(args) => queue::run_queue(args).await,
        BenchCommand::Worker(args) => worker::run_worker(args).await,
        BenchCommand::Stream(args) => stream::run(args).await,
        BenchCommand::Group(args) => group::run(args).await,
        BenchCommand::Lock(args) => lock::run_lock(args).await,
        BenchCommand::Http(args) => http::run(args).await,
        BenchCommand::Soak(args) => soak::run(args).await,
        BenchCommand::Scale(args) => scale::run(args).await,
        BenchCommand::Schedule(args) => lock::run_schedule(args).await,
    }
}
