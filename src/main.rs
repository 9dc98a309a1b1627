//! The `studio-agents` binary: `cli::main` parses, dispatches and maps errors to exit codes
//! (DESIGN §2).

fn main() {
    std::process::exit(studio_agents::cli::main());
}
