//! Unit tests of the queue value shapes: how a job is shown.

use super::*;

fn job(state: JobState, attempts: u32, run_at: i64) -> JobInfo {
    JobInfo {
        id: 1,
        queue: "q".into(),
        state,
        payload: Vec::new(),
        priority: 0,
        attempts,
        max_attempts: DEFAULT_MAX_ATTEMPTS,
        run_at,
        created_at: 0,
        expires_at: None,
        worker: Some("w".into()),
        claim_expires_at: Some(500),
        unique_key: None,
        tags: Vec::new(),
        meta: serde_json::Map::new(),
        last_error: None,
        dead_reason: None,
        died_at: None,
        errors: Vec::new(),
        cancel_requested: false,
    }
}

#[test]
fn pending_jobs_due_later_show_retryable_or_scheduled() {
    let now = 100;
    assert_eq!(job(JobState::Pending, 1, 160).shown_state(now), "retryable");
    assert_eq!(job(JobState::Pending, 0, 160).shown_state(now), "scheduled");
    assert_eq!(job(JobState::Pending, 1, 100).shown_state(now), "pending");
    assert_eq!(job(JobState::Dead, 1, 160).shown_state(now), "dead");
    assert_eq!(
        job(JobState::Processing, 1, 160).shown_state(now),
        "processing"
    );
}

#[test]
fn only_a_processing_job_shows_its_claim() {
    assert_eq!(
        job(JobState::Processing, 1, 0).live_claim_expires_at(),
        Some(500)
    );
    for state in [JobState::Dead, JobState::Completed, JobState::Pending] {
        assert_eq!(job(state, 1, 0).live_claim_expires_at(), None, "{state:?}");
    }
}
