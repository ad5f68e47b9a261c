//! `helenus-scan HOST:PORT FETCH_SIZE CQL [REPEAT]`: times a paged full read of `CQL` (one page
//! at a time, as a driver's pager does without prefetching), decoding every column of each row,
//! and prints one JSON line per repetition: rows, seconds, the client's own CPU seconds, and the
//! sum of a bigint first column. bench/scan.sh uses it beside the Python driver: a client whose CPU per row is
//! small, so a scan's wall time is mostly the server's.
use std::ops::ControlFlow;
use std::time::Instant;

use helenus_tools::stats::process_cpu_time;
use scylla::client::session_builder::SessionBuilder;
use scylla::response::PagingState;
use scylla::statement::unprepared::Statement;
use scylla::value::{CqlValue, Row};

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(addr), Some(fetch), Some(cql)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: helenus-scan HOST:PORT FETCH_SIZE CQL [REPEAT]");
        std::process::exit(2);
    };
    let parsed = (
        fetch.parse::<i32>(),
        args.get(4).map_or(Ok(1), |r| r.parse::<u32>()),
    );
    let (Ok(fetch), Ok(repeat)) = parsed else {
        eprintln!("error: FETCH_SIZE and REPEAT are numbers");
        std::process::exit(2);
    };
    helenus_tools::block_on_or_exit(
        tokio::runtime::Builder::new_current_thread(),
        run(addr, fetch, cql, repeat),
    );
}

async fn run(addr: &str, fetch: i32, cql: &str, repeat: u32) -> Result<(), Failure> {
    let session = SessionBuilder::new()
        .known_node(addr)
        .fetch_schema_metadata(false)
        .build()
        .await?;
    let mut statement = Statement::new(cql);
    statement.set_page_size(fetch);
    statement.set_request_timeout(Some(std::time::Duration::from_secs(120)));
    for _ in 0..repeat {
        let (t0, c0) = (Instant::now(), process_cpu_time());
        let (rows, checksum) = scan(&session, &statement).await?;
        let seconds = t0.elapsed().as_secs_f64();
        let cpu = process_cpu_time().saturating_sub(c0).as_secs_f64();
        println!(
            "{}",
            serde_json::json!({
                "rows": rows, "seconds": seconds, "client_cpu_s": cpu, "checksum": checksum,
            })
        );
    }
    Ok(())
}

/// Reads every page; returns the rows read and the wrapping sum of their first column (when a
/// bigint).
async fn scan(
    session: &scylla::client::session::Session,
    statement: &Statement,
) -> Result<(u64, i64), Failure> {
    let (mut rows, mut checksum) = (0u64, 0i64);
    let mut paging = PagingState::start();
    loop {
        let (result, next) = session
            .query_single_page(statement.clone(), &[], paging)
            .await?;
        let page = result.into_rows_result()?;
        // Rows of any columns (a SELECT * too); the checksum sums a bigint first column.
        for row in page.rows::<Row>()? {
            if let Some(Some(CqlValue::BigInt(v))) = row?.columns.first() {
                checksum = checksum.wrapping_add(*v);
            }
            rows += 1;
        }
        match next.into_paging_control_flow() {
            ControlFlow::Continue(state) => paging = state,
            ControlFlow::Break(()) => return Ok((rows, checksum)),
        }
    }
}
