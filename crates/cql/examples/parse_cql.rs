//! Parses each argument as a CQL statement and prints the tree or the error:
//! `cargo run -p helenus-cql --example parse_cql -- "SELECT * FROM t"`.

fn main() {
    for cql in std::env::args().skip(1) {
        match helenus_cql::parse(&cql) {
            Ok(p) => println!("{:#?}\nbind_names: {:?}", p.statement, p.bind_names),
            Err(e) => println!("error: {e}"),
        }
    }
}
