//! The 128-bit atomic that SCQ entries live in.
//!
//! Normal builds use `portable_atomic::AtomicU128` (`cmpxchg16b` on x86-64,
//! detected at run time; a lock-based fallback elsewhere).
//!
//! loom 0.7 has no 128-bit atomic, and a `Mutex<u128>` or seqlock stand-in
//! would hide ordering bugs (NOTES.md). Under `cfg(loom)` an entry is a loom
//! `AtomicU64` holding an *id*, and a process-wide table maps each distinct
//! `u128` value to its id and back. Equal values get equal ids, so a CAS on
//! ids succeeds exactly when the CAS on the values would, and every load,
//! store and RMW is a real loom atomic operation with its real ordering.
//! Loads go through the crate's loom shim, so `--cfg loom_rmw_loads` turns
//! them into RMWs like every other load.

#[cfg(not(loom))]
pub(crate) use portable_atomic::AtomicU128;

#[cfg(loom)]
pub(crate) use model::AtomicU128;

#[cfg(loom)]
mod model {
    use crate::loom::sync::atomic::{AtomicU64, Ordering};
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// value -> id and id -> value. A plain std mutex: no loom operation runs
    /// while it is held, so it can neither block a loom thread nor add
    /// interleavings.
    static TABLE: Mutex<Option<Table>> = Mutex::new(None);

    /// value -> id, and id -> value.
    type Table = (HashMap<u128, u64>, Vec<u128>);

    fn id_of(v: u128) -> u64 {
        let mut guard = TABLE.lock().unwrap_or_else(|e| e.into_inner());
        let (ids, values) = guard.get_or_insert_with(Default::default);
        *ids.entry(v).or_insert_with(|| {
            values.push(v);
            (values.len() - 1) as u64
        })
    }

    fn value_of(id: u64) -> u128 {
        let guard = TABLE.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().expect("id table initialised by `new`").1[id as usize]
    }

    /// loom stand-in for `portable_atomic::AtomicU128` (see the module docs).
    #[derive(Debug)]
    pub(crate) struct AtomicU128 {
        id: AtomicU64,
    }

    impl AtomicU128 {
        pub(crate) fn new(v: u128) -> Self {
            AtomicU128 {
                id: AtomicU64::new(id_of(v)),
            }
        }

        pub(crate) fn load(&self, order: Ordering) -> u128 {
            value_of(self.id.load(order))
        }

        pub(crate) fn store(&self, v: u128, order: Ordering) {
            self.id.store(id_of(v), order)
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u128,
            new: u128,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u128, u128> {
            self.id
                .compare_exchange(id_of(current), id_of(new), success, failure)
                .map(value_of)
                .map_err(value_of)
        }
    }
}
