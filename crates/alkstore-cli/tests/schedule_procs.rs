//! Schedulers as separate OS processes: three `alk schedules run` share one
//! store for a few seconds over an `@every 1s` schedule; one is killed with
//! SIGKILL midway. Every boundary from the first fires exactly once, none
//! skipped, none doubled.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use alkstore::schedule::fired_job_key;
use alkstore::{
    prelude::{QueueAdmin, ScheduleEngine},
    queue::JobListParams,
    Store,
};

mod common;
use common::terminate;

fn scheduler(db: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["--db", db, "schedules", "run"])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn alk schedules run")
}

async fn each_boundary_fires_once_across_processes(db: String) {
    let added = Command::new(env!("CARGO_BIN_EXE_alk"))
        .args(["--db", &db, "--json", "schedules", "add", "tick"])
        .args(["--spec", "@every 1s", "--queue", "ticks"])
        .env_remove("DATABASE_URL")
        .output()
        .expect("alk schedules add");
    assert!(added.status.success(), "{added:?}");
    let store = Store::open(&db).await.expect("open");
    let first = store.engine().schedule_list().await.expect("list")[0]
        .next_fire_at_ms
        .expect("next");
    let mut procs: Vec<Child> = (0..3).map(|_| scheduler(&db)).collect();
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let mut killed = procs.remove(0);
    killed.kill().expect("SIGKILL");
    let _ = killed.wait();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    // Stop at a boundary's middle: the last fired one is settled.
    let last = store.engine().schedule_list().await.expect("list")[0]
        .last_boundary_ms
        .expect("fired");
    for p in procs {
        terminate(p);
    }
    let jobs = store
        .engine()
        .job_list(JobListParams::new(1000).queue("ticks"))
        .await
        .expect("jobs");
    let mut keys: Vec<String> = jobs.iter().filter_map(|j| j.unique_key.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), jobs.len(), "no boundary fired twice");
    let fired_through = store.engine().schedule_list().await.expect("list")[0]
        .last_boundary_ms
        .expect("fired");
    assert!(fired_through >= last);
    let mut want: Vec<String> = (0..=(fired_through - first) / 1_000)
        .map(|i| fired_job_key("tick", first + i * 1_000))
        .collect();
    want.sort();
    assert_eq!(keys, want, "every boundary from the first, once");
    assert!(want.len() >= 3, "{} boundaries in ~4.5 s", want.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_schedulers_in_three_processes_fire_each_boundary_once() {
    let dir = tempfile::tempdir().expect("tmp");
    each_boundary_fires_once_across_processes(format!(
        "sqlite://{}",
        dir.path().join("s.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_schedulers_in_three_processes_fire_each_boundary_once() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("schedprocs");
    each_boundary_fires_once_across_processes(format!("{url}?schema={schema}")).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}
