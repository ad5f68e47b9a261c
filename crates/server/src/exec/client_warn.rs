//! Client warnings (the protocol's WARNING flag, v4+): messages gathered while one request runs
//! and sent with its response, as Cassandra's `ClientWarn` does. A task-local rather than a
//! parameter, because the checks that warn sit deep in statement execution.

use std::cell::RefCell;
use std::future::Future;

/// Bound on warnings per response: a statement must not grow a response without limit.
const MAX_WARNINGS_PER_REQUEST: usize = 32;

tokio::task_local! {
    static WARNINGS: RefCell<Vec<String>>;
}

/// Adds a warning to the response of the request being run (ignored outside one).
pub fn warn(message: String) {
    let _ = WARNINGS.try_with(|w| {
        let mut w = w.borrow_mut();
        if w.len() < MAX_WARNINGS_PER_REQUEST {
            w.push(message);
        }
    });
}

/// Runs `request`, returning its output and the warnings it raised.
pub async fn collecting<F: Future>(request: F) -> (F::Output, Vec<String>) {
    WARNINGS
        .scope(RefCell::new(Vec::new()), async {
            let out = request.await;
            let warnings = WARNINGS
                .try_with(|w| std::mem::take(&mut *w.borrow_mut()))
                .unwrap_or_default();
            (out, warnings)
        })
        .await
}

/// A byte count as Cassandra's `FBUtilities.prettyPrintMemory` writes it (`6.200KiB`, `512B`).
pub fn pretty_bytes(size: u64) -> String {
    const PREFIXES: [char; 6] = ['K', 'M', 'G', 'T', 'P', 'E'];
    let magnitude = if size == 0 {
        0
    } else {
        (63 - size.leading_zeros()) / 10
    };
    match magnitude
        .checked_sub(1)
        .and_then(|i| PREFIXES.get(i as usize))
    {
        None => format!("{size}B"),
        Some(p) => format!(
            "{:.3}{p}iB",
            size as f64 / (1u64 << (10 * magnitude)) as f64
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_bytes_matches_cassandra() {
        assert_eq!(pretty_bytes(0), "0B");
        assert_eq!(pretty_bytes(1023), "1023B");
        assert_eq!(pretty_bytes(1024), "1.000KiB");
        assert_eq!(pretty_bytes(6349), "6.200KiB");
        assert_eq!(pretty_bytes(50 * 1024 * 1024), "50.000MiB");
    }

    #[tokio::test]
    async fn warnings_reach_only_their_own_request() {
        let (out, w) = collecting(async {
            warn("first".into());
            warn("second".into());
            7
        })
        .await;
        assert_eq!(out, 7);
        assert_eq!(w, vec!["first".to_string(), "second".to_string()]);
        let ((), w) = collecting(async {}).await;
        assert!(w.is_empty());
        warn("outside any request".into());
    }

    #[tokio::test]
    async fn warnings_are_bounded() {
        let ((), w) = collecting(async {
            for i in 0..1000 {
                warn(format!("w{i}"));
            }
        })
        .await;
        assert_eq!(w.len(), MAX_WARNINGS_PER_REQUEST);
    }
}
