//! The random order of a select's cases: a per-thread xorshift generator.
//! Fairness needs only a cheap, well-mixed sequence, not a secure one.

/// Fills `order` with a uniformly random permutation of `0..order.len()`
/// (Fisher-Yates). Under loom the order is fixed: a model must replay the
/// same choices in every execution it explores.
pub(crate) fn shuffled(order: &mut [usize]) {
    for (i, slot) in order.iter_mut().enumerate() {
        *slot = i;
    }
    #[cfg(not(loom))]
    for i in (1..order.len()).rev() {
        let j = below(i + 1);
        order.swap(i, j);
    }
}

#[cfg(not(loom))]
fn below(n: usize) -> usize {
    use std::cell::Cell;
    use std::num::Wrapping;
    thread_local! {
        static STATE: Cell<Wrapping<u64>> = const { Cell::new(Wrapping(0)) };
    }
    STATE.with(|state| {
        let mut x = state.get();
        if x.0 == 0 {
            // Seed from the thread's stack address and the clock: distinct
            // per thread, never zero.
            let stack = &x as *const _ as u64;
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos() as u64);
            x = Wrapping((stack ^ nanos.rotate_left(32)) | 1);
        }
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        let r = (x * Wrapping(0x2545_f491_4f6c_dd1d)).0;
        // Multiply-shift: unbiased enough for n far below 2^32.
        (((r >> 32) * n as u64) >> 32) as usize
    })
}
