//! The `select!` macro: parses crossbeam-style arms, binds each case on the
//! stack in source order, runs [`select::run`](super::run) and expands the
//! chosen arm's body inline (so `break`, `continue`, `return` and `?` act on
//! the enclosing code). No heap allocation: the cases and the scratch order
//! are arrays in the caller's frame.

/// Waits on several channel operations and runs the arm of the one that
/// completes; an expression whose value is that arm's.
///
/// ```text
/// select! {
///     recv(rx) -> msg => body,          // msg: Result<T, RecvError>
///     send(tx, value) -> res => body,   // res: Result<(), SendError<T>>
///     default => body,                  // optional: nothing was ready
///                                       // (`default() => body` too)
///     default(timeout) => body,         // or: nothing within `timeout`
/// }
/// ```
///
/// Channel operands may be handles or references to handles. Every operand
/// and every send value is evaluated exactly once, on entry, in source
/// order, whichever case is chosen; a `default(timeout)` after them. Ready
/// cases are chosen with equal probability. A send case that is not chosen
/// sends nothing: its value is dropped once the select has decided, before
/// the chosen arm's body runs. Every case is over by then, so the body may
/// reassign or move any operand (`rx = never()` to turn a case off, as Go
/// sets a channel to `nil`; `drop(tx)`). A case on a closed channel is ready
/// (with an error). Without a default arm, `select!` blocks until a case
/// completes. With `default(timeout)`, the timeout counts from when the
/// select starts to wait: a case ready at once completes without a clock
/// read.
///
/// ```
/// use scalechan::select;
/// use std::time::Duration;
///
/// let (tx, rx) = scalechan::unbounded();
/// let (quit_tx, quit_rx) = scalechan::bounded::<()>(0);
/// std::thread::spawn(move || {
///     for i in 0..3 {
///         tx.send(i).unwrap();
///     }
///     quit_tx.close();
/// });
/// let mut sum = 0;
/// loop {
///     select! {
///         recv(rx) -> msg => match msg {
///             Ok(n) => sum += n,
///             Err(_) => break, // closed and drained
///         },
///         recv(quit_rx) -> _ => {
///             // Take what is left, then stop.
///             sum += rx.try_iter().sum::<i32>();
///             break;
///         }
///         default(Duration::from_secs(10)) => panic!("stuck"),
///     }
/// }
/// assert_eq!(sum, 3);
/// ```
#[macro_export]
macro_rules! select {
    ($($arms:tt)*) => {
        $crate::__select_internal!(@parse [] [] $($arms)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __select_internal {
    // ------------------------------------------------------------- parsing
    // Accumulates `(recv rx res body)`, `(send tx value res body)` and one
    // default, then binds.
    (@parse [$($cases:tt)*] [$($default:tt)*]) => {
        $crate::__select_internal!(@bind [] [$($cases)*] [$($default)*])
    };

    (@parse [$($cases:tt)*] $default:tt
        recv($rx:expr $(,)?) -> $res:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($cases)* (recv ($rx) ($res) ($body))] $default $($rest)*)
    };
    (@parse [$($cases:tt)*] $default:tt
        recv($rx:expr $(,)?) -> $res:pat => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($cases)* (recv ($rx) ($res) ($body))] $default $($rest)*)
    };
    (@parse [$($cases:tt)*] $default:tt
        recv($rx:expr $(,)?) -> $res:pat => $body:expr, $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($cases)* (recv ($rx) ($res) ($body))] $default $($rest)*)
    };
    (@parse [$($cases:tt)*] $default:tt
        recv($rx:expr $(,)?) -> $res:pat => $body:expr) => {
        $crate::__select_internal!(@parse [$($cases)* (recv ($rx) ($res) ($body))] $default)
    };

    (@parse [$($cases:tt)*] $default:tt
        send($tx:expr, $value:expr $(,)?) -> $res:pat => $body:block, $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($cases)* (send ($tx) ($value) ($res) ($body))] $default $($rest)*)
    };
    (@parse [$($cases:tt)*] $default:tt
        send($tx:expr, $value:expr $(,)?) -> $res:pat => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($cases)* (send ($tx) ($value) ($res) ($body))] $default $($rest)*)
    };
    (@parse [$($cases:tt)*] $default:tt
        send($tx:expr, $value:expr $(,)?) -> $res:pat => $body:expr, $($rest:tt)*) => {
        $crate::__select_internal!(@parse [$($cases)* (send ($tx) ($value) ($res) ($body))] $default $($rest)*)
    };
    (@parse [$($cases:tt)*] $default:tt
        send($tx:expr, $value:expr $(,)?) -> $res:pat => $body:expr) => {
        $crate::__select_internal!(@parse [$($cases)* (send ($tx) ($value) ($res) ($body))] $default)
    };

    (@parse $cases:tt [] default $(())? => $body:block, $($rest:tt)*) => {
        $crate::__select_internal!(@parse $cases [(now) ($body)] $($rest)*)
    };
    (@parse $cases:tt [] default $(())? => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse $cases [(now) ($body)] $($rest)*)
    };
    (@parse $cases:tt [] default $(())? => $body:expr, $($rest:tt)*) => {
        $crate::__select_internal!(@parse $cases [(now) ($body)] $($rest)*)
    };
    (@parse $cases:tt [] default $(())? => $body:expr) => {
        $crate::__select_internal!(@parse $cases [(now) ($body)])
    };
    (@parse $cases:tt [] default($timeout:expr $(,)?) => $body:block, $($rest:tt)*) => {
        $crate::__select_internal!(@parse $cases [(after $timeout) ($body)] $($rest)*)
    };
    (@parse $cases:tt [] default($timeout:expr $(,)?) => $body:block $($rest:tt)*) => {
        $crate::__select_internal!(@parse $cases [(after $timeout) ($body)] $($rest)*)
    };
    (@parse $cases:tt [] default($timeout:expr $(,)?) => $body:expr, $($rest:tt)*) => {
        $crate::__select_internal!(@parse $cases [(after $timeout) ($body)] $($rest)*)
    };
    (@parse $cases:tt [] default($timeout:expr $(,)?) => $body:expr) => {
        $crate::__select_internal!(@parse $cases [(after $timeout) ($body)])
    };

    (@parse $cases:tt [$($default:tt)+] default $($rest:tt)*) => {
        ::core::compile_error!("select!: more than one `default` arm")
    };
    (@parse $cases:tt $default:tt $($rest:tt)+) => {
        ::core::compile_error!(
            "select!: expected `recv(rx) -> msg => body`, `send(tx, value) -> res => body`, \
             `default => body` or `default(timeout) => body`"
        )
    };

    // ------------------------------------------------------------- binding
    // A `match` on each operand, not a `let`: temporaries in it (crossbeam's
    // optional-case idiom `recv(rx.as_ref().unwrap_or(&never()))`) live to
    // the end of the match, so through the whole select.
    //
    // One case (these two rules come first): the plain operation
    // (`select::one`), with the same evaluation order (the operand, its
    // value, then the timeout).
    (@bind [] [(recv ($rx:expr) ($res:pat) ($body:expr))] $default:tt) => {
        match &$rx {
            rx => $crate::__select_internal!(@one_recv rx ($res) ($body) $default),
        }
    };
    (@bind [] [(send ($tx:expr) ($value:expr) ($res:pat) ($body:expr))] $default:tt) => {
        match &$tx {
            tx => $crate::__select_internal!(@one_send tx ($value) ($res) ($body) $default),
        }
    };
    // Several cases: one nested block per case, in source order. Each
    // `case` below is a distinct binding (macro hygiene), carried on to the
    // run by its token.
    (@bind [$($bound:tt)*] [(recv ($rx:expr) $res:tt $body:tt) $($rest:tt)*] $default:tt) => {
        match &$rx {
            rx => {
                let mut case = $crate::select::RecvCase::new(rx);
                $crate::__select_internal!(@bind [$($bound)* (case $res $body)] [$($rest)*] $default)
            }
        }
    };
    (@bind [$($bound:tt)*] [(send ($tx:expr) ($value:expr) $res:tt $body:tt) $($rest:tt)*] $default:tt) => {
        match &$tx {
            tx => {
                let mut case = $crate::select::SendCase::new(tx, $value);
                $crate::__select_internal!(@bind [$($bound)* (case $res $body)] [$($rest)*] $default)
            }
        }
    };
    (@bind [] [] $default:tt) => {{
        let (block, limit) = $crate::__select_internal!(@mode $default);
        let index = $crate::select::run(&mut [], &mut [], block, limit);
        let _ = index;
        $crate::__select_internal!(@dispatch index () [] [] $default)
    }};
    (@bind [$(($case:ident $res:tt $body:tt))+] [] $default:tt) => {{
        let (block, limit) = $crate::__select_internal!(@mode $default);
        let mut order = [$({ let _ = &$case; 0usize }),+];
        let index = {
            let mut cases = [$(&mut $case as &mut dyn $crate::select::Case),+];
            $crate::select::run(&mut cases, &mut order, block, limit)
        };
        $crate::__select_internal!(@dispatch index (0) [$($case)+] [$(($case $res $body))+] $default)
    }};

    (@one_recv $rx:ident ($res:pat) ($body:expr) []) => {{
        let $res = $crate::select::one::recv($rx);
        $body
    }};
    (@one_recv $rx:ident $res:tt $body:tt [(now) $default:tt]) => {
        $crate::__select_internal!(@one_received ($crate::select::one::try_recv($rx)) $res $body $default)
    };
    (@one_recv $rx:ident $res:tt $body:tt [(after $timeout:expr) $default:tt]) => {
        $crate::__select_internal!(
            @one_received ($crate::select::one::recv_timeout($rx, $timeout)) $res $body $default
        )
    };
    // A receive with a default: the case's result, or `None` for the
    // default arm.
    (@one_received ($outcome:expr) ($res:pat) ($body:expr) ($default:expr)) => {
        match $outcome {
            ::core::option::Option::Some(result) => {
                let $res = result;
                $body
            }
            ::core::option::Option::None => $default,
        }
    };
    (@one_send $tx:ident ($value:expr) ($res:pat) ($body:expr) []) => {{
        let $res = $crate::select::one::send($tx, $value);
        $body
    }};
    (@one_send $tx:ident ($value:expr) $res:tt $body:tt [(now) $default:tt]) => {
        $crate::__select_internal!(
            @one_sent ($crate::select::one::try_send($tx, $value)) $res $body $default
        )
    };
    (@one_send $tx:ident ($value:expr) $res:tt $body:tt [(after $timeout:expr) $default:tt]) => {
        $crate::__select_internal!(
            @one_sent ($crate::select::one::send_timeout($tx, $value, $timeout)) $res $body $default
        )
    };
    // A send with a default: the case's result, or the value back for the
    // default arm. The value the channel did not take is dropped before the
    // default arm's body, as in a select of many.
    (@one_sent ($outcome:expr) ($res:pat) ($body:expr) ($default:expr)) => {
        match $outcome {
            ::core::result::Result::Ok(result) => {
                let $res = result;
                $body
            }
            ::core::result::Result::Err(unsent) => {
                ::core::mem::drop(unsent);
                $default
            }
        }
    };

    (@mode []) => {
        (true, $crate::select::Limit::Never)
    };
    (@mode [(now) $body:tt]) => {
        (false, $crate::select::Limit::Never)
    };
    (@mode [(after $timeout:expr) $body:tt]) => {
        (true, $crate::select::Limit::After($timeout))
    };

    // ------------------------------------------------------------ dispatch
    // `[$($all)*]`: every case, dropped (in source order) before the body
    // runs, which ends their borrows of the operands: a body may then
    // reassign or move any of them, as crossbeam-channel's allow.
    (@dispatch $index:ident ($($n:tt)*) [$($all:ident)*] [($case:ident ($res:pat) ($body:expr)) $($rest:tt)*] $default:tt) => {
        if $index == ::core::option::Option::Some($($n)*) {
            let result = $case.take_result();
            $(::core::mem::drop($all);)*
            let $res = result;
            $body
        } else {
            $crate::__select_internal!(@dispatch $index ($($n)* + 1) [$($all)*] [$($rest)*] $default)
        }
    };
    (@dispatch $index:ident $n:tt [$($all:ident)*] [] [$when:tt ($body:expr)]) => {{
        $(::core::mem::drop($all);)*
        $body
    }};
    (@dispatch $index:ident $n:tt [$($all:ident)*] [] []) => {
        ::core::unreachable!("select!: no case completed")
    };
}
