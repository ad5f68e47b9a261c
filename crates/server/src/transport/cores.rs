//! Connection threads (`native_transport_io_threads`, off by default): each client connection
//! lives on one of a few single-worker runtimes, chosen round robin at accept, instead of on the
//! node's shared work-stealing runtime.
//!
//! On the shared runtime a connection's reader, writer and waiting statements hop between the
//! workers: a hand-off wakes the idle one to steal the task, and the connection's state crosses
//! cores with it. Pinned, latte (one connection, 128 in flight, in-memory reads) measured 5.14-5.18
//! ms of server CPU per 1,000 reads against 5.97-5.99, 20% more reads a second, P99 1.34 -> 0.97
//! ms and 0.06 -> 0.003 context switches per read. But helenus-stress (64 client threads on one
//! connection) read 28% fewer rows a second (146k -> 105k, server at 0.6 of a core): its reads,
//! statements and writes then take turns on one core where the shared runtime overlapped the
//! writer with the next read, and a closed loop of 64 pays that in latency. So it stays an
//! option for many-connection, lightly pipelined loads. Each runtime is multi-threaded with one
//! worker, not current-thread, so `block_in_place` (paxos acceptors, a synchronous read) works
//! on it.

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::runtime::{Handle, Runtime};

/// The runtimes connections are spread over; owned by the server from start to stop.
pub struct ConnectionThreads {
    /// Taken only by `drop`.
    runtimes: Vec<Runtime>,
    handles: Vec<Handle>,
    next: AtomicUsize,
}

impl ConnectionThreads {
    /// `threads` runtimes of one worker each; 0 starts none (connections then run on the
    /// caller's runtime).
    pub fn start(threads: usize) -> std::io::Result<ConnectionThreads> {
        let runtimes = (0..threads)
            .map(|i| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name(format!("helenus-io-{i}"))
                    .enable_all()
                    .build()
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(ConnectionThreads {
            handles: runtimes.iter().map(|r| r.handle().clone()).collect(),
            runtimes,
            next: AtomicUsize::new(0),
        })
    }

    /// Where the next accepted connection runs: the runtimes in turn, or the current one when
    /// there are none.
    pub fn next_handle(&self) -> Handle {
        if self.handles.is_empty() {
            return Handle::current();
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.handles.get(i).cloned().unwrap_or_else(Handle::current)
    }
}

impl Drop for ConnectionThreads {
    /// Dropped the ordinary way a runtime blocks on its worker, which tokio refuses inside
    /// another runtime (where the server stops); connections still open are abandoned, after
    /// the drain gave their statements time to finish.
    fn drop(&mut self) {
        for rt in self.runtimes.drain(..) {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn connections_go_to_the_runtimes_in_turn_and_block_in_place_works_there() {
        let threads = ConnectionThreads::start(2).unwrap();
        let names: Vec<String> = (0..4)
            .map(|_| {
                threads.next_handle().block_on(async {
                    tokio::spawn(async {
                        // A paxos acceptor's synchronous apply does this on a connection thread.
                        tokio::task::block_in_place(|| {
                            tokio::runtime::Handle::current().block_on(async { 1 })
                        });
                        std::thread::current().name().unwrap_or("").to_string()
                    })
                    .await
                    .unwrap()
                })
            })
            .collect();
        assert_eq!(names[0], "helenus-io-0");
        assert_eq!(names[1], "helenus-io-1");
        assert_eq!(names[2], "helenus-io-0");
    }

    #[test]
    fn no_threads_means_the_current_runtime() {
        let threads = ConnectionThreads::start(0).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let flavor = rt.block_on(async { threads.next_handle().runtime_flavor() });
        assert_eq!(flavor, tokio::runtime::RuntimeFlavor::CurrentThread);
    }
}
