//! Real-client check with the `scylla` Rust driver: token-aware routing, prepared statements,
//! paging, and that the driver's Murmur3 token for a key equals the server's `token(k)`.
//! Exits non-zero (with a message) on the first failed check; every step is bounded in time.

use std::time::Duration;

use futures::TryStreamExt;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::statement::unprepared::Statement;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const KS: &str = "helenus_clients_rust";
const ROWS: i32 = 1000;

fn check(cond: bool, what: &str) -> Res<()> {
    if cond {
        println!("ok   {what}");
        Ok(())
    } else {
        Err(format!("FAIL {what}").into())
    }
}

async fn run() -> Res<()> {
    let host = std::env::var("HELENUS_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("HELENUS_PORT").unwrap_or_else(|_| "9042".into());
    let policy = DefaultPolicy::builder().token_aware(true).build();
    let profile = ExecutionProfile::builder()
        .load_balancing_policy(policy)
        .request_timeout(Some(Duration::from_secs(20)))
        .build();
    let session: Session = SessionBuilder::new()
        .known_node(format!("{host}:{port}"))
        .connection_timeout(Duration::from_secs(10))
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await?;
    check(true, &format!("connected to {host}:{port}"))?;

    session
        .query_unpaged(format!("DROP KEYSPACE IF EXISTS {KS}"), ())
        .await?;
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE {KS} WITH replication = \
                 {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
            ),
            (),
        )
        .await?;
    session
        .query_unpaged(
            format!("CREATE TABLE {KS}.kv (k int PRIMARY KEY, v text, n bigint)"),
            (),
        )
        .await?;
    session.await_schema_agreement().await?;
    check(true, "created keyspace and table")?;

    let insert = session
        .prepare(format!("INSERT INTO {KS}.kv (k, v, n) VALUES (?, ?, ?)"))
        .await?;
    for k in 0..ROWS {
        session
            .execute_unpaged(&insert, (k, format!("v{k}"), i64::from(k) * 7))
            .await?;
    }
    check(true, &format!("prepared insert of {ROWS} rows"))?;

    let select = session
        .prepare(format!("SELECT k, v, n FROM {KS}.kv WHERE k = ?"))
        .await?;
    for k in [0, 1, 499, 999] {
        let res = session
            .execute_unpaged(&select, (k,))
            .await?
            .into_rows_result()?;
        let (rk, v, n): (i32, String, i64) = res.single_row()?;
        check(
            rk == k && v == format!("v{k}") && n == i64::from(k) * 7,
            &format!("prepared select k={k}"),
        )?;
    }
    let missing = session
        .execute_unpaged(&select, (ROWS + 5,))
        .await?
        .into_rows_result()?;
    check(
        missing.rows_num() == 0,
        "prepared select of absent key returns no row",
    )?;

    let mut paged = Statement::new(format!("SELECT k FROM {KS}.kv"));
    paged.set_page_size(100);
    let mut pages = 0usize;
    let mut paging_state = scylla::response::PagingState::start();
    let mut total = 0usize;
    loop {
        let (res, psr) = session
            .query_single_page(paged.clone(), (), paging_state)
            .await?;
        pages += 1;
        let rows = res.into_rows_result()?;
        if rows.rows_num() > 100 {
            return Err(format!(
                "FAIL page {pages} holds {} rows > page size 100",
                rows.rows_num()
            )
            .into());
        }
        total += rows.rows_num();
        match psr.into_paging_control_flow() {
            std::ops::ControlFlow::Break(()) => break,
            std::ops::ControlFlow::Continue(next) => paging_state = next,
        }
        if pages > 100 {
            return Err("FAIL paging did not terminate".into());
        }
    }
    check(
        total == ROWS as usize && pages >= 10,
        &format!("manual paging: {total} rows in {pages} pages"),
    )?;
    let mut it_stmt = Statement::new(format!("SELECT k FROM {KS}.kv"));
    it_stmt.set_page_size(100);
    let count = session
        .query_iter(it_stmt, ())
        .await?
        .rows_stream::<(i32,)>()?
        .try_fold(0usize, |acc, _| async move { Ok(acc + 1) })
        .await?;
    check(
        count == ROWS as usize,
        &format!("query_iter paging counted {count} rows"),
    )?;

    let token_q = session
        .prepare(format!("SELECT token(k) FROM {KS}.kv WHERE k = ?"))
        .await?;
    for k in [0, 1, 42, 777, 999] {
        let driver = insert
            .calculate_token(&(k, "x", 0i64))?
            .ok_or("driver computed no token")?
            .value();
        let res = session
            .execute_unpaged(&token_q, (k,))
            .await?
            .into_rows_result()?;
        let (server,): (i64,) = res.single_row()?;
        check(
            driver == server,
            &format!("token(k={k}): driver {driver} == server {server}"),
        )?;
    }
    // A text partition key exercises the byte-level Murmur3 path, not just 4-byte ints.
    session
        .query_unpaged(
            format!("CREATE TABLE {KS}.tk (k text PRIMARY KEY, v int)"),
            (),
        )
        .await?;
    session.await_schema_agreement().await?;
    let tins = session
        .prepare(format!("INSERT INTO {KS}.tk (k, v) VALUES (?, ?)"))
        .await?;
    let ttok = session
        .prepare(format!("SELECT token(k) FROM {KS}.tk WHERE k = ?"))
        .await?;
    // An empty partition key is rejected by Cassandra ("Key may not be empty"), so none here.
    for key in [
        "a",
        "helenus",
        "a-much-longer-key-than-sixteen-bytes-for-murmur3",
    ] {
        session.execute_unpaged(&tins, (key, 1)).await?;
        let driver = tins
            .calculate_token(&(key, 1))?
            .ok_or("driver computed no token")?
            .value();
        let (server,): (i64,) = session
            .execute_unpaged(&ttok, (key,))
            .await?
            .into_rows_result()?
            .single_row()?;
        check(
            driver == server,
            &format!("token('{key}') driver == server ({server})"),
        )?;
    }

    session
        .query_unpaged(format!("DROP KEYSPACE {KS}"), ())
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() {
    match tokio::time::timeout(Duration::from_secs(300), run()).await {
        Ok(Ok(())) => println!("rust suite: all checks passed"),
        Ok(Err(e)) => {
            eprintln!("rust suite: {e}");
            std::process::exit(1);
        }
        Err(_) => {
            eprintln!("rust suite: timed out after 300 s");
            std::process::exit(1);
        }
    }
}
