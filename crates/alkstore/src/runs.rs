//! Where a handle's writes run: on the store (each call commits on its
//! own) or inside a transaction ([`Tx`]). Every handle is one
//! type with this as a parameter (`Queue<R: Runs = Store>`), so its writes
//! are written once and `store.queue("emails").enqueue(..)` and
//! `tx.queue("emails").enqueue(..)` are the same method.

use alkstore_core::{Place, Transaction};

use crate::{AnyEngine, Store, Tx};

/// Where a handle's writes run: [`Store`] (autocommit) or `&Tx` (the
/// transaction; a claim, lease or lock found lost is
/// [`Error::NotHeld`](crate::Error::NotHeld) and poisons it). Sealed.
pub trait Runs: Clone + Send + Sync + sealed::Sealed {
    /// The place the writes run at.
    type Place: Place<Engine = AnyEngine> + Sync;

    /// The place the writes run at.
    fn place(&self) -> &Self::Place;

    /// The store's engine when each write commits on its own (enqueues
    /// may then go straight to an idle worker of this process).
    fn autocommit(&self) -> Option<&AnyEngine> {
        None
    }
}

impl Runs for Store {
    type Place = AnyEngine;

    fn place(&self) -> &AnyEngine {
        self.engine()
    }

    fn autocommit(&self) -> Option<&AnyEngine> {
        Some(self.engine())
    }
}

impl Runs for &Tx {
    type Place = Transaction<AnyEngine>;

    fn place(&self) -> &Transaction<AnyEngine> {
        self.transaction()
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Store {}
    impl Sealed for &crate::Tx {}
}
