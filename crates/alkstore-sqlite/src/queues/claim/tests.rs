//! Unit tests of the claim-size hints.

use super::ClaimSizes;

/// A claim expects what its queue's last claim found, never more than
/// its limit; a queue never claimed from, its limit; queues apart.
#[test]
fn claims_expect_what_their_queue_last_found() {
    let sizes = ClaimSizes::default();
    assert_eq!(sizes.expected("a", 500), 500);
    sizes.found("a", 1);
    sizes.found("b", 400);
    assert_eq!(sizes.expected("a", 500), 1);
    assert_eq!(sizes.expected("b", 500), 400);
    assert_eq!(sizes.expected("b", 100), 100);
    sizes.found("a", 0);
    assert_eq!(sizes.expected("a", 500), 0);
    // Past its bound the map starts over rather than growing.
    for q in 0..5_000 {
        sizes.found(&format!("q{q}"), 7);
    }
    assert!(sizes.0.lock().expect("sizes").len() <= 4_096);
    assert_eq!(sizes.expected("q4999", 500), 7);
}
