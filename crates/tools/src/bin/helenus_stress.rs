//! Stand-alone `helenus stress` until the CLI wires the subcommand.

/// The client's own CPU is taken from the server it measures on a small machine: with glibc's
/// malloc, allocation and free were ~15% of helenus-stress's CPU on closed-loop writes (perf),
/// the driver allocating per request; mimalloc's per-thread free lists make that a fraction.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(helenus_tools::stress_main(
        std::env::args().skip(1).collect(),
    ));
}
