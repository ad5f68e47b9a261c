//! `helenus-ceiling [ADDR:PORT]`: the protocol-ceiling test server (see `helenus_tools::ceiling`).
fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.3:9042".to_string());
    let addr: std::net::SocketAddr = match addr.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: bad address '{addr}': {e}");
            std::process::exit(2);
        }
    };
    let threads = std::env::var("CEILING_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(threads);
    helenus_tools::block_on_or_exit(builder, helenus_tools::ceiling::serve(addr));
}
