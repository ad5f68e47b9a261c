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
use tokio::net::TcpStream;
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

    /// The runtime the next accepted connection moves to, the runtimes in turn; None when
    /// there are none (it stays on the accepting runtime).
    pub fn next_thread(&self) -> Option<Handle> {
        if self.handles.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.handles.get(i).cloned()
    }
}

/// An accepted socket on its way to the runtime that serves it.
pub(super) enum Placed {
    /// Served where it was accepted: registered with that runtime's reactor already.
    Here(TcpStream),
    /// Taken off the accepting runtime's reactor, to be registered with its thread's: left
    /// there, every read readiness would wake a worker here to wake the connection there.
    Moved(std::net::TcpStream),
}

impl Placed {
    /// Places `socket` for `thread` (None: the accepting runtime).
    pub(super) fn new(socket: TcpStream, thread: Option<&Handle>) -> std::io::Result<Placed> {
        match thread {
            None => Ok(Placed::Here(socket)),
            Some(_) => socket.into_std().map(Placed::Moved),
        }
    }

    /// The socket, on the runtime this is called from.
    pub(super) fn register(self) -> std::io::Result<TcpStream> {
        match self {
            Placed::Here(s) => Ok(s),
            Placed::Moved(s) => TcpStream::from_std(s),
        }
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
                threads.next_thread().unwrap().block_on(async {
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
    fn no_threads_means_the_accepting_runtime() {
        let threads = ConnectionThreads::start(0).unwrap();
        assert!(threads.next_thread().is_none());
    }

    #[test]
    fn a_socket_stays_registered_here_or_moves_to_its_thread() {
        let threads = ConnectionThreads::start(1).unwrap();
        let here = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let (thread, moved) = here.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let _a = TcpStream::connect(addr).await.unwrap();
            let (first, _) = listener.accept().await.unwrap();
            let _b = TcpStream::connect(addr).await.unwrap();
            let (second, _) = listener.accept().await.unwrap();
            let stayed = Placed::new(first, None).unwrap();
            assert!(matches!(stayed, Placed::Here(_)));
            assert!(stayed.register().is_ok());
            let thread = threads.next_thread().unwrap();
            (thread.clone(), Placed::new(second, Some(&thread)).unwrap())
        });
        assert!(matches!(moved, Placed::Moved(_)));
        let peer = thread.block_on(async move { moved.register().map(|s| s.peer_addr().is_ok()) });
        assert!(peer.unwrap());
    }
}
