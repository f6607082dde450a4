//! Helpers the process tests share.

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `alk --db DB ARGS…` with `input` on its stdin (closed once written);
/// its output. A process that refuses early may close its stdin before
/// reading it: that is not an error here.
#[allow(dead_code)] // each test binary uses some of these helpers
pub(crate) fn alk_stdin(db: &str, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_alk"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run alk");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    child.wait_with_output().expect("alk output")
}

/// SIGTERM `child` and wait up to 20 s for it to exit (then SIGKILL).
#[allow(dead_code)] // each test binary uses some of these helpers
pub(crate) fn terminate(mut child: Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}
