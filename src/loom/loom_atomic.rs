//! loom atomics whose loads can be read-modify-writes (`--cfg loom_rmw_loads`).
//!
//! Under that cfg stores become swaps as well: loom may order a plain store
//! before another thread's earlier RMW, so a thread that stores and then
//! RMW-loads could read back an older value than its own store (a coherence
//! violation no hardware shows; it made parked waiters and epoch
//! participants look stuck). With every access an RMW, each location has one
//! total order. Every other method forwards to loom through `Deref`.

use loom::sync::atomic as la;
use std::sync::atomic::Ordering;

macro_rules! int_atomic {
    ($name:ident, $int:ty) => {
        #[derive(Debug)]
        pub(crate) struct $name(la::$name);

        impl $name {
            pub(crate) fn new(v: $int) -> Self {
                $name(la::$name::new(v))
            }

            #[inline]
            pub(crate) fn store(&self, v: $int, order: Ordering) {
                if cfg!(loom_rmw_loads) {
                    self.0.swap(v, order);
                } else {
                    self.0.store(v, order)
                }
            }

            #[inline]
            pub(crate) fn load(&self, order: Ordering) -> $int {
                if cfg!(loom_rmw_loads) {
                    self.0.fetch_add(0, order)
                } else {
                    self.0.load(order)
                }
            }
        }

        impl std::ops::Deref for $name {
            type Target = la::$name;
            fn deref(&self) -> &la::$name {
                &self.0
            }
        }
    };
}

int_atomic!(AtomicUsize, usize);
int_atomic!(AtomicU64, u64);

#[derive(Debug)]
pub(crate) struct AtomicBool(la::AtomicBool);

impl AtomicBool {
    pub(crate) fn new(v: bool) -> Self {
        AtomicBool(la::AtomicBool::new(v))
    }

    #[inline]
    pub(crate) fn store(&self, v: bool, order: Ordering) {
        if cfg!(loom_rmw_loads) {
            self.0.swap(v, order);
        } else {
            self.0.store(v, order)
        }
    }

    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> bool {
        if cfg!(loom_rmw_loads) {
            self.0.fetch_or(false, order)
        } else {
            self.0.load(order)
        }
    }
}

impl std::ops::Deref for AtomicBool {
    type Target = la::AtomicBool;
    fn deref(&self) -> &la::AtomicBool {
        &self.0
    }
}

#[derive(Debug)]
pub(crate) struct AtomicPtr<T>(la::AtomicPtr<T>);

impl<T> AtomicPtr<T> {
    pub(crate) fn new(p: *mut T) -> Self {
        AtomicPtr(la::AtomicPtr::new(p))
    }

    #[inline]
    pub(crate) fn store(&self, p: *mut T, order: Ordering) {
        if cfg!(loom_rmw_loads) {
            self.0.swap(p, order);
        } else {
            self.0.store(p, order)
        }
    }

    #[inline]
    pub(crate) fn load(&self, order: Ordering) -> *mut T {
        if cfg!(loom_rmw_loads) {
            let fail = match order {
                Ordering::SeqCst => Ordering::SeqCst,
                Ordering::Relaxed => Ordering::Relaxed,
                _ => Ordering::Acquire,
            };
            // A CAS of the value onto itself always succeeds: an RMW read.
            match self.0.fetch_update(order, fail, Some) {
                Ok(p) | Err(p) => p,
            }
        } else {
            self.0.load(order)
        }
    }
}

impl<T> std::ops::Deref for AtomicPtr<T> {
    type Target = la::AtomicPtr<T>;
    fn deref(&self) -> &la::AtomicPtr<T> {
        &self.0
    }
}
