#![cfg(loom)]

mod lscq;
mod scq;
