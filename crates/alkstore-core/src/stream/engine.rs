//! [`StreamEngine`]: the stream calls, implemented once for every
//! [`StreamDriver`] through the one wrapper ([`crate::call`]).

use std::future::Future;

use crate::call::engine_call;
use crate::{Engine, Result};

use super::driver::StreamDriver;
use super::params::*;
use super::types::*;

/// Publish to, read from and inspect event streams. Every engine has it
/// (through its [`StreamDriver`]); the contract suite checks they behave
/// the same. Bad input is a typed error and writes nothing.
///
/// **Unstable**: part of the engines' seam, which changes as the engines
/// do. Applications use the `alkstore` crate's handles (`Store::queue`,
/// `Store::jobs`, …) instead.
pub trait StreamEngine: Engine {
    /// Up to `limit` events of a stream after an offset, in offset order.
    /// Gap-safe: an event a still-open transaction may yet precede is not
    /// returned until that transaction ends, so a reader that moves its
    /// offset past what it read never skips an event.
    fn stream_read(
        &self,
        params: StreamReadParams,
    ) -> impl Future<Output = Result<Vec<Event>>> + Send;

    /// A consumer's saved offset; `None` when it never committed one
    /// (distinct from `Some(0)`).
    fn stream_offset_get(
        &self,
        params: impl Into<StreamOffsetGetParams> + Send,
    ) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// Every consumer of a stream with its offset and lag, by name.
    fn stream_offsets(
        &self,
        params: impl Into<StreamOffsetsParams> + Send,
    ) -> impl Future<Output = Result<Vec<ConsumerOffset>>> + Send;

    /// Head, event count, consumers' lag and the open-transaction hold-back.
    fn stream_stats(
        &self,
        params: impl Into<StreamStatsParams> + Send,
    ) -> impl Future<Output = Result<StreamStats>> + Send;

    /// Every stream with stored events or saved offsets, by name.
    fn stream_list(&self) -> impl Future<Output = Result<Vec<StreamInfo>>> + Send;

    /// Delete old events (see [`StreamTrimParams`]); returns how many.
    /// Trimming before an offset beyond the head + 1 is an
    /// [`InvalidInput`](crate::Error::InvalidInput) error. Offsets are never
    /// reused after a trim.
    fn stream_trim(&self, params: StreamTrimParams) -> impl Future<Output = Result<u64>> + Send;

    /// Keep a stream's events for at most `max_age` (maintenance trims the
    /// rest on every sweep); `None` keeps them until trimmed by hand.
    fn stream_retention_set(
        &self,
        params: StreamRetentionParams,
    ) -> impl Future<Output = Result<()>> + Send;
}

impl<D: StreamDriver> StreamEngine for D {
    async fn stream_read(&self, params: StreamReadParams) -> Result<Vec<Event>> {
        engine_call!(self, stream_read, params => StreamReadParams, |p| {
            StreamDriver::stream_read(self, p)
        })
    }

    async fn stream_offset_get(
        &self,
        params: impl Into<StreamOffsetGetParams> + Send,
    ) -> Result<Option<i64>> {
        engine_call!(self, stream_offset_get, params => StreamOffsetGetParams, |p| {
            StreamDriver::stream_offset_get(self, p)
        })
    }

    async fn stream_offsets(
        &self,
        params: impl Into<StreamOffsetsParams> + Send,
    ) -> Result<Vec<ConsumerOffset>> {
        engine_call!(self, stream_offsets, params => StreamOffsetsParams, |p| {
            StreamDriver::stream_offsets(self, p)
        })
    }

    async fn stream_stats(
        &self,
        params: impl Into<StreamStatsParams> + Send,
    ) -> Result<StreamStats> {
        engine_call!(self, stream_stats, params => StreamStatsParams, |p| {
            StreamDriver::stream_stats(self, p)
        })
    }

    async fn stream_list(&self) -> Result<Vec<StreamInfo>> {
        engine_call!(self, stream_list, () => (), |_p| StreamDriver::stream_list(self))
    }

    async fn stream_trim(&self, params: StreamTrimParams) -> Result<u64> {
        engine_call!(self, stream_trim, params => StreamTrimParams, |p| {
            StreamDriver::stream_trim(self, p)
        })
    }

    async fn stream_retention_set(&self, params: StreamRetentionParams) -> Result<()> {
        engine_call!(self, stream_retention_set, params => StreamRetentionParams, |p| {
            StreamDriver::stream_retention_set(self, p)
        })
    }
}
