//! The value shapes that cross the queue engine traits, by what they
//! describe.

mod job;
mod options;
mod outcome;
mod stats;

pub use job::*;
pub use options::*;
pub use outcome::*;
pub use stats::*;

#[cfg(test)]
mod tests;
