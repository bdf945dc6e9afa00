//! The random order of a select's cases: a per-thread xorshift generator.
//! Fairness needs only a cheap, well-mixed sequence, not a secure one.

/// Fills `order` with a uniformly random permutation of `0..order.len()`
/// (Fisher-Yates). Under loom the order is fixed: a model must replay the
/// same choices in every execution it explores.
///
/// One 64-bit draw serves several swaps: read as a fraction in `[0, 1)`,
/// multiplying it by `n` gives a choice below `n` (the integer part) and a
/// fraction for the next choice. Each draw serves choices whose ranges,
/// rounded up to powers of two, multiply to at most 2^32, so every fraction
/// keeps 32 bits or more and each choice is off uniform by less than
/// `n / 2^32`. A select of up to nine cases shuffles with one draw (one per
/// swap: 8.6 of 54 ns for a select over four cases that are not ready).
/// The budget counts bits, not the exact product of the ranges: dividing
/// it by each range took a 64-bit division per swap (35-88 cycles on Intel
/// cores before Ice Lake; within the noise on this AMD). The general
/// shuffle stays out of line: once a smaller yield phase changed LLVM's
/// budget, it was inlined three times into `select::run`, which grew by a
/// third (3380 -> 4479 bytes), and an uncontended select ran 4-6% slower
/// (4 alternating rounds). Two cases take a path of their own, inlined:
/// Go's `BenchmarkSelectUncontended` shape (a select over two channels and
/// a send) went from 500 to 410 instructions per operation (callgrind;
/// crossbeam-channel 412), 0.97-0.98 of the time, `select_contended` at
/// one thread 0.94 (2-core Intel Xeon, 4 alternating rounds); the rest of
/// its time is its seven locked instructions.
#[inline]
pub(crate) fn shuffled(order: &mut [usize]) {
    // Two cases, the commonest select with a choice: one bit decides,
    // inlined (a frame of its own saved six registers for it).
    #[cfg(not(loom))]
    if let [first, second] = order {
        *first = (next_u64() >> 63) as usize;
        *second = *first ^ 1;
        return;
    }
    shuffled_any(order);
}

/// [`shuffled`] for any number of cases.
#[inline(never)]
fn shuffled_any(order: &mut [usize]) {
    for (i, slot) in order.iter_mut().enumerate() {
        *slot = i;
    }
    #[cfg(not(loom))]
    {
        let mut fraction = 0u64;
        // How many more bits of range the current draw can serve.
        let mut budget = 0u32;
        for i in (1..order.len()).rev() {
            let n = i as u64 + 1;
            // log2 of `n` rounded up (`n >= 2`).
            let bits = u64::BITS - (n - 1).leading_zeros();
            if budget < bits {
                fraction = next_u64();
                budget = 32;
            }
            budget -= bits;
            let wide = u128::from(fraction) * u128::from(n);
            order.swap(i, (wide >> 64) as usize);
            fraction = wide as u64;
        }
    }
}

/// The thread's next 64 random bits (xorshift64*). Inlined whole into
/// [`shuffled`], thread-local access included: with the seeding in the
/// same closure, `LocalKey::with` stayed out of line and reached the
/// state through an indirect call (33 of the 101 instructions a
/// two-case shuffle took).
#[cfg(not(loom))]
#[inline(always)]
fn next_u64() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|state| {
        let mut x = state.get();
        if x == 0 {
            x = seed();
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// A thread's first state: its stack address hashed with std's random
/// keys (from the OS, once per thread), so distinct per thread and per
/// run, and never zero. (Not the wall clock: Miri's isolation refuses it,
/// which kept every select of two or more cases out of the Miri runs.)
#[cfg(not(loom))]
#[cold]
#[inline(never)]
fn seed() -> u64 {
    use std::hash::BuildHasher;
    let anchor = 0u8;
    let stack = std::hint::black_box(&anchor) as *const u8 as usize;
    std::collections::hash_map::RandomState::new().hash_one(stack) | 1
}

// (Not under Miri: statistics over a pure function, at Miri's speed.)
#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::shuffled;

    /// Every permutation of four cases comes up about equally often: 24
    /// permutations, 240 000 shuffles, each count within 5% of 10 000
    /// (a standard deviation is 98, so 5% is five of them).
    #[test]
    fn permutations_of_four_are_uniform() {
        let mut counts = std::collections::HashMap::new();
        let mut order = [0; 4];
        for _ in 0..240_000 {
            shuffled(&mut order);
            *counts.entry(order).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 24);
        for (perm, n) in counts {
            assert!((9_500..=10_500).contains(&n), "{perm:?} came {n} times");
        }
    }

    /// Two cases (their own path): each order about half the time, and
    /// never anything but a permutation. 100 000 shuffles, standard
    /// deviation 158.
    #[test]
    fn two_cases_split_evenly() {
        let mut order = [7; 2];
        let mut swapped = 0u32;
        for _ in 0..100_000 {
            shuffled(&mut order);
            match order {
                [0, 1] => {}
                [1, 0] => swapped += 1,
                other => panic!("{other:?} is not a permutation of two cases"),
            }
        }
        assert!((49_200..=50_800).contains(&swapped), "{swapped}");
    }

    /// One case: nothing to choose.
    #[test]
    fn one_case_stays() {
        let mut order = [5];
        shuffled(&mut order);
        assert_eq!(order, [0]);
    }

    /// With more cases than one draw serves, each position still takes
    /// every case about equally often.
    #[test]
    fn twenty_cases_spread_evenly() {
        let mut counts = [[0u32; 20]; 20];
        let mut order = [0; 20];
        for _ in 0..100_000 {
            shuffled(&mut order);
            for (position, &case) in order.iter().enumerate() {
                counts[position][case] += 1;
            }
        }
        // 5 000 expected per cell, standard deviation 69.
        for row in counts {
            for n in row {
                assert!((4_600..=5_400).contains(&n), "{n}");
            }
        }
    }
}
