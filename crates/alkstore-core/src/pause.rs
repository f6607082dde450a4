//! What a pause call asks of a queue or a schedule.

/// The state a pause or resume call puts a queue or a schedule in: the
/// engines' drivers take one call for both (`queue_set_paused`,
/// `schedule_set_paused`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseState {
    /// Paused: no worker claims from the queue, the schedule does not fire.
    Paused,
    /// Running again.
    Running,
}

impl PauseState {
    /// Whether this is [`PauseState::Paused`].
    pub fn is_paused(self) -> bool {
        self == PauseState::Paused
    }
}
