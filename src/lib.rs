//! scalechan: Go-style channels on scalable fetch-and-add queues.
#![warn(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]

mod atomic128;
mod epoch;
#[allow(dead_code)] // the shim offers more than each module uses
mod loom;
pub mod lscq;
pub mod scq;

pub use lscq::Lscq;
pub use scq::Scq;
