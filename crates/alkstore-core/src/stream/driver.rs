//! [`StreamDriver`]: what an engine implements for streams — SQL and
//! nothing else (see [`crate::call`]).

use std::future::Future;

use crate::{Checked, Engine, Result};

use super::params::*;
use super::types::*;

/// The stream statements of one engine. Each method takes [`Checked`]
/// parameters; callers use [`StreamEngine`](super::StreamEngine), whose
/// methods document the behaviour (the contract suite checks it). Its
/// writes (`stream_publish`, `stream_offset_commit`) are operations
/// ([`crate::op`]).
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait StreamDriver: Engine {
    /// See [`StreamEngine::stream_read`](super::StreamEngine::stream_read).
    fn stream_read(
        &self,
        params: Checked<StreamReadParams>,
    ) -> impl Future<Output = Result<Vec<Event>>> + Send;

    /// See [`StreamEngine::stream_offset_get`](super::StreamEngine::stream_offset_get).
    fn stream_offset_get(
        &self,
        params: Checked<StreamOffsetGetParams>,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// See [`StreamEngine::stream_offsets`](super::StreamEngine::stream_offsets).
    fn stream_offsets(
        &self,
        params: Checked<StreamOffsetsParams>,
    ) -> impl Future<Output = Result<Vec<ConsumerOffset>>> + Send;

    /// See [`StreamEngine::stream_stats`](super::StreamEngine::stream_stats).
    fn stream_stats(
        &self,
        params: Checked<StreamStatsParams>,
    ) -> impl Future<Output = Result<StreamStats>> + Send;

    /// See [`StreamEngine::stream_list`](super::StreamEngine::stream_list).
    fn stream_list(&self) -> impl Future<Output = Result<Vec<StreamInfo>>> + Send;

    /// See [`StreamEngine::stream_trim`](super::StreamEngine::stream_trim).
    fn stream_trim(
        &self,
        params: Checked<StreamTrimParams>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// See [`StreamEngine::stream_retention_set`](super::StreamEngine::stream_retention_set).
    fn stream_retention_set(
        &self,
        params: Checked<StreamRetentionParams>,
    ) -> impl Future<Output = Result<()>> + Send;
}
