//! Stand-alone `helenus stress` until the CLI wires the subcommand.
fn main() {
    std::process::exit(helenus_tools::stress_main(
        std::env::args().skip(1).collect(),
    ));
}
