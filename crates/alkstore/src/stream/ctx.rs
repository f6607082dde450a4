//! What a stream or group handler is handed — an event with its payload
//! decoded ([`EventCtx`]) — and the type erasure both runtimes share to
//! hold a handler of any payload type.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use alkstore_core::stream::Event;
use alkstore_core::BoxError;
use serde::de::DeserializeOwned;

use crate::{Tx, TxFuture};

/// An event handed to a subscriber's handler, its payload decoded from
/// JSON to `T` (a raw handler gets `EventCtx<Vec<u8>>`, the bytes), as a
/// worker's handler gets a [`JobCtx`](crate::JobCtx).
#[derive(Debug, Clone)]
pub struct EventCtx<T> {
    offset: i64,
    stream: Arc<str>,
    key: Option<String>,
    created_at: i64,
    payload: T,
}

impl<T> EventCtx<T> {
    /// The decoded payload.
    pub fn payload(&self) -> &T {
        &self.payload
    }

    /// Take the payload.
    pub fn into_payload(self) -> T {
        self.payload
    }

    /// The event's offset in its stream.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The key it was published with.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The stream.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// When it was published (unix seconds, the engine's clock).
    pub fn created_at(&self) -> i64 {
        self.created_at
    }

    fn with<U>(event: Event, payload: U) -> EventCtx<U> {
        EventCtx {
            offset: event.offset,
            stream: event.stream,
            key: event.key,
            created_at: event.created_at,
            payload,
        }
    }
}

impl EventCtx<Vec<u8>> {
    /// The event as read, its payload's bytes back in it (to pass on,
    /// print or keep as it is).
    pub fn into_event(self) -> Event {
        Event {
            offset: self.offset,
            stream: self.stream,
            key: self.key,
            payload: self.payload,
            created_at: self.created_at,
        }
    }
}

/// The event as a typed handler sees it: the payload decoded from JSON. An
/// error is the handler's failure (an undecodable payload runs the error
/// policy like any other failure).
pub(crate) fn decoded<T: DeserializeOwned>(event: Event) -> Result<EventCtx<T>, BoxError> {
    match serde_json::from_slice::<T>(&event.payload) {
        Ok(payload) => Ok(EventCtx::<T>::with(event, payload)),
        Err(e) => Err(format!(
            "stream {:?} offset {}: payload does not decode: {e}",
            event.stream, event.offset
        )
        .into()),
    }
}

/// The event as a raw handler sees it: the payload's bytes.
pub(crate) fn raw(mut event: Event) -> Result<EventCtx<Vec<u8>>, BoxError> {
    let payload = std::mem::take(&mut event.payload);
    Ok(EventCtx::<Vec<u8>>::with(event, payload))
}

/// A plain handler's future, its error boxed.
pub(crate) type PlainFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;

/// A plain handler over input `I` (an event, or a group's delivery), its
/// payload type erased.
pub(crate) type PlainFn<I> = dyn Fn(I) -> PlainFuture + Send + Sync;

/// A transactional handler over input `I`, its payload type erased.
pub(crate) type TxFn<I> = dyn for<'t> Fn(&'t mut Tx, I) -> TxFuture<'t, (), BoxError> + Send + Sync;

/// Erase a plain handler: `make` turns the runtime's input into the
/// user's context (decoding the payload), then `f` runs on it.
pub(crate) fn plain<I, C, F, Fut, E>(
    make: impl Fn(I) -> Result<C, BoxError> + Send + Sync + 'static,
    f: F,
) -> Arc<PlainFn<I>>
where
    I: 'static,
    F: Fn(C) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    Arc::new(move |input: I| -> PlainFuture {
        match make(input) {
            Ok(ctx) => {
                let called = f(ctx);
                Box::pin(async move { called.await.map_err(Into::into) })
            }
            Err(e) => Box::pin(async move { Err(e) }),
        }
    })
}

/// Erase a transactional handler, as [`plain`] does a plain one.
pub(crate) fn in_tx<I, C, F, E>(
    make: impl Fn(I) -> Result<C, BoxError> + Send + Sync + 'static,
    f: F,
) -> Arc<TxFn<I>>
where
    I: 'static,
    F: for<'t> Fn(&'t mut Tx, C) -> TxFuture<'t, (), E> + Send + Sync + 'static,
    E: Into<BoxError> + 'static,
{
    Arc::new(move |tx: &mut Tx, input: I| -> TxFuture<'_, (), BoxError> {
        match make(input) {
            Ok(ctx) => {
                let called = f(tx, ctx);
                Box::pin(async move { called.await.map_err(Into::into) })
            }
            Err(e) => Box::pin(async move { Err(e) }),
        }
    })
}
