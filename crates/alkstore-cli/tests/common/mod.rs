//! Helpers the process tests share.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// SIGTERM `child` and wait up to 20 s for it to exit (then SIGKILL).
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
