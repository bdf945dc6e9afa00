//! Loom models (see README for the commands).
#![cfg(loom)]

mod chan;
mod lscq;
mod scq;
